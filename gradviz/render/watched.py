"""DOT for the views that use ``gradviz.watch()`` data: ``forward`` and the watched ``combined``.

The forward view draws tensors as boxes coloured by role (one box per version, so an
in-place op leads from ``c`` to ``c v1``), the ops between them, and Python scalars as small
yellow constants. The watched combined view puts that forward graph beside the backward
graph and links each tensor to its ``grad_fn`` (a leaf: its ``AccumulateGrad`` writes
``.grad``), and each off-graph constant to the ``None`` slot it left. Module clusters and
collapsing modules below a depth work in every view; ``marks`` outline chosen elements.

Pure string building, like ``render``: no torch, no subprocess. The backward side reuses
``render``'s writer, so the ids the stepper uses are the same as in the plain views.
"""

from __future__ import annotations

from collections import defaultdict

from gradviz.model.forward import FOp, Forward, TensorState
from gradviz.model.graph import Edge, Graph, TensorRecord
from gradviz.model.value_rows import shaped_text
from gradviz.model.values import Role, Summary
from gradviz.render.dot import RenderOptions, _DotWriter, html_text, tooltip
from gradviz.render.dot_header import dot_attributes, dot_header
from gradviz.render.dot_tables import tensor_table
from gradviz.render.forward_boxes import as_record, box_name, made_by, standing_differs
from gradviz.render.frontier import Collapse, boxed
from gradviz.render.links import CombinedSides, LinkSpec, _Box, _LinkWriter

__all__ = [
    "box_name",
    "collapsed_box",
    "collapsed_members",
    "combined_sides",
    "forward_aware_dot",
    "needs_forward",
]

_ARITHMETIC = frozenset(
    (
        "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "true_divide", "pow",
        "pow_", "rsub", "__rsub__", "__radd__", "__rmul__", "__rtruediv__", "__rdiv__",
        "__rpow__", "__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__iadd__",
        "__isub__", "__imul__", "__itruediv__", "clamp", "clamp_", "clamp_min", "clamp_max",
        "fill_", "masked_fill", "masked_fill_", "where", "maximum", "minimum",
    )
)  # fmt: skip

_SYMBOLS = {
    "mul": "×", "__rmul__": "×", "mul_": "×=", "add": "+", "__radd__": "+", "add_": "+=",
    "sub": "−", "sub_": "−=", "rsub": "−", "__rsub__": "−", "div": "÷", "true_divide": "÷",
    "__rtruediv__": "÷", "div_": "÷=", "matmul": "@", "__matmul__": "@",
}  # fmt: skip


def needs_forward(view: str) -> str:
    return (
        f"the {view!r} view needs forward data: trace the graph with gradviz.watch(), e.g.\n"
        "    with gradviz.watch() as w:\n        loss = model(x).sum()\n"
        f"    w.trace(loss).save('graph.svg', view={view!r})"
    )


def collapsed_box(
    data: Forward, module: int | None, depth: int | frozenset[int] | None
) -> int | None:
    """The module drawn as one box for a node or op of ``module``: the one at ``depth``,
    or the outermost of the module indices ``depth`` (``gradviz.render.frontier.boxed``)."""
    if module is None or depth is None:
        return None
    chain = data.module_chain(module)
    if isinstance(depth, frozenset):
        return next((scope.index for scope in chain if scope.index in depth), None)
    return chain[depth].index if len(chain) > depth else None


def collapsed_members(graph: Graph, depth: Collapse) -> dict[int, list[str]]:
    """Module index -> the backward nodes drawn inside its box at ``collapse_depth=depth``
    (or ``collapse=depth``: ``"auto"``, module paths; graph order). The box's DOT name is
    ``bm<index>``, its SVG id ``<prefix>_bm<index>``."""
    members: dict[int, list[str]] = defaultdict(list)
    if graph.forward is None:
        return {}
    boxes = boxed(graph, depth)
    for node in graph.nodes:
        box = collapsed_box(graph.forward, graph.forward.node_modules.get(node.id), boxes)
        if box is not None:
            members[box].append(node.id)
    return dict(members)


def forward_aware_dot(graph: Graph, options: RenderOptions) -> str:
    """Dispatch from ``render.to_dot`` for watched graphs, modules and marks."""
    if options.view == "forward":
        if graph.forward is None:
            raise ValueError(needs_forward("forward"))
        return _Writer(graph, options, graph.forward, forward=True, backward=False).write()
    if options.view == "combined" and graph.forward is not None:
        return _Writer(graph, options, graph.forward, forward=True, backward=True).write()
    if not options.marks and graph.forward is None:
        return _DotWriter(graph, options).write()
    empty = graph.forward or Forward()
    return _Writer(graph, options, empty, forward=False, backward=True).write()


def combined_sides(graph: Graph, options: RenderOptions) -> CombinedSides:
    """The watched combined view in parts, for laying its two sides out apart."""
    if graph.forward is None:
        raise ValueError(needs_forward("combined"))
    return _Writer(graph, options, graph.forward, forward=True, backward=True).sides()


class _Writer(_LinkWriter):
    def __init__(
        self,
        graph: Graph,
        options: RenderOptions,
        data: Forward,
        *,
        forward: bool,
        backward: bool,
    ) -> None:
        super().__init__(graph, options)
        self.data = data
        self.show_forward = forward
        self.show_backward = backward
        self.marks = set(options.marks)
        self.records_by_ftensor: dict[str, TensorRecord] = {}
        for record in graph.tensors:
            linked = data.tensor_links.get(record.id)
            if linked is not None and linked not in self.records_by_ftensor:
                self.records_by_ftensor[linked] = record
        self.nodes_by_seq = {
            n.sequence_nr: n for n in graph.nodes if not n.is_accumulate_grad and n.sequence_nr >= 0
        }
        self.cluster_lines: dict[int | None, list[str]] = defaultdict(list)
        self.node_group: dict[str, str] = {}  # backward node id -> collapsed box name
        # the versions an op of the watched code made in place; any other version is how
        # the tensor was when the code first used it (a parameter after its initialisation)
        self.bumped = {(b.tensor, b.after) for op in data.ops for b in op.bumps}
        self.offgraph: dict[tuple[str, int], tuple[str, int]] = {}
        self.last_state: dict[str, TensorState] = {}  # each tensor as its last box shows it
        # the modules drawn as one box each: by depth, or a set (``collapse=``)
        self.collapse: int | frozenset[int] | None = options.collapse_depth
        if options.collapse is not None:
            self.collapse = boxed(graph, options.collapse)

    # -- the whole picture ------------------------------------------------------------------
    def write(self, clusters: bool = True) -> str:
        """The DOT text; ``clusters=False`` leaves out the two side clusters (``sides``)."""
        self.lines = dot_header(self.theme, self.prefix, self.options.direction, compound="true")
        self.cuts = [len(self.lines)]
        boxes: dict[tuple[str, int], _Box] = {}
        both = self.show_forward and self.show_backward and clusters
        if self.show_forward:
            self._open("forward", "forward pass (what the code ran)", both)
            boxes = self._forward_side()
            self._close(both)
        self.cuts.append(len(self.lines))
        if self.show_backward:
            self._open("backward", "backward graph (what autograd built)", both)
            self._backward_side()
            self._close(both)
        self.cuts.append(len(self.lines))
        if self.show_forward and self.show_backward:
            self._links(boxes)
        self.cuts.append(len(self.lines))
        if self.options.legend:
            self._legend()
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def sides(self) -> CombinedSides:
        """The combined view as two graphs laid out apart and the links drawn between them:
        ``dot`` spends minutes routing hundreds of links across two clusters, seconds on
        each side alone."""
        self.link_specs: list[LinkSpec] = []
        full = self.write(clusters=False)
        head, forward_end, backward_end, links_end = self.cuts
        header = self.lines[:head]
        legend = self.lines[links_end:-1]
        return CombinedSides(
            full=full,
            forward="\n".join([*header, *self.lines[head:forward_end], "}"]) + "\n",
            backward="\n".join([*header, *self.lines[forward_end:backward_end], *legend, "}"])
            + "\n",
            links=tuple(self.link_specs),
        )

    def _open(self, side: str, title: str, wanted: bool) -> None:
        if wanted:
            self.lines.append(f"  subgraph cluster_{side} {{")
            frame = dot_attributes(id=f"{self.prefix}_{side}", label=title, style="invis")
            self.lines.append(f"    {frame[1:-1]};")

    def _close(self, wanted: bool) -> None:
        if wanted:
            self.lines.append("  }")

    def _mark(self, line: str, key: str) -> str:
        """Outline a marked element: later attributes win in DOT."""
        if key not in self.marks:
            return line
        step = self.theme.step
        extra = dot_attributes(
            class_="gv_marked", penwidth=step.active_width, color=step.active_border
        )
        line = line.replace('class="gv_', 'class="gv_marked gv_', 1)
        return line[: line.rindex("]")] + " " + extra[1:-1] + line[line.rindex("]") :]

    # -- modules ------------------------------------------------------------------------------
    def _group(self, module: int | None) -> tuple[int | None, int | None]:
        """(the cluster to draw in, the collapsed module box or None) for a module scope."""
        if module is None:
            return None, None
        collapsed = collapsed_box(self.data, module, self.collapse)
        if collapsed is not None:
            parent = self.data.modules[collapsed].parent
            return (parent if self.options.modules else None), collapsed
        return (module if self.options.modules else None), None

    def _emit_clusters(self, side: str) -> None:
        """Write the collected statements, nested in one cluster per module call."""
        children: dict[int | None, list[int]] = defaultdict(list)
        used = {k for k in self.cluster_lines if k is not None}
        needed: set[int] = set()
        for index in used:
            for scope in self.data.module_chain(index):
                needed.add(scope.index)
        for index in sorted(needed):
            children[self.data.modules[index].parent].append(index)

        def emit(index: int | None, indent: str) -> None:
            if index is not None:
                scope = self.data.modules[index]
                self.lines.append(f"{indent}subgraph cluster_{side}_m{index} {{")
                self.lines.append(
                    f"{indent}  "
                    + dot_attributes(
                        id=f"{self.prefix}_{side}_m{index}",
                        label=f"<<I>{html_text(scope.label)}</I>>",
                        tooltip=tooltip(scope.label),
                        style="rounded,dashed",
                        color=self.theme.edge,
                        fontcolor=self.theme.text,
                        fontsize=10,
                    )[1:-1].replace('" ', '"; ')
                    + ";"
                )
            for line in self.cluster_lines.get(index, []):
                self.lines.append(indent + line)
            for child in children.get(index, []):
                emit(child, indent + "  ")
            if index is not None:
                self.lines.append(f"{indent}}}")

        emit(None, "")
        self.cluster_lines = defaultdict(list)

    # -- the forward side -----------------------------------------------------------------
    def _forward_side(self) -> dict[tuple[str, int], _Box]:
        """One box per state of each tensor (``TensorState``: a new version, requires_grad
        switched, a new grad_fn or ``.grad``), each drawn as the tensor was then: a forward
        frame shows every tensor as it was at that moment, not as the block left it."""
        data = self.data
        boxes: dict[tuple[str, int], _Box] = {}
        box_cluster: dict[str, int | None] = {}
        reads = {op.index: data.states_in(op) for op in data.replayed}
        last_drawn: dict[str, int] = {}
        for op in data.replayed:
            read, made_states = reads[op.index]
            tensors = [a.tensor for a in op.inputs if a.tensor is not None]
            tensors += made_by(op)
            for tensor_id, state in zip(tensors, read + made_states, strict=True):
                last_drawn[tensor_id] = max(state, last_drawn.get(tensor_id, state))
        for tensor_id in last_drawn:  # a state no op read (.grad written): shown too
            seen = data.states_seen(tensor_id)
            if seen and seen[-1] > last_drawn[tensor_id]:
                last_drawn[tensor_id] = seen[-1]
        self.last_state = {
            t: data.tensor(t).states[i] for t, i in last_drawn.items() if data.tensor(t).states
        }

        def box(tensor_id: str, state: int, cluster: int | None) -> _Box:
            key = (tensor_id, state)
            found = boxes.get(key)
            if found is not None:
                return found
            tensor = data.tensor(tensor_id)
            moment = tensor.states[state] if tensor.states else None
            name = box_name(tensor_id, state)
            record = None
            if self.show_backward and state == last_drawn.get(tensor_id):
                record = self.records_by_ftensor.get(tensor_id)
            version = (moment.version if moment is not None else tensor.version) or 0
            made = _Box(name, tensor, version, record, moment)
            boxes[key] = made
            box_cluster[name] = cluster
            return made

        op_node: dict[int, str] = {}
        edges: list[str] = []
        collapsed_boxes: set[int] = set()
        consumers: dict[str, set[str]] = defaultdict(set)
        producer: dict[str, str] = {}
        seen_edges: set[tuple[str, str]] = set()

        def edge(src: str, dst: str, **attributes: str | float | None) -> None:
            if (src, dst) in seen_edges or src == dst:
                return
            seen_edges.add((src, dst))
            ids = {"id": f"{self.prefix}_fe_{src}_{dst}"}  # the stepper reveals it by id
            edges.append(f"  {src} -> {dst} {dot_attributes(**ids, **attributes)};")

        used = {a.tensor for op in data.replayed for a in op.inputs if a.tensor is not None}
        for op in data.replayed:
            cluster, collapsed = self._group(op.module)
            read, made_states = reads[op.index]
            if op.kind == "factory":
                for tensor_id, state in zip(op.outputs, made_states, strict=True):
                    if tensor_id in used or data.tensor(tensor_id).name:
                        box(tensor_id, state, cluster)
                    # else: made and never used, nor named (the data of an nn.Parameter):
                    # a box tied to nothing
                continue
            if collapsed is not None:
                name = f"m{collapsed}"
                if collapsed not in collapsed_boxes:
                    collapsed_boxes.add(collapsed)
                    self._module_box(name, collapsed, cluster, "gv_fmodule")
            else:
                name = f"op{op.index}"
                self.cluster_lines[cluster].append(self._op_line(op, name))
            op_node[op.index] = name
            tensor_args = [a.tensor for a in op.inputs if a.tensor is not None]
            switched = set()  # requires_grad set: the box before leads to the box after
            for tensor_id, state in zip(tensor_args, read, strict=True):
                if op.kind == "requires_grad":
                    if data.state_at(tensor_id, op.index, True) == state:
                        continue  # set as it was: the note only
                    switched.add(tensor_id)
                source = box(tensor_id, state, None)
                consumers[source.name].add(name)
                edge(source.name, name, class_="gv_fedge")
            if op.name in _ARITHMETIC and collapsed is None:
                for arg in op.inputs:
                    if (
                        arg.tensor is None
                        and isinstance(arg.value, int | float)
                        and (not isinstance(arg.value, bool))
                    ):
                        scalar = f"s{op.index}_{arg.position}"
                        self.cluster_lines[cluster].append(self._scalar_line(scalar, arg.text))
                        edge(scalar, name)
            outputs = list(zip(made_by(op), made_states, strict=True))
            for nr, (tensor_id, state) in enumerate(outputs):
                made = box(tensor_id, state, cluster)
                producer[made.name] = name
                if op.kind == "requires_grad" and tensor_id not in switched:
                    edge(name, made.name, style="dashed", arrowhead="none", class_="gv_note")
                else:
                    label = str(nr) if len(outputs) > 1 and op.kind != "inplace" else None
                    edge(name, made.name, label=label, class_="gv_fedge")
        first_box: dict[str, int] = {}
        for tensor_id, state in boxes:
            first_box[tensor_id] = min(state, first_box.get(tensor_id, state))
        for tensor_id, first in first_box.items():  # later states no op read or made
            for state in data.states_seen(tensor_id):
                if state > first and (tensor_id, state) not in boxes:
                    box(tensor_id, state, None)
        hidden: set[str] = set()
        for made in boxes.values():
            src = producer.get(made.name)
            if (
                src is not None
                and src.startswith("m")
                and made.tensor.name is None
                and made.record is None
                and consumers.get(made.name, set()) <= {src}
                and consumers.get(made.name)
            ):
                hidden.add(made.name)
        for made in boxes.values():
            if made.name in hidden:
                continue
            self.cluster_lines[box_cluster[made.name]].append(self._box_line(made))
        self._emit_clusters("f")
        for line in edges:
            words = line.split()
            if words[0] in hidden or words[2] in hidden:
                continue
            self.lines.append(line)
        return boxes

    def _op_line(self, op: FOp, name: str) -> str:
        symbol = _SYMBOLS.get(op.name)
        rows = [f"<B>{html_text(op.name if symbol is None else symbol)}</B>"]
        if symbol is not None:
            rows[0] += f' <FONT POINT-SIZE="8">{html_text(op.name)}</FONT>'
        notes = []
        if op.kind == "inplace":
            notes.append("in-place")
        if not op.grad_enabled and op.kind != "requires_grad":
            notes.append("no_grad")
        if op.inference_mode:
            notes.append("inference_mode")
        if op.kind == "detach":
            notes.append("cuts the graph")
        if notes:
            rows.append(f'<FONT POINT-SIZE="9"><I>{html_text(", ".join(notes), None)}</I></FONT>')
        if op.line is not None:
            rows.append(f'<FONT POINT-SIZE="8">{html_text(op.line.short())}</FONT>')
        dashed = op.kind in ("detach", "requires_grad") or not op.grad_enabled
        line = f"  {name} " + dot_attributes(
            id=f"{self.prefix}_{name}",
            class_=f"gv_op gv_op_{op.kind}",
            shape="box" if op.kind == "requires_grad" else "ellipse",
            style="dashed,rounded" if dashed else "solid",
            color=self.theme.edge,
            fontcolor=self.theme.text,
            label="<" + "<BR/>".join(rows) + ">",
            tooltip=op.line.text if op.line is not None else op.name,
            height=0.3,
            margin="0.06,0.02",
        )
        return self._mark(line + ";", name)

    def _scalar_line(self, name: str, text: str) -> str:
        return (
            f"  {name} "
            + dot_attributes(
                id=f"{self.prefix}_{name}",
                class_="gv_scalar gv_constant",
                shape="box",
                label=f'<<FONT POINT-SIZE="9">{html_text(text)}</FONT>>',
                height=0.25,
                width=0.3,
                margin="0.05,0.02",
                **self._style(self.theme.constant),
            )
            + ";"
        )

    def _module_box(
        self, name: str, index: int, cluster: int | None, css: str, note: str = ""
    ) -> None:
        scope = self.data.modules[index]
        label = (
            f"<<B>{html_text(scope.path or scope.type_name)}</B><BR/>"
            f'<FONT POINT-SIZE="9">{html_text(scope.type_name)}</FONT>'
        )
        if note:
            label += f'<BR/><FONT POINT-SIZE="8"><I>{html_text(note)}</I></FONT>'
        label += ">"
        line = f"  {name} " + dot_attributes(
            id=f"{self.prefix}_{name}",
            class_=css,
            shape="box3d",
            label=label,
            tooltip=tooltip(scope.path or scope.type_name, scope.type_name),
            color=self.theme.edge,
            fontcolor=self.theme.text,
        )
        self.cluster_lines[cluster].append(self._mark(line + ";", name))

    def _box_line(self, made: _Box) -> str:
        """A tensor box as the tensor was at its moment (``made.state``): its role's colour
        and value. In the combined view a tensor the graph has a record of (a root, a leaf, a
        named tensor) shows the whole table (data, grad, grad_fn, is_leaf, requires_grad) in
        its last state drawn (with the record's id), and in each earlier state that stood
        otherwise on the graph (``standing_differs``); an earlier version an in-place op replaced
        stays a compact box, as it was, so pages of in-place models keep their weight."""
        tensor = made.tensor
        moment = made.state
        role = tensor.role if moment is None else moment.role
        style = self._style(self.theme.role(role))
        last = self.last_state.get(tensor.id)
        has_record = self.show_backward and tensor.id in self.records_by_ftensor
        if made.record is not None or (
            has_record
            and moment is not None
            and last is not None
            and standing_differs(moment, last)
        ):
            shown = as_record(made, self.data)
            label = "<" + tensor_table(shown, self.options.shapes) + ">"
            element = made.name if made.record is None else made.record.id
            line = f"  {made.name} " + dot_attributes(
                id=f"{self.prefix}_{element}",
                class_=f"gv_tensor gv_{role.value}",
                shape="box",
                label=label,
                tooltip=tooltip(shown.label, shown.grad_fn),
                **style,
            )
            line = self._mark(line + ";", element)
            return self._mark(line, tensor.id) if made.record is not None else line
        whole = self.data.label(tensor.id)
        title = html_text(whole)
        text = f"<B>{title}</B>" if tensor.name else f"<I>{title}</I>"
        changed = (tensor.id, made.version) in self.bumped
        if changed:
            text += f' <FONT POINT-SIZE="9">v{made.version}</FONT>'
        value = tensor.data if moment is None else moment.data
        if self.options.shapes and value is not None:
            shown_value = "changed in place" if changed and moment is None else box_value(value)
            text += f'<BR/><FONT POINT-SIZE="9">{html_text(shown_value, None)}</FONT>'
        line = f"  {made.name} " + dot_attributes(
            id=f"{self.prefix}_{made.name}",
            class_=f"gv_ftensor gv_{role.value}",
            shape="box",
            label=f"<{text}>",
            tooltip=tooltip(whole),
            **style,
        )
        return self._mark(line + ";", made.name)

    # -- the backward side --------------------------------------------------------------------
    def _backward_side(self) -> None:
        for node in self.graph.nodes:  # first: a root's link goes to the box holding its node
            _, box = self._group(self.data.node_modules.get(node.id))
            if box is not None:
                self.node_group[node.id] = f"bm{box}"
        if not self.show_forward:
            self._roots()
        collapsed_seen: set[int] = set()
        inside = {} if self.collapse is None else collapsed_members(self.graph, self.collapse)
        params = self._parameters_inside(inside)
        for node in self.graph.nodes:
            module = self.data.node_modules.get(node.id)
            cluster, collapsed = self._group(module)
            if collapsed is not None:
                name = f"bm{collapsed}"
                self.node_group[node.id] = name
                if collapsed not in collapsed_seen:
                    collapsed_seen.add(collapsed)
                    count = len(inside.get(collapsed, ()))
                    note = f"{count} node{'s' if count != 1 else ''} inside"
                    if params.get(collapsed):
                        note += f", {params[collapsed]} parameter{'s' * (params[collapsed] > 1)}"
                    self._module_box(name, collapsed, cluster, "gv_bmodule", note)
                continue
            before = len(self.lines)
            self._node(node)
            written = self.lines[before:]
            del self.lines[before:]
            self.cluster_lines[cluster].extend(self._mark(w, node.id) for w in written)
        links = [] if self.show_forward else self._leaf_boxes()
        self._emit_clusters("b")
        self.lines.extend(links)
        self.offgraph = self._offgraph_args()
        merged: dict[tuple[str, str], list[Edge]] = {}
        for edge in self.graph.edges:
            src = self.node_group.get(edge.src)
            dst = None if edge.dst is None else self.node_group.get(edge.dst)
            if src is None and dst is None:
                self._edge(edge)
                continue
            if edge.dst is None or (src or edge.src) == (dst or edge.dst):
                continue  # inside one box, or a None slot of a node drawn inside a box
            merged.setdefault((src or edge.src, dst or edge.dst), []).append(edge)
        for (src_name, dst_name), edges in merged.items():
            self._group_edge(src_name, dst_name, edges)

    def _parameters_inside(self, inside: dict[int, list[str]]) -> dict[int, int]:
        """Collapsed module -> how many leaves (parameters) feed nodes inside its box."""
        box_of = {node: module for module, nodes in inside.items() for node in nodes}
        counts: dict[int, int] = defaultdict(int)
        for record in self.graph.tensors:
            if record.role is Role.LEAF and not record.is_root and record.node_id in box_of:
                counts[box_of[record.node_id]] += 1
        return counts

    def _leaf_boxes(self) -> list[str]:
        """Leaf tensors (parameters) go with their module: drawn in its cluster, or left out
        when it is one box (its label counts them); returns the links, to write after the
        clusters. Drawn apart, every parameter landed in one far row with long edges."""
        links: list[str] = []
        for record in self.graph.tensors:
            if record.is_root or record.role is not Role.LEAF or record.node_id is None:
                continue
            if record.node_id in self.node_group:
                continue  # inside a collapsed module: counted in its box
            before = len(self.lines)
            self._tensor_box(record, compact=True)
            written = self.lines[before:]
            del self.lines[before:]
            if not written:
                continue
            cluster, _ = self._group(self.data.node_modules.get(record.node_id))
            self.cluster_lines[cluster].append(written[0])
            links.extend(written[1:])
        return links

    def _group_edge(self, src: str, dst: str, edges: list[Edge]) -> None:
        """One edge into, out of or between collapsed boxes for the graph ``edges`` it merges.

        It takes the id of the merged edge whose gradient flows first (``edge_labels`` is
        in flow order, as ``gradviz.replay.frames.replay_options`` builds it), so the replay
        reveals it then; its label is that gradient, "+k more" when others merge into it.
        """
        order = {key: i for i, key in enumerate(self.options.edge_labels)}
        flowing = sorted((e for e in edges if e.key in order), key=lambda e: order[e.key])
        first = flowing[0] if flowing else edges[0]
        text = self.options.edge_labels.get(first.key)
        if text and len(flowing) > 1:
            text += f" +{len(flowing) - 1} more"
        self.lines.append(
            f"  {src} -> {dst} "
            + dot_attributes(
                id=f"{self.prefix}_e_{first.src}_{first.slot}",
                class_="gv_edge gv_merged" if len(edges) > 1 else "gv_edge",
                label=self._grad_label(text),
            )
            + ";"
        )

    def _tensor_box(self, record: TensorRecord, compact: bool) -> None:
        before = len(self.lines)
        super()._tensor_box(record, compact)
        node_id = record.node_id
        group = None if node_id is None else self.node_group.get(node_id)
        if group is not None:
            for index in range(before, len(self.lines)):
                self.lines[index] = self.lines[index].replace(f" {node_id} ", f" {group} ")
                self.lines[index] = self.lines[index].replace(f" {node_id};", f" {group};")
        if before < len(self.lines):
            self.lines[before] = self._mark(self.lines[before], record.id)


def box_value(data: Summary) -> str:
    """A forward box's second line: the shape apart from the values, ``shape 3 · [1, 2, 3]``
    (a bare ``3 [1, 2, 3]`` reads as four numbers); a scalar is just its value."""
    if not data.shape:
        return data.text(40)
    shape = f"shape {data.shape_text()}"
    return f"{shape} · {shaped_text(data, 40)}" if data.complete else shape
