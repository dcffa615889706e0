"""What a graph or a recording means: the engine's predicted order, the flow check, the
steps where NaN/Inf began, and the in-place explainer.

May import: ``gradviz.model``, ``gradviz.render`` (the in-place report draws its marks),
``gradviz.errors``, ``gradviz.escape``.
"""
