"""Drawing: graphs to DOT (``dot``, ``watched``), render options, themes, folding, the
layered layout for big graphs, file export (written by ``gradviz.atomic``), ``raster`` (PNG
and PDF from the SVG) and ``backend``, the one module that runs Graphviz (DOT text in, bytes
out; it never sees a Graph).

May import: ``gradviz.model``, ``gradviz.errors``, ``gradviz.escape``, ``gradviz.atomic``.
Never torch.
"""
