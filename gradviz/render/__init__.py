"""Drawing: graphs to DOT (``dot``, ``watched``), render options, themes, folding, the
layered layout for big graphs, file export, and ``backend``, the one module that runs
Graphviz (DOT text in, bytes out; it never sees a Graph).

May import: ``gradviz.model``, ``gradviz.errors``, ``gradviz.escape``. Never torch.
"""
