"""Capture: ``trace`` walks ``grad_fn.next_functions``, ``record`` hooks every node during
the real backward, ``watch`` sees the forward pass; ``order`` predicts the engine's order.
Every private torch API is in ``_autograd``. Returns plain ``gradviz.model`` objects; the
layer above (``gradviz.objects``) runs ``gradviz.analysis`` on them.

May import: ``gradviz.model``, ``gradviz.errors``, ``gradviz.escape``.
"""
