"""Narration: what each backward step means, as the chain rule with the recorded numbers.

``text`` (values as text), ``terms`` (the explanation as data), ``formulas`` (one table per
op family), ``symbols`` (names), ``steps`` (assembly). May import: ``gradviz.model``,
``gradviz.analysis``, ``gradviz.capture._autograd``, ``gradviz.escape``.
"""
