"""Export: every file gradviz writes, through one table from suffix to writer
(``files.WRITERS``) and one door (``files.save``, ``files.write_file``), each written whole
or not at all (``gradviz.atomic``); ``keywords``: what each format takes besides the render
options.

May import: every layer below the public API (``gradviz.model`` up to ``gradviz.stepper``),
``gradviz.errors``, ``gradviz.escape``, ``gradviz.atomic``.
"""
