"""What every new recording is checked for, once its backward pass has finished.

Capture builds the plain recording and knows nothing of its meaning; the public capture
functions (``gradviz.objects``) hand it here: the flow check (``flow``: where a user's hook
changed a gradient) and where NaN/Inf began (``nonfinite``). A backward that failed because
a tensor was changed in place gets the in-place story added to its message.
"""

from __future__ import annotations

from gradviz.analysis.flow import check_flow
from gradviz.analysis.inplace import explain_in_message
from gradviz.analysis.nonfinite import find_origins
from gradviz.capture._own_ops import gc_paused, own_ops
from gradviz.model.recording import Recording

__all__ = ["analyse_failure", "analyse_recording"]


def analyse_recording(recording: Recording) -> None:
    """Mark the recording's steps: hook changes and non-finite origins (in place). Their
    tensor ops are gradviz's own (a ``watch()`` around them does not record them), and the
    collector waits, as during the capture (many small objects, few freed)."""
    with own_ops(), gc_paused():
        check_flow(recording)
        find_origins(recording)


def analyse_failure(failed: Exception) -> None:
    """A failed backward's partial recording is analysed like a finished one's, and an
    in-place change that caused it is explained in its message."""
    recording = getattr(failed, "recording", None)
    if isinstance(recording, Recording):
        analyse_recording(recording)
    explain_in_message(failed)
