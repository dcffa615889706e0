"""Drawing: graphs to DOT (``dot``, ``watched``), render options, themes, folding, the
layered layout for big graphs, ``export`` (a graph as a file's content, by suffix),
``reports`` (what the analyses' reports look like), ``raster`` (PNG and PDF from the SVG)
and ``backend``, the one module that runs Graphviz (DOT text in, bytes out; it never sees
a Graph). Nothing here writes a file (``gradviz.export`` does).

May import: ``gradviz.model``, ``gradviz.analysis``, ``gradviz.explain``,
``gradviz.errors``, ``gradviz.escape``. Never torch, never ``gradviz.capture``.
"""
