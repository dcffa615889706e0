"""Replay: frames of a recording (forward frames, seed, backward steps), module views,
the schedule the stepper plays, and the step styles that restyle one layout per step.

May import: ``gradviz.model``, ``gradviz.analysis``, ``gradviz.explain``,
``gradviz.render``, ``gradviz.errors``, ``gradviz.escape``; not ``gradviz.capture``.
"""
