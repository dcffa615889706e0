"""Front ends of the replay: the payload (plain JSON for the front end in ``frontend/``), the
offline page, the anywidget ``Stepper`` and the notebook display.

May import: ``gradviz.replay`` and everything below it, and ``gradviz.progress``.
Only ``widget`` loads anywidget.
"""
