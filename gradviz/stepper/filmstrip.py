"""The film strip of a training run as one offline page: per-module gradient norms over the
training steps (log scale), the loss, the marks (first non-finite value, vanishing and
exploding onsets), a slider over the training steps, and the backward graph drawn once and
recoloured by the chosen step's gradient norms (``filmlayout``).

The page carries its own small script (``frontend/src/filmstrip.js``, bundled into
``assets/filmstrip.js``) and the run as JSON; it loads nothing. A mark or a kept step whose
full recording was kept opens that step's replay: a sibling page written by the same save
(``replays``: step -> file name), or, in the widget, the replay embedded.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

from gradviz.model.training import EXPLODING_ABOVE, VANISHING_BELOW, TrainingRun
from gradviz.stepper.filmlayout import BINS, layout_data
from gradviz.stepper.page import asset_text, content_security_policy, json_for_script

__all__ = ["filmstrip_data", "filmstrip_html"]


def filmstrip_data(
    run: TrainingRun,
    vanishing_below: float = VANISHING_BELOW,
    exploding_above: float = EXPLODING_ABOVE,
    replays: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """What the page draws, as JSON-ready data (non-finite numbers as strings);
    ``replays`` maps a recorded step to the page that replays it."""
    data = run.to_dict()
    vanishing = run.vanishing(vanishing_below)
    exploding = run.exploding(exploding_above)
    steps = [row["step"] for row in data["steps"]]
    modules = run.module_norms()
    return {
        "params": [{"name": name, "norms": _floats(run.grad_norm(name))} for name in run.params],
        "layout": layout_data(run, list(modules)),
        "scale": {"low": vanishing_below, "high": exploding_above, "bins": BINS},
        "edges": data["edge_norms"],
        "replays": {str(step): href for step, href in sorted((replays or {}).items())},
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
    replays: Mapping[int, str] | None = None,
) -> str:
    """The whole page, self-contained; the marks and the colours use the two thresholds;
    ``replays``: the sibling replay page of each recorded step (relative links)."""
    payload = json_for_script(filmstrip_data(run, vanishing_below, exploding_above, replays))
    script = asset_text("filmstrip.js").replace("</", "<\\/")
    css = asset_text("filmstrip.css")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" '
        f'content="{content_security_policy(script)}">'
        f"<title>{html.escape(title)}</title><style>{css}</style></head>"
        '<body class="gv-strip-page">'
        f'<div class="gv-strip"><h1>{html.escape(title)}</h1></div>'
        f'<script type="application/json" class="gv-strip-data">{payload}</script>'
        f"<script>{script}</script></body></html>\n"
    )
