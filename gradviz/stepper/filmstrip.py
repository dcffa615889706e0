"""The film strip of a training run as one offline page: per-module gradient norms over the
training steps (log scale), the loss, the marks (first non-finite value, vanishing and
exploding onsets) and a slider over the training steps that shows the values at that step.

The page carries its own small script (``frontend/src/filmstrip.js``, bundled into
``assets/filmstrip.js``) and the run as JSON; it loads nothing. The backward graph
recoloured per step is not drawn here yet.
"""

from __future__ import annotations

import html
import math
from typing import Any

from gradviz.model.training import EXPLODING_ABOVE, VANISHING_BELOW, TrainingRun
from gradviz.stepper.page import asset_text, json_for_script

__all__ = ["filmstrip_data", "filmstrip_html"]

_CSS = """
body{font:14px system-ui,sans-serif;margin:16px;color:#222;background:#fff}
.gv-strip h1{font-size:18px;margin:0 0 8px}
.gv-strip tr.gv-controls td{position:sticky;top:0;background:#fff;padding:6px 8px;z-index:1}
.gv-strip .gv-readout{font-family:ui-monospace,monospace;white-space:nowrap}
.gv-strip table{border-collapse:collapse}
.gv-strip td{padding:2px 8px;vertical-align:middle}
.gv-strip td.gv-name{font-family:ui-monospace,monospace;max-width:320px;overflow:hidden;
 text-overflow:ellipsis;white-space:nowrap}
.gv-strip td.gv-value{font-family:ui-monospace,monospace;text-align:right;min-width:90px}
.gv-strip svg .gv-line{fill:none;stroke:#3465a4;stroke-width:1.5}
.gv-strip svg .gv-loss{stroke:#4e9a06}
.gv-strip svg .gv-cursor{stroke:#cc0000;stroke-width:1}
.gv-strip svg .gv-mark-nonfinite{stroke:#a40000;stroke-width:2;stroke-dasharray:3 2}
.gv-strip svg .gv-mark-vanishing{stroke:#75507b;stroke-width:2}
.gv-strip svg .gv-mark-exploding{stroke:#ce5c00;stroke-width:2}
.gv-strip svg .gv-bad{fill:#a40000}
.gv-strip .gv-legend span{margin-right:14px}
.gv-strip .gv-notes{color:#555}
"""


def filmstrip_data(
    run: TrainingRun,
    vanishing_below: float = VANISHING_BELOW,
    exploding_above: float = EXPLODING_ABOVE,
) -> dict[str, Any]:
    """What the page draws, as JSON-ready data (non-finite numbers as strings)."""
    data = run.to_dict()
    vanishing = run.vanishing(vanishing_below)
    exploding = run.exploding(exploding_above)
    steps = [row["step"] for row in data["steps"]]
    modules = run.module_norms()
    return {
        "steps": steps,
        "loss": [row["loss"] for row in data["steps"]],
        "lr": [row["lr"][0] if row["lr"] else None for row in data["steps"]],
        "modules": [
            {"name": name or "(top module)", "norms": _floats(norms)}
            for name, norms in modules.items()
        ],
        "nonfinite": data["first_nonfinite"],
        "vanishing": {k or "(top module)": v.step for k, v in vanishing.items()},
        "exploding": {k or "(top module)": v.step for k, v in exploding.items()},
        "bands": [vanishing_below, exploding_above],
        "recorded": data["recorded_steps"],
        "notes": data["notes"],
    }


def _floats(values: list[float | None]) -> list[float | str | None]:
    out: list[float | str | None] = []
    for value in values:
        if value is None or math.isfinite(value):
            out.append(value)
        else:
            out.append("NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity")
    return out


def filmstrip_html(
    run: TrainingRun,
    title: str = "gradviz training",
    vanishing_below: float = VANISHING_BELOW,
    exploding_above: float = EXPLODING_ABOVE,
) -> str:
    """The whole page, self-contained; the marks use the two thresholds."""
    payload = json_for_script(filmstrip_data(run, vanishing_below, exploding_above))
    script = asset_text("filmstrip.js").replace("</", "<\\/")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f'<div class="gv-strip"><h1>{html.escape(title)}</h1></div>'
        f'<script type="application/json" class="gv-strip-data">{payload}</script>'
        f"<script>{script}</script></body></html>\n"
    )
