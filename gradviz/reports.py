"""The analyses' reports as the public API gives them: the facts of ``gradviz.analysis``
that draw themselves (``gradviz.render.reports``) and save like every other object
(``gradviz.export``: ``save(path, **options) -> Path``).

``gradviz.objects`` hands them out; each class is registered (``gradviz.model.public``), so
the analyses build the public report directly, as capture builds ``trace``'s graphs.
"""

from __future__ import annotations

from pathlib import Path

from typing_extensions import Unpack

from gradviz.analysis import diff as _diff
from gradviz.analysis import health as _health
from gradviz.analysis import inplace as _inplace
from gradviz.analysis import nograd as _nograd
from gradviz.export import files
from gradviz.export.keywords import PageKeywords, SaveKeywords
from gradviz.model.public import register_public
from gradviz.render import reports as _draw
from gradviz.render.export import graph_dot, graph_svg
from gradviz.render.options import RenderKeywords
from gradviz.render.picture import Picture
from gradviz.render.theme import Theme
from gradviz.stepper.diffpage import diff_html

__all__ = ["GradientHealth", "InplaceReport", "NoGradReport", "RecordingDiff"]


@register_public
class RecordingDiff(_diff.RecordingDiff):
    """A ``RecordingDiff`` that draws itself; its page steps: ``html()`` and
    ``save("diff.html")`` replay recording A on the union layout with both runs' gradients
    per node, the nodes found in one run only marked, and a "First difference" control
    (``gradviz.stepper.diffpage``)."""

    def edge_labels(self) -> dict[str, str]:
        """Each edge leaving a matched node whose gradient changed: '×ratio'."""
        return _draw.diff_edge_labels(self)

    def to_dot(self, **options: Unpack[RenderKeywords]) -> str:
        return _draw.diff_dot(self, **options)

    def svg(self, **options: Unpack[RenderKeywords]) -> Picture:
        """The union on one layout: unmatched nodes marked, changed gradients labelled."""
        return Picture(_draw.diff_svg(self, **options))

    def summary_html(self) -> str:
        return _draw.diff_summary_html(self)

    def changes_html(self) -> str:
        return _draw.diff_changes_html(self)

    def html(self, title: str = "gradviz diff", **options: Unpack[PageKeywords]) -> str:
        return diff_html(self, title, **options)

    def save(self, path: str | Path, **options: Unpack[SaveKeywords]) -> Path:
        """.html (the page), .svg, .dot or .json (the changes as data), written whole or
        not at all."""
        return files.save(self, path, options)


@register_public
class InplaceReport(_inplace.InplaceReport):
    """An ``InplaceReport`` drawn on the watched combined view, the node, the tensor and
    the in-place op marked."""

    def to_dot(self, **options: Unpack[RenderKeywords]) -> str:
        """The watched combined view with the node, the tensor and the in-place op marked."""
        return graph_dot(self.graph, **_draw.inplace_options(self, options))

    def svg(self, **options: Unpack[RenderKeywords]) -> Picture:
        return Picture(graph_svg(self.graph, **_draw.inplace_options(self, options)))

    def save(self, path: str | Path, **options: Unpack[RenderKeywords]) -> Path:
        """Write .svg/.png/.pdf/.dot with the finding marked (the suffix chooses)."""
        return files.save(self, path, options)


@register_public
class NoGradReport(_nograd.NoGradReport):
    """A ``NoGradReport`` drawn with its cause marked."""

    def to_dot(self, **options: Unpack[RenderKeywords]) -> str:
        """The graph with the cause marked in the theme's highlight style."""
        return graph_dot(self.graph, **_draw.nograd_options(self, options))

    def svg(self, **options: Unpack[RenderKeywords]) -> Picture:
        return Picture(graph_svg(self.graph, **_draw.nograd_options(self, options)))

    def save(self, path: str | Path, **options: Unpack[RenderKeywords]) -> Path:
        """Write .svg/.png/.pdf/.dot with the cause marked (the suffix chooses)."""
        return files.save(self, path, options)


@register_public
class GradientHealth(_health.GradientHealth):
    """A ``GradientHealth`` that maps its bands to the edges' widths and colours."""

    def edge_styles(self, theme: Theme | str = "default") -> dict[str, tuple[float, str]]:
        """Edge key -> (pen width, colour): width grows with log10‖g‖ over this
        recording's range; vanishing and zero in the theme's node colour, exploding and
        non-finite in its highlight colour."""
        return _draw.health_edge_styles(self, theme)
