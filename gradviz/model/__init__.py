"""Plain data: the traced graph, the watched forward pass, the recording, and the shared
vocabulary (``values``: Role, Summary, Scalar, format_number).

Knows nothing of drawing, capture or analysis. May import: ``gradviz.errors``,
``gradviz.escape`` and itself (torch only in ``summarize`` and ``recording``).
"""
