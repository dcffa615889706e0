"""Teaching material: the built-in lessons and the gallery (``make demo``).

May import: ``gradviz.objects`` and everything below it.
"""
