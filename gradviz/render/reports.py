"""What the analyses' reports look like: the marks and labels each draws on its graph, a
diff's summary, table and one-page HTML, the health bands' edge widths and colours.

The reports themselves (``gradviz.analysis``) hold facts only; the public classes
(``gradviz.reports``) draw them through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import Unpack

from gradviz.analysis.diff import RecordingDiff, ratio_text
from gradviz.analysis.health import GradientHealth
from gradviz.analysis.inplace import InplaceReport
from gradviz.analysis.nograd import NoGradReport
from gradviz.escape import html_text, json_for_script
from gradviz.render.export import graph_dot, graph_svg
from gradviz.render.options import RenderKeywords
from gradviz.render.theme import Theme, get_theme

__all__ = [
    "diff_changes_html",
    "diff_dot",
    "diff_edge_labels",
    "diff_options",
    "diff_page",
    "diff_summary_html",
    "diff_svg",
    "health_edge_styles",
    "inplace_options",
    "nograd_options",
]


# -- a diff of two recordings --------------------------------------------------------------
def diff_edge_labels(diff: RecordingDiff) -> dict[str, str]:
    """Each edge leaving a matched node whose gradient changed: '×ratio'."""
    labels: dict[str, str] = {}
    for change in diff.differing:
        ratio = change.ratio
        text = "changed" if ratio is None else f"×{ratio_text(ratio, 3)}"
        for edge in diff.union.out_edges(change.node_a):
            labels[edge.key] = text
    return labels


def diff_options(diff: RecordingDiff, options: Mapping[str, Any]) -> dict[str, Any]:
    """Render options for the union: unmatched nodes marked, changed gradients labelled."""
    chosen = dict(options)
    chosen["marks"] = tuple(chosen.get("marks", ())) + diff.marks()
    chosen.setdefault("edge_labels", diff_edge_labels(diff))
    return chosen


def diff_dot(diff: RecordingDiff, **options: Unpack[RenderKeywords]) -> str:
    return graph_dot(diff.union, **diff_options(diff, options))


def diff_svg(diff: RecordingDiff, **options: Unpack[RenderKeywords]) -> str:
    """The union on one layout: unmatched nodes marked, changed gradients labelled."""
    return graph_svg(diff.union, **diff_options(diff, options))


def diff_summary_html(diff: RecordingDiff) -> str:
    """The summary as a paragraph (every line escaped)."""
    lines = "<br>".join(html_text(line, None) for line in diff.summary_text().split("\n"))
    return f'<p class="gv-diff-summary">{lines}</p>\n'


def diff_changes_html(diff: RecordingDiff) -> str:
    """The table of per-node changes, and the changes as JSON for scripts and tests."""
    rows = "".join(
        f"<tr><td>{html_text(c.type_name, None)}</td><td>{html_text(c.node_a)}</td>"
        f"<td>{'' if c.step_a is None else c.step_a}</td>"
        f"<td>{ratio_text(c.ratio)}</td>"
        f"<td>{'same' if c.same else 'differs'}</td></tr>"
        for c in diff.changes
    )
    data = json_for_script(diff.to_dict())
    return (
        '<table class="gv-diff-table"><tr><th>node</th><th>id in A</th><th>step in A</th>'
        f"<th>‖B‖/‖A‖</th><th></th></tr>{rows}</table>\n"
        f'<script type="application/json" class="gv-diff-data">{data}</script>\n'
    )


def diff_page(
    diff: RecordingDiff, title: str = "gradviz diff", **options: Unpack[RenderKeywords]
) -> str:
    """One offline page: the union drawing and the table of changes (no script)."""
    drawing = diff_svg(diff, **options)
    drawing = drawing[drawing.find("<svg") :]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">\n"
        f"<title>{html_text(title, None)}</title>\n"
        "<style>body{font:14px sans-serif;margin:12px}td,th{padding:2px 8px;"
        "text-align:left}</style>\n</head>\n<body>\n"
        f'<h1 style="font-size:16px">{html_text(title, None)}</h1>\n'
        f"{diff_summary_html(diff)}"
        f'<div class="gv-diff-graph">{drawing}</div>\n'
        f"{diff_changes_html(diff)}"
        "</body>\n</html>\n"
    )


# -- the in-place explanation and why-no-grad ----------------------------------------------
def inplace_options(report: InplaceReport, options: Mapping[str, Any]) -> dict[str, Any]:
    """The watched combined view with the node, the tensor and the in-place op marked."""
    chosen = dict(options)
    chosen.setdefault("view", "combined")
    chosen["marks"] = report.marks()
    return chosen


def nograd_options(report: NoGradReport, options: Mapping[str, Any]) -> dict[str, Any]:
    """The graph with the cause marked in the theme's highlight style (the combined view
    under ``watch()``)."""
    chosen = dict(options)
    if report.graph.forward is not None:
        chosen.setdefault("view", "combined")
    chosen["marks"] = tuple(chosen.get("marks", ())) + report.marks()
    return chosen


# -- gradient health -----------------------------------------------------------------------
def health_edge_styles(
    health: GradientHealth, theme: Theme | str = "default"
) -> dict[str, tuple[float, str]]:
    """Edge key -> (pen width, colour): width grows with log10‖g‖ over this
    recording's range; vanishing and zero in the theme's node colour, exploding and
    non-finite in its highlight colour."""
    chosen = get_theme(theme) if isinstance(theme, str) else theme
    logs = [e.log10 for e in health.edges.values() if e.log10 is not None]
    low, high = (min(logs), max(logs)) if logs else (0.0, 0.0)
    colours = {
        "vanishing": chosen.node.border,
        "zero": chosen.node.border,
        "exploding": chosen.step.active_border,
        "nonfinite": chosen.step.active_border,
    }
    styles = {}
    for key, edge in health.edges.items():
        if edge.log10 is None or high == low:
            width = 0.6 if edge.band in ("zero", "vanishing") else 2.0
        else:
            width = 0.6 + 4.4 * (edge.log10 - low) / (high - low)
        styles[key] = (round(width, 2), colours.get(edge.band, chosen.edge))
    return styles
