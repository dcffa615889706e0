"""Capture: ``trace`` walks ``grad_fn.next_functions``, ``record`` hooks every node during
the real backward, ``watch`` sees the forward pass. Every private torch API is in
``_autograd``. Returns plain ``gradviz.model`` objects; ``record`` runs ``gradviz.analysis``.

May import: ``gradviz.model``, ``gradviz.analysis``, ``gradviz.errors``, ``gradviz.escape``.
"""
