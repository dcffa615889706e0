"""``Graph`` -> Graphviz DOT text. Pure string building: no torch, no subprocess.

Every string a user could have influenced (names, node type names, saved values) goes
into HTML-like labels through ``gradviz.escape.html_text`` and into quoted attributes
through ``dot_quote``, so nothing typed into a name can break the DOT, the SVG or a page
that embeds it; a long name is drawn shortened, whole in the tooltip (``tooltip``). Ids
come from gradviz, never from the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from gradviz.escape import MAX_LABEL_CHARS, dot_quote, html_text
from gradviz.graph import Edge, Graph, Node, Role, TensorRecord
from gradviz.theme import RoleStyle, Theme, get_theme

__all__ = ["RenderOptions", "html_text", "svg_ids", "to_dot", "tooltip"]

View = Literal["backward", "combined", "forward"]

_DIRECTIONS = {"TB": "TB", "LR": "LR", "top-down": "TB", "left-right": "LR", "BT": "BT", "RL": "RL"}


@dataclass(frozen=True)
class RenderOptions:
    """How to draw: the view, direction, what to show, the theme and the id prefix."""

    view: View = "backward"
    direction: str = "TB"
    saved: bool = False
    shapes: bool = True
    legend: bool = True
    theme: Theme = field(default_factory=lambda: get_theme("default"))
    prefix: str | None = None  # SVG id prefix; the graph's own when None
    edge_labels: Mapping[str, str] = field(default_factory=dict)  # edge key -> gradient text
    link_labels: Mapping[str, str] = field(default_factory=dict)  # tensor id -> gradient text
    # with gradviz.watch() data (gradviz.render_forward): module clusters, collapsing, marks
    modules: bool = False  # cluster nodes and ops by the nn.Module that created them
    collapse_depth: int | None = None  # draw modules this deep (0: top level) as one box
    marks: tuple[str, ...] = ()  # node / tensor / forward-tensor ids to draw marked
    # draw runs of identical blocks as one "N × block" box (gradviz.fold); an int sets
    # the fewest repeats that fold (True: 2)
    fold: bool | int = False

    @classmethod
    def make(cls, **options: Any) -> RenderOptions:
        """Options from keywords, checked, with friendly names accepted."""
        unknown = set(options) - set(cls.__dataclass_fields__)
        if unknown:
            raise TypeError(
                f"unknown render option(s) {sorted(unknown)}; "
                f"known: {sorted(cls.__dataclass_fields__)}"
            )
        made = cls(**{k: v for k, v in options.items() if k != "theme"})
        if "theme" in options:
            made = replace(made, theme=get_theme(options["theme"]))
        if made.view not in ("backward", "combined", "forward"):
            raise ValueError(f"view must be 'backward', 'combined' or 'forward', not {made.view!r}")
        if made.direction not in _DIRECTIONS:
            raise ValueError(
                f"direction must be one of {sorted(_DIRECTIONS)}, not {made.direction!r}"
            )
        return replace(made, direction=_DIRECTIONS[made.direction])


def tooltip(*texts: object) -> str | None:
    """The whole text of a label shortened on screen, for the element's tooltip (else None)."""
    whole = [str(text) for text in texts if text is not None]
    if all(len(text) <= MAX_LABEL_CHARS for text in whole):
        return None
    return " · ".join(whole)


def svg_ids(prefix: str) -> dict[str, str]:
    """The id patterns the SVG carries, for the stepper and the tests."""
    return {
        "node": f"{prefix}_{{node_id}}",
        "tensor": f"{prefix}_{{tensor_id}}",
        "edge": f"{prefix}_e_{{src}}_{{slot}}",
        "offgraph": f"{prefix}_c_{{src}}_{{slot}}",
        "link": f"{prefix}_l_{{tensor_id}}",
        "legend": f"{prefix}_legend",
    }


def to_dot(graph: Graph, options: RenderOptions | None = None) -> str:
    """The whole graph as DOT text; deterministic for the same graph and options."""
    options = options or RenderOptions()
    if options.fold:
        if options.view == "forward":
            raise ValueError("fold= draws the backward graph; use view='backward' with it")
        from gradviz.fold import fold_with_reason

        graph, why = fold_with_reason(graph, 2 if options.fold is True else int(options.fold))
        if why:
            import warnings

            from gradviz.errors import GradvizWarning

            warnings.warn(f"fold=True folded nothing: {why}", GradvizWarning, stacklevel=3)
    if options.view == "forward" or graph.forward is not None or options.modules or options.marks:
        from gradviz.render_forward import forward_aware_dot  # views that use watch() data

        return forward_aware_dot(graph, options)
    return _DotWriter(graph, options).write()


def _attrs(**attributes: str | float | None) -> str:
    return "[" + _attr_list(attributes) + "]"


_LABELS = frozenset(("label", "headlabel", "taillabel", "xlabel"))


def _attr_list(attributes: Mapping[str, str | float | None]) -> str:
    """``key=value`` pairs: HTML-like labels (``<...>``, built by gradviz from ``html_text``)
    as they are, any other text quoted (a tooltip of ``<b>`` stays text)."""
    parts = []
    for key, value in attributes.items():
        if value is None:
            continue
        if key[-1] == "_":
            key = key.rstrip("_")
        if isinstance(value, str):
            if key in _LABELS and value[:1] == "<" and value[-1:] == ">":
                parts.append(f"{key}={value}")
            else:
                parts.append(f"{key}={dot_quote(value)}")
        else:
            parts.append(f"{key}={value}")
    return " ".join(parts)


def dot_header(theme: Theme, prefix: str, direction: str, **graph_extra: str) -> list[str]:
    """The opening lines every gradviz DOT shares: graph, node and edge defaults."""
    t = theme
    graph = _attrs(
        id=prefix,
        rankdir=direction,
        bgcolor=t.background,
        fontname=t.font,
        nodesep="0.35",
        ranksep="0.45",
        pad="0.2",
        **graph_extra,
    )
    node = _attrs(fontname=t.font, fontsize=11, fontcolor=t.text, margin="0.12,0.05", penwidth=1.4)
    edge = _attrs(fontname=t.font, fontsize=10, color=t.edge, fontcolor=t.edge_label, arrowsize=0.7)
    return ["digraph gradviz {", f"  graph {graph};", f"  node {node};", f"  edge {edge};"]


class _DotWriter:
    def __init__(self, graph: Graph, options: RenderOptions) -> None:
        self.graph = graph
        self.options = options
        self.theme = options.theme
        self.prefix = options.prefix or graph.prefix
        self.lines: list[str] = []
        # the attributes every node / off-graph input shares, written once (same text and
        # order as _attrs would give)
        self._node_style = _attr_list(self._style(self.theme.node))
        self._multi_output: dict[str, bool] = {}

    def write(self) -> str:
        self.lines = dot_header(self.theme, self.prefix, self.options.direction)
        self._roots()
        for node in self.graph.nodes:
            self._node(node)
        for edge in self.graph.edges:
            self._edge(edge)
        self._tensors()
        if self.options.legend:
            self._legend()
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    # -- pieces --------------------------------------------------------------------------
    def _style(self, style: RoleStyle, *extra: str) -> dict[str, str]:
        words = ["filled", *[w for w in style.border_style.split(",") if w], *extra]
        return {
            "style": ",".join(words),
            "fillcolor": style.fill,
            "color": style.border,
            "fontcolor": style.text,
        }

    def _node(self, node: Node) -> None:
        rows = [f"<B>{html_text(node.type_name)}</B>"]
        folded = getattr(node, "contents", None)  # a gradviz.fold.FoldedNode
        if folded:
            for line in folded.split("\n"):
                rows.append(f'<FONT POINT-SIZE="9">{html_text(line, None)}</FONT>')
        if self.options.saved:
            if node.saved_freed:
                rows.append('<FONT POINT-SIZE="9"><I>saved values freed by backward</I></FONT>')
            for saved in node.saved:
                rows.append(
                    f'<FONT POINT-SIZE="9">{html_text(saved.name)} = {html_text(saved.text)}</FONT>'
                )
        label = "<" + "<BR/>".join(rows) + ">"
        node_class = '"gv_node gv_fold" shape="box"' if folded else '"gv_node" shape="box"'
        more = " peripheries=2 " if folded else " "
        whole = tooltip(node.type_name)
        if whole is not None:
            more = f" tooltip={dot_quote(whole)}{more}"
        self.lines.append(
            f"  {node.id} [id={dot_quote(f'{self.prefix}_{node.id}')} class={node_class} "
            f"label={label}{more}{self._node_style}];"
        )

    def _edge(self, edge: Edge) -> None:
        label = self._grad_label(self.options.edge_labels.get(edge.key))
        if edge.dst is None:
            off_id = f"c_{edge.src}_{edge.slot}"
            style = self._style(self.theme.constant)
            self.lines.append(
                f"  {off_id} "
                + _attrs(
                    id=f"{self.prefix}_c_{edge.src}_{edge.slot}",
                    class_="gv_offgraph",
                    shape="box",
                    label='<<FONT POINT-SIZE="9">None</FONT>>',
                    height=0.25,
                    width=0.4,
                    margin="0.05,0.02",
                    **style,
                )
                + ";"
            )
            self.lines.append(
                f"  {edge.src} -> {off_id} "
                + _attrs(
                    id=f"{self.prefix}_e_{edge.src}_{edge.slot}",
                    class_="gv_edge gv_none",
                    style="dashed",
                    label=label,
                )
                + ";"
            )
            return
        multi = self._multi_output.get(edge.dst)
        if multi is None:
            multi = self._multi_output[edge.dst] = self.graph.is_multi_output(edge.dst)
        edge_id = dot_quote(f"{self.prefix}_e_{edge.src}_{edge.slot}")
        if label is None and not multi:  # the usual edge, written directly
            self.lines.append(f'  {edge.src} -> {edge.dst} [id={edge_id} class="gv_edge"];')
            return
        head = None
        if multi:
            head = f"<{edge.input_nr}>"
        self.lines.append(
            f"  {edge.src} -> {edge.dst} "
            + _attrs(
                id=f"{self.prefix}_e_{edge.src}_{edge.slot}",
                class_="gv_edge",
                label=label,
                headlabel=head,
                labelfontsize=10 if head else None,
                labeldistance=1.8 if head else None,
                labelangle=-35 if head else None,
            )
            + ";"
        )

    def _grad_label(self, text: str | None) -> str | None:
        """A gradient shown on an edge: one line, so the SVG holds it as one <text>."""
        if not text:
            return None
        colour = self.theme.step.grad_text
        return f'<<FONT COLOR="{colour}"><B>{html_text(text, None)}</B></FONT>>'

    def _roots(self) -> None:
        """Roots always show, as the tensor the seed gradient enters (backward view)."""
        if self.options.view == "combined":
            return
        for record in self.graph.tensors:
            if record.is_root:
                self._tensor_box(record, compact=True)

    def _tensors(self) -> None:
        if self.options.view == "combined":
            for record in self.graph.tensors:
                self._tensor_box(record, compact=False)
            return
        for record in self.graph.tensors:
            if not record.is_root and record.role is Role.LEAF and record.node_id is not None:
                self._tensor_box(record, compact=True)

    def _tensor_box(self, record: TensorRecord, compact: bool) -> None:
        style = self._style(self.theme.role(record.role))
        name = html_text(record.label)
        if compact:
            text = f"<B>{name}</B>"
            if self.options.shapes and record.data is not None:
                value = html_text(_value_line(record), None)
                text += f'<BR/><FONT POINT-SIZE="9">{value}</FONT>'
            label = f"<{text}>"
        else:
            label = "<" + _tensor_table(record, self.options.shapes) + ">"
        self.lines.append(
            f"  {record.id} "
            + _attrs(
                id=f"{self.prefix}_{record.id}",
                class_=f"gv_tensor gv_{record.role.value}",
                shape="box",
                label=label,
                tooltip=tooltip(record.label) if compact else tooltip(record.label, record.grad_fn),
                **style,
            )
            + ";"
        )
        if record.node_id is None:
            return
        link = _attrs(
            id=f"{self.prefix}_l_{record.id}",
            class_="gv_link",
            style="dashed",
            color=self.theme.role(record.role).border,
            label=self._grad_label(self.options.link_labels.get(record.id)),
        )
        if record.role is Role.LEAF and not record.is_root:
            # AccumulateGrad writes into the leaf's .grad: draw it flowing there.
            self.lines.append(f"  {record.node_id} -> {record.id} {link};")
        elif self.options.view == "combined":
            self.lines.append(f"  {record.id} -> {record.node_id} {link};")
            self.lines.append(f"  {{rank=same; {record.id}; {record.node_id};}}")
        else:
            self.lines.append(f"  {record.id} -> {record.node_id} {link};")

    def _legend(self) -> None:
        cells = []
        for role, style in self.theme.legend():
            border = "4" if role is Role.LEAF else "1"
            cells.append(
                f'<TD BGCOLOR="{style.fill}" COLOR="{style.border}" BORDER="{border}">'
                f'<FONT COLOR="{style.text}" POINT-SIZE="9">{html_text(style.legend)}</FONT></TD>'
            )
        table = (
            '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="4" CELLPADDING="4"><TR>'
            + "".join(cells)
            + "</TR></TABLE>>"
        )
        self.lines.append(
            "  legend "
            + _attrs(id=f"{self.prefix}_legend", class_="gv_legend", shape="plaintext", label=table)
            + ";"
        )
        self.lines.append("  {rank=sink; legend;}")


def _value_line(record: TensorRecord) -> str:
    assert record.data is not None
    if record.data.shape == ():
        return record.data.text()
    return f"{record.data.shape_text()} {record.data.text(40)}"


def _tensor_table(record: TensorRecord, shapes: bool) -> str:
    def row(key: str, value: str, limit: int | None = None) -> str:
        return (
            f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="9">{key}</FONT></TD>'
            f'<TD ALIGN="LEFT">{html_text(value, limit)}</TD></TR>'
        )

    data = "?" if record.data is None else record.data.text(40)
    grad = "None" if record.grad is None else record.grad.text(40)
    rows = [
        f'<TR><TD COLSPAN="2"><B>{html_text(record.label)}</B></TD></TR>',
        row("data", data),
        row("grad", grad),
        row("grad_fn", record.grad_fn or "None", MAX_LABEL_CHARS),  # a type name
        row("is_leaf", str(record.is_leaf)),
        row("requires_grad", str(record.requires_grad)),
    ]
    if shapes and record.data is not None and record.data.shape != ():
        rows.append(row("shape", f"{record.data.shape_text()} {record.dtype}"))
    return (
        '<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
        + "".join(rows)
        + "</TABLE>"
    )
