"""``python -m gradviz``: the same as the ``gradviz`` command."""

import sys

from gradviz.cli import main

sys.exit(main())
