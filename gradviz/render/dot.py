"""``Graph`` -> Graphviz DOT text. Pure string building: no torch, no subprocess.

Every string a user could have influenced (names, node type names, saved values) goes
into HTML-like labels through ``gradviz.escape.html_text`` and into quoted attributes
through ``dot_quote``, so nothing typed into a name can break the DOT, the SVG or a page
that embeds it; a long name is drawn shortened, whole in the tooltip (``tooltip``). Ids
come from gradviz, never from the user, and ``check_ids`` refuses any that is not a plain
identifier (a hand-built or loaded graph).
"""

from __future__ import annotations

import re
from itertools import compress
from typing import Any

from gradviz.escape import ELLIPSIS, MAX_LABEL_CHARS, dot_quote, html_text
from gradviz.model.graph import Edge, Graph, Node, TensorRecord, TensorRow, tensor_label
from gradviz.model.values import Role
from gradviz.render.dot_header import attribute_list, dot_attributes, kept_header
from gradviz.render.dot_ids import check_ids, dot_id
from gradviz.render.dot_tables import shape_line, tensor_table, value_line
from gradviz.render.dot_texts import texts_for
from gradviz.render.options import RenderOptions
from gradviz.render.theme import RoleStyle
from gradviz.render.value_budget import UNSUMMARIZED_TIP, over_budget

__all__ = ["RenderOptions", "check_ids", "dot_id", "html_text", "svg_ids", "tooltip"]

MAX_FOLDED_LINES = 8  # lines of node types drawn in a folded block's box


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


# a prefix that a DOT string holds as it is (options.py allows letters, digits, '_', '-')
_PLAIN_PREFIX = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _multi_output_nodes(graph: Graph) -> set[str]:
    """``Graph.is_multi_output`` for every node, in one pass over the edges."""
    _, _, dsts, input_nrs = graph.edge_columns()
    # an edge into an output other than 0 marks its node; with no negative output numbers
    # (a hand-built graph may have them) that is the whole rule, run in C by compress
    if min(input_nrs, default=0) >= 0:
        into_others: set[str | None] = set(compress(dsts, input_nrs))
        into_others.discard(None)  # an input off the graph
        return into_others  # type: ignore[return-value]  # None: discarded
    first: dict[str, int] = {}
    multi: set[str] = set()
    for dst, input_nr in zip(dsts, input_nrs, strict=True):
        if dst is None:
            continue
        if input_nr > 0 or first.setdefault(dst, input_nr) != input_nr:
            multi.add(dst)
    return multi


class _DotWriter:
    def __init__(self, graph: Graph, options: RenderOptions) -> None:
        self.graph = graph
        self.options = options
        self.theme = options.theme
        self.prefix = options.prefix or graph.prefix
        # ids are the prefix and checked ids (check_ids): quoted as they are, not escaped
        self._plain_ids = _PLAIN_PREFIX.fullmatch(self.prefix) is not None
        self.lines: list[str] = []
        self._multi_output = _multi_output_nodes(graph)
        # text that depends on the theme and names only, kept from drawing to drawing
        # (dot_texts): each role's style, each node type's box, each tensor name's and
        # shape's text; a model's leaves repeat a few of each
        self._texts = texts = texts_for(self.theme, options.shapes)
        if texts.node_style is None:
            # the attributes every node shares (same text and order as dot_attributes would give)
            texts.node_style = attribute_list(self._style(self.theme.node))
        self._node_style = texts.node_style
        self._role_cache = texts.roles
        self._type_cache = texts.types
        self._node_tails = texts.node_tails
        self._scoped_tails = texts.scoped_tails
        self._label_cache = texts.labels
        self._shape_cache = texts.shapes
        self._box_tails = texts.box_tails
        # True while write() is inside a block whose node and edge defaults carry the
        # shared attributes (``_open_scope``); the views with watch() data never set it
        self._scoped = False
        # ids of the tensors whose values this drawing leaves unread (values="auto"):
        # found on the first box that asks
        self._unsummarized: frozenset[str] | None = None

    def write(self) -> str:
        # the store the writer already has: its theme is checked, not hashed again
        self.lines = kept_header(self._texts, self.theme, self.prefix, self.options.direction, {})
        tensor_rows = self._compact_rows()
        # the backward nodes and edges in one block whose defaults are a node's box and an
        # edge's class: each of their lines carries its own text only. The roots come first
        # in it, whole (their own class and style): a root's link makes its node, which
        # must take the block's defaults.
        self.lines.append("  {")
        self.lines += self._node_scope()
        if tensor_rows is None:
            self._roots()
        else:
            self._row_roots(tensor_rows)
        self._scoped = True
        columns = self.graph.node_columns()
        if columns is not None and not self.options.saved:  # fresh from trace(): plain nodes
            self._plain_nodes(*columns)
        else:
            for node in self.graph.nodes:
                self._node(node)
        self._edges()
        self._close_scope()
        if tensor_rows is None:
            self._tensors()
        else:
            self._row_leaves(tensor_rows)
        if self.options.legend:
            self._legend()
        self.lines.append("}")
        self.lines.append("")  # the text ends in a newline: joined once, not copied again
        return "\n".join(self.lines)

    # -- pieces --------------------------------------------------------------------------
    def _id(self, text: str) -> str:
        """An SVG id made of the prefix and checked ids, as a DOT string."""
        return f'"{text}"' if self._plain_ids else dot_quote(text)

    def _open_scope(self, defaults: tuple[str, ...]) -> None:
        """Start a block (an anonymous subgraph: no cluster, no rank, so the layout and
        the SVG are those of the same statements without it) whose node and edge defaults
        are ``defaults``; every node and edge made inside takes them unless it sets its own.
        The lines written with ``_scoped`` set leave those attributes out."""
        self.lines.append("  {")
        self.lines += defaults

    def _close_scope(self) -> None:
        self.lines.append("  }")
        self._scoped = False

    def _node_scope(self) -> tuple[str, ...]:
        """The defaults of the backward nodes' block: a node's box and style and an edge's
        class. A root's box and link, an off-graph input and its edge, set each of these
        attributes themselves."""
        texts = self._texts
        if texts.node_scope is None:
            box = attribute_list(
                {"class": "gv_node", "shape": "box", **self._style(self.theme.node)}
            )
            texts.node_scope = (f"  node [{box}];", '  edge [class="gv_edge"];')
        return texts.node_scope

    def _leaf_scope(self) -> tuple[str, ...]:
        """The defaults of the leaves' block: a leaf's box and the link from its node."""
        texts = self._texts
        if texts.leaf_scope is None:
            leaf = Role.LEAF
            style, colour = self._role_attrs(leaf)
            box = f'class="gv_tensor gv_{leaf.value}" shape="box" {style}'
            link = f'class="gv_link" style="dashed" {colour}'
            texts.leaf_scope = (f"  node [{box}];", f"  edge [{link}];")
        return texts.leaf_scope

    def _style(self, style: RoleStyle, *extra: str) -> dict[str, str]:
        attributes = role_attributes(style)
        del attributes["shape"]  # each caller sets its own (the same box)
        attributes["style"] = ",".join([attributes["style"], *extra])
        return attributes

    def _type_text(self, type_name: str) -> tuple[str, str | None]:
        """A node type's escaped title and tooltip, once per type and drawing."""
        cached = self._type_cache.get(type_name)
        if cached is None:
            whole = tooltip(type_name)
            cached = (
                f"<B>{html_text(type_name)}</B>",
                None if whole is None else dot_quote(whole),
            )
            self._type_cache[type_name] = cached
        return cached

    def _node_tail(self, type_name: str) -> str:
        """What follows the id of a node drawn with its type only (no saved values, not
        folded): the same for every node of the type, so written once per drawing."""
        tail = self._node_tails.get(type_name)
        if tail is None:
            title, whole = self._type_text(type_name)
            more = " " if whole is None else f" tooltip={whole} "
            tail = f'class="gv_node" shape="box" label=<{title}>{more}{self._node_style}'
            self._node_tails[type_name] = tail
        return tail

    def _scoped_tail(self, type_name: str) -> str:
        """``_node_tail`` inside the nodes' block, whose defaults carry the box and style:
        the label, and the tooltip of a long type name."""
        tail = self._scoped_tails.get(type_name)
        if tail is None:
            title, whole = self._type_text(type_name)
            more = "" if whole is None else f" tooltip={whole}"
            tail = self._scoped_tails[type_name] = f"label=<{title}>{more}"
        return tail

    def _plain_nodes(self, node_ids: list[str], type_names: list[str]) -> None:
        """Nodes drawn with their type only, from the node columns: ``_node``'s lines."""
        tail = self._scoped_tail if self._scoped else self._node_tail
        prefix = self.prefix
        append = self.lines.append
        rows = zip(node_ids, type_names, strict=True)
        if not self._plain_ids:
            for node_id, type_name in rows:
                append(f"  {node_id} [id={dot_quote(f'{prefix}_{node_id}')} {tail(type_name)}];")
            return
        # kept from drawing to drawing: usually every type is in
        tails = self._scoped_tails if self._scoped else self._node_tails
        try:
            lines = [f'  {node_id} [id="{prefix}_{node_id}" {tails[t]}];' for node_id, t in rows]
        except KeyError:  # a type not drawn before: make its tail, then write them all
            for type_name in type_names:
                tail(type_name)
            rows = zip(node_ids, type_names, strict=True)
            lines = [f'  {node_id} [id="{prefix}_{node_id}" {tails[t]}];' for node_id, t in rows]
        self.lines += lines

    def _edges(self) -> None:
        """Every edge, the usual ones (no label, width or head label) written directly."""
        options = self.options
        if options.edge_labels or options.edge_styles or not self._plain_ids:
            for edge in self.graph.edges:
                self._edge(edge)
            return
        multi = self._multi_output
        prefix = self.prefix
        special = self._edge_text
        edges = zip(*self.graph.edge_columns(), strict=True)
        if self._scoped:  # the block's edge default is the class
            offgraph = self._offgraph_text
            self.lines += [
                f'  {src} -> {dst} [id="{prefix}_e_{src}_{slot}"];'
                if dst is not None and dst not in multi
                else offgraph(src, slot)
                if dst is None
                else special(src, slot, dst, input_nr)
                for src, slot, dst, input_nr in edges
            ]
            return
        self.lines += [
            f'  {src} -> {dst} [id="{prefix}_e_{src}_{slot}" class="gv_edge"];'
            if dst is not None and dst not in multi
            else special(src, slot, dst, input_nr)
            for src, slot, dst, input_nr in edges
        ]

    def _offgraph_text(self, src: str, slot: int) -> str:
        """``_edge``'s lines for an input off the graph without a label (its box, then the
        dashed edge to it), as one text, without an ``Edge`` object."""
        prefix = self.prefix
        box = f"c_{src}_{slot}"
        return (
            f'  {box} [id="{prefix}_{box}" {self._offgraph()}];\n'
            f'  {src} -> {box} [id="{prefix}_e_{src}_{slot}" class="gv_edge gv_none" '
            'style="dashed"];'
        )

    def _edge_text(self, src: str, slot: int, dst: str | None, input_nr: int) -> str:
        """``_edge``'s line or lines as one text, joined as ``write`` joins lines."""
        lines = self.lines
        start = len(lines)
        self._edge(Edge.made(src, slot, dst, input_nr))
        text = "\n".join(lines[start:])
        del lines[start:]
        return text

    def _node(self, node: Node) -> None:
        folded = getattr(node, "contents", None)  # a gradviz.render.fold.FoldedNode
        if not folded and not self.options.saved:  # the usual node: its type's template
            node_id = node.id
            tail = (self._scoped_tail if self._scoped else self._node_tail)(node.type_name)
            self.lines.append(f"  {node_id} [id={self._id(f'{self.prefix}_{node_id}')} {tail}];")
            return
        title, whole = self._type_text(node.type_name)
        rows = [title]
        if folded:
            lines = folded.split("\n")
            if len(lines) > MAX_FOLDED_LINES:  # a box of readable size, whatever the block
                lines = [*lines[: MAX_FOLDED_LINES - 1], ELLIPSIS]
            for line in lines:
                rows.append(f'<FONT POINT-SIZE="9">{html_text(line, None)}</FONT>')
        if self.options.saved:
            if node.saved_freed:
                rows.append('<FONT POINT-SIZE="9"><I>saved values freed by backward</I></FONT>')
            for saved in node.saved:
                rows.append(
                    f'<FONT POINT-SIZE="9">{html_text(saved.name)} = {html_text(saved.text)}</FONT>'
                )
        label = "<" + "<BR/>".join(rows) + ">"
        more = " peripheries=2" if folded else ""
        if whole is not None:
            more = f" tooltip={whole}{more}"
        node_id = self._id(f"{self.prefix}_{node.id}")
        if self._scoped:  # the block's defaults: class gv_node, the box, the style
            fold_class = ' class="gv_node gv_fold"' if folded else ""
            self.lines.append(f"  {node.id} [id={node_id}{fold_class} label={label}{more}];")
            return
        node_class = '"gv_node gv_fold" shape="box"' if folded else '"gv_node" shape="box"'
        self.lines.append(
            f"  {node.id} [id={node_id} class={node_class} label={label}{more} {self._node_style}];"
        )

    def _edge(self, edge: Edge) -> None:
        edge_labels = self.options.edge_labels
        label = self._grad_label(edge_labels.get(edge.key)) if edge_labels else None
        if edge.dst is None:
            off_id = f"c_{edge.src}_{edge.slot}"
            self.lines.append(
                f"  {off_id} [id={self._id(f'{self.prefix}_{off_id}')} {self._offgraph()}];"
            )
            edge_id = self._id(f"{self.prefix}_e_{edge.src}_{edge.slot}")
            label_attribute = "" if label is None else f" label={label}"
            self.lines.append(
                f"  {edge.src} -> {off_id} [id={edge_id} "
                f'class="gv_edge gv_none" style="dashed"{label_attribute}];'
            )
            return
        multi = edge.dst in self._multi_output
        edge_id = self._id(f"{self.prefix}_e_{edge.src}_{edge.slot}")
        edge_styles = self.options.edge_styles
        width, colour = edge_styles.get(edge.key, (None, None)) if edge_styles else (None, None)
        if label is None and not multi and width is None:  # the usual edge, written directly
            edge_class = "" if self._scoped else ' class="gv_edge"'  # the block's default
            self.lines.append(f"  {edge.src} -> {edge.dst} [id={edge_id}{edge_class}];")
            return
        head = None
        if multi:
            head = f"<{edge.input_nr}>"
        self.lines.append(
            f"  {edge.src} -> {edge.dst} "
            + dot_attributes(
                id=f"{self.prefix}_e_{edge.src}_{edge.slot}",
                class_="gv_edge",
                label=label,
                headlabel=head,
                labelfontsize=10 if head else None,
                labeldistance=1.8 if head else None,
                labelangle=-35 if head else None,
                penwidth=width,
                color=colour,
            )
            + ";"
        )

    def _offgraph(self) -> str:
        """The attributes after the id of an off-graph input's box, the same for all."""
        if self._texts.offgraph_tail is None:
            self._texts.offgraph_tail = attribute_list(
                {
                    "class": "gv_offgraph",
                    "shape": "box",
                    "label": '<<FONT POINT-SIZE="9">None</FONT>>',
                    "height": 0.25,
                    "width": 0.4,
                    "margin": "0.05,0.02",
                    **self._style(self.theme.constant),
                }
            )
        return self._texts.offgraph_tail

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
        leaves = [
            record
            for record in self.graph.tensors
            if not record.is_root and record.role is Role.LEAF and record.node_id is not None
        ]
        if leaves:  # in a block whose defaults are a leaf's box and link
            self._open_scope(self._leaf_scope())
            self._scoped = True
            for record in leaves:
                self._tensor_box(record, compact=True)
            self._close_scope()

    def _compact_rows(self) -> list[TensorRow] | None:
        """The graph's tensor rows when its tensor boxes can be drawn from them (a fresh
        trace, drawn without values or shapes, no gradients on the links); else None."""
        options = self.options
        if options.view == "combined" or (options.shapes and options.values):
            return None
        if options.link_labels or not self._plain_ids:
            return None
        return self.graph.tensor_rows()

    def _row_roots(self, rows: list[TensorRow]) -> None:
        """``_roots`` from tensor rows: the same lines (a root flows into its node)."""
        prefix = self.prefix
        for record_id, name, role, shape, dtype, node_id, is_root in rows:
            if not is_root:
                continue
            label = tensor_label(name, is_root, role)
            style, link_colour = self._role_attrs(role)
            tail = self._box_tails.get((role, label, shape, dtype))
            if tail is None:
                tail = self._compact_tail(role, label, shape, dtype, style)
                self._box_tails[(role, label, shape, dtype)] = tail
            self.lines.append(f'  {record_id} [id="{prefix}_{record_id}" {tail}];')
            if node_id is not None:
                self.lines.append(
                    f'  {record_id} -> {node_id} [id="{prefix}_l_{record_id}" '
                    f'class="gv_link" style="dashed" {link_colour}];'
                )

    def _row_leaves(self, rows: list[TensorRow]) -> None:
        """``_tensors`` from tensor rows: each leaf's box and the link from its node, as one
        text (``write`` joins lines with newlines), in a block whose defaults are a leaf's
        box and link."""
        prefix = self.prefix
        labels = self._texts.leaf_labels  # keyed without the role: hashing an Enum is slow
        leaf = Role.LEAF
        lines = []
        for record_id, name, role, shape, dtype, node_id, is_root in rows:
            if is_root or role is not leaf or node_id is None:
                continue
            label = name or "leaf"  # tensor_label of a leaf that is no root
            key = (label, shape, dtype)
            text = labels.get(key)
            if text is None:
                text = labels[key] = self._compact_label(label, shape, dtype)
            lines.append(
                f'  {record_id} [id="{prefix}_{record_id}" {text}];\n'
                f'  {node_id} -> {record_id} [id="{prefix}_l_{record_id}"];'
            )
        if lines:
            self._open_scope(self._leaf_scope())
            self.lines += lines
            self._close_scope()

    def _role_attrs(self, role: Role) -> tuple[str, str]:
        """The style attributes of a role's tensor boxes and the colour of its links, as
        text, written once per drawing (the same text ``dot_attributes`` would give)."""
        cached = self._role_cache.get(role)
        if cached is None:
            style = self.theme.role(role)
            cached = (attribute_list(self._style(style)), attribute_list({"color": style.border}))
            self._role_cache[role] = cached
        return cached

    def _compact_tail(
        self,
        role: Role,
        label: str,
        shape: tuple[int, ...],
        dtype: str,
        style: str,
        shown: bool = False,
    ) -> str:
        """What follows the id of a compact box that shows no values: its class, label
        (the name, and the shape and dtype when ``shapes``), tooltip and style."""
        label_text = self._compact_label(label, shape, dtype, shown)
        return f'class="gv_tensor gv_{role.value}" shape="box" {label_text} {style}'

    def _compact_label(
        self, label: str, shape: tuple[int, ...], dtype: str, shown: bool = False
    ) -> str:
        """A compact box's label (the name, and the shape and dtype when ``shapes``) and the
        tooltip of a long name: ``_compact_tail`` inside a block that sets the rest. A box
        whose values the default drawing's budget left unread (not ``shown`` though values
        are asked for) ends its shape line in "…" and says why in its tooltip."""
        name, more = self._label_text(label)
        text = f"<B>{name}</B>"
        if self.options.shapes:
            unread = f" {ELLIPSIS}" if self.options.values and not shown else ""
            shape_text = self._shape_text(shape, dtype)
            text += f'<BR/><FONT POINT-SIZE="9">{shape_text}{unread}</FONT>'
            if unread:
                more = f" tooltip={dot_quote(f'{label} · {UNSUMMARIZED_TIP}')}"
        return f"label=<{text}>{more}"

    def _shows_values(self, record: TensorRecord) -> bool:
        """Whether the box shows the record's values: always (``values=True``), never
        (``False``), or within the default drawing's budget (``"auto"``)."""
        values = self.options.values
        if values is True or values is False:
            return values
        if self._unsummarized is None:
            self._unsummarized = over_budget(self.graph.tensors)
        return record.id not in self._unsummarized

    def _box_tail(self, record: TensorRecord, compact: bool, style: str) -> str:
        """What follows a tensor box's id: its class, label, tooltip and style (inside a
        block of leaves, its label and tooltip only)."""
        shown = self._shows_values(record)
        if compact and not (self.options.shapes and shown):
            if self._scoped:
                return self._compact_label(record.label, record.shape, record.dtype, shown)
            return self._compact_tail(
                record.role, record.label, record.shape, record.dtype, style, shown
            )
        if compact:
            name, more = self._label_text(record.label)
            text = f"<B>{name}</B>"
            if record.data is not None:
                value = html_text(value_line(record), None)
                text += f'<BR/><FONT POINT-SIZE="9">{value}</FONT>'
            label = f"<{text}>"
        else:
            label = "<" + tensor_table(record, self.options.shapes, shown) + ">"
            whole = tooltip(record.label, record.grad_fn)
            more = "" if whole is None else f" tooltip={dot_quote(whole)}"
        if self._scoped:
            return f"label={label}{more}"
        return f'class="gv_tensor gv_{record.role.value}" shape="box" label={label}{more} {style}'

    def _label_text(self, label: str) -> tuple[str, str]:
        """A tensor box's name escaped and its tooltip attribute ("" when it shows whole),
        once per name and drawing."""
        cached = self._label_cache.get(label)
        if cached is None:
            whole = tooltip(label)
            cached = (html_text(label), "" if whole is None else f" tooltip={dot_quote(whole)}")
            self._label_cache[label] = cached
        return cached

    def _shape_text(self, shape: tuple[int, ...], dtype: str) -> str:
        """``shape_line`` escaped, once per shape and dtype and drawing."""
        key = (tuple(shape), dtype)
        text = self._shape_cache.get(key)
        if text is None:
            text = self._shape_cache[key] = html_text(shape_line(shape, dtype), None)
        return text

    def _tensor_box(self, record: TensorRecord, compact: bool) -> None:
        role = record.role
        style, link_colour = self._role_attrs(role)
        if compact and not (self.options.shapes and self._shows_values(record)):
            # no values shown: a box of one role, name, shape and dtype is written once
            unread = bool(self.options.values and self.options.shapes)  # by the budget
            key: tuple[Any, ...] = (role, record.label, tuple(record.shape), record.dtype, unread)
            tails = self._texts.scoped_box_tails if self._scoped else self._box_tails
            tail = tails.get(key)
            if tail is None:
                tail = tails[key] = self._box_tail(record, compact, style)
        else:
            tail = self._box_tail(record, compact, style)
        record_id = record.id
        prefix = self.prefix
        self.lines.append(f"  {record_id} [id={self._id(f'{prefix}_{record_id}')} {tail}];")
        node_id = record.node_id
        if node_id is None:
            return
        link_labels = self.options.link_labels
        grad_label = self._grad_label(link_labels.get(record_id)) if link_labels else None
        # inside a block of leaves, the class, dash and colour are the block's edge default
        link_style = "" if self._scoped else f' class="gv_link" style="dashed" {link_colour}'
        link = (
            f"[id={self._id(f'{prefix}_l_{record_id}')}{link_style}"
            + ("" if grad_label is None else f" label={grad_label}")
            + "]"
        )
        if role is Role.LEAF and not record.is_root:
            # AccumulateGrad writes into the leaf's .grad: draw it flowing there.
            self.lines.append(f"  {node_id} -> {record_id} {link};")
        elif self.options.view == "combined":
            self.lines.append(f"  {record_id} -> {node_id} {link};")
            self.lines.append(f"  {{rank=same; {record_id}; {node_id};}}")
        else:
            self.lines.append(f"  {record_id} -> {node_id} {link};")

    def _legend(self) -> None:
        """One sample per role, drawn with the very attributes that role's boxes get
        (``role_attributes``), so the legend cannot promise a look the nodes lack."""
        labels = [*self.options.edge_labels.values(), *self.options.link_labels.values()]
        note = any("‖" in text for text in labels)  # a gradient too big to show, in short
        legends = self._texts.legends
        lines = legends.get((self.prefix, note))
        if lines is None:
            lines = legends[(self.prefix, note)] = tuple(self._legend_lines(note))
        self.lines.extend(lines)

    def _legend_lines(self, note: bool) -> list[str]:
        lines = []
        legend_id = f"{self.prefix}_legend"
        lines.append(
            f"  subgraph cluster_legend {{ id={dot_quote(legend_id)} "
            'class="gv_legend" label="" style="rounded" color="#d0d0d0" margin=6'
        )
        names = []
        for role, style in self.theme.legend():
            name = f"legend_{role.value}"
            names.append(name)
            text = f'<<FONT POINT-SIZE="9">{html_text(style.legend)}</FONT>>'
            lines.append(
                f"    {name} "
                + dot_attributes(
                    id=f"{legend_id}_{role.value}",
                    class_=f"gv_legend_item gv_{role.value}",
                    label=text,
                    height=0.3,
                    **role_attributes(style),
                )
                + ";"
            )
        if note:
            names.append("legend_edges")
            text = "edge: its gradient, or shape ‖norm‖ when big (4×2 ‖0.36‖)"
            lines.append(
                "    legend_edges "
                + dot_attributes(
                    id=f"{legend_id}_edges",
                    class_="gv_legend_item",
                    shape="plaintext",
                    label=f'<<FONT POINT-SIZE="9">{html_text(text)}</FONT>>',
                    fontcolor=self.theme.edge_label,
                )
                + ";"
            )
        lines.append("    {rank=same; " + "; ".join(names) + ";}")
        if len(names) > 1:
            chain = " -> ".join(names)
            lines.append(f"    {chain} [style=invis];")
        lines.append("  }")
        return lines


def role_attributes(style: RoleStyle) -> dict[str, str]:
    """How a box of a role is drawn: its shape, style words, colours and pen width. Nodes
    and the legend both take it from here; "bold" is a pen twice the default, so it shows."""
    words = ["filled", *[w for w in style.border_style.split(",") if w]]
    attributes = {
        "shape": "box",
        "style": ",".join(words),
        "fillcolor": style.fill,
        "color": style.border,
        "fontcolor": style.text,
    }
    if "bold" in words:
        attributes["penwidth"] = "2.8"
    return attributes
