"""Narration: what each backward step means, as the chain rule with the recorded numbers.

``text`` (values as text), ``terms`` (the explanation as data), ``formulas`` (one table per
op family), ``symbols`` (names), ``steps`` (assembly), ``nograd`` (why a ``.grad`` is None,
from a graph and facts the caller captured). May import: ``gradviz.model``,
``gradviz.capture`` (never its runners: trace, record, watch), ``gradviz.analysis``,
``gradviz.errors``, ``gradviz.escape``.
"""
