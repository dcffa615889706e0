"""What a graph or a recording means, as facts: the flow check, the steps where NaN/Inf
began, the in-place explainer, why-no-grad, gradient health, memory and a diff of two
recordings; ``recorded`` runs the checks every new recording gets. Nothing here draws
(``gradviz.render.reports`` does) or runs a capture (the public API runs the analyses on
what capture made).

May import: ``gradviz.model``, ``gradviz.capture`` (its plain data and engine facts: the
predicted order, ``own_ops``), ``gradviz.errors``, ``gradviz.escape``.
"""
