"""The watched combined view's links between its two sides: each tensor box to its
``grad_fn`` (a leaf's ``AccumulateGrad`` to the box of ``.grad``), each off-graph constant to
the ``None`` slot it left, and backward edges pointing up beside the forward pass.

``_LinkWriter`` is the base of ``render.watched``'s writer; when the sides are laid out
apart (``render.sidebyside``) each link is also kept as a ``LinkSpec`` for gradviz to draw.
Pure string building: no torch, no subprocess.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradviz.model.forward import FOp, Forward, FTensor, TensorState
from gradviz.model.graph import Edge, Node, TensorRecord
from gradviz.model.values import Role
from gradviz.render.dot import _DotWriter, html_text
from gradviz.render.dot_header import dot_attributes

__all__ = ["CombinedSides", "LinkSpec"]


@dataclass(frozen=True)
class LinkSpec:
    """A link between the combined view's sides, drawn by gradviz (``render.sidebyside``)."""

    src: str  # DOT node names
    dst: str
    id: str
    css_class: str
    color: str
    dash: str
    arrow: bool
    label: str | None  # the gradient it shows, plain text


@dataclass(frozen=True)
class CombinedSides:
    """The watched combined view as the DOT of each side and the links between them."""

    full: str  # the whole view in one DOT (no side clusters): ids and forward-frame timing
    forward: str
    backward: str
    links: tuple[LinkSpec, ...]


@dataclass(frozen=True)
class _Box:
    """One state of one forward tensor (``TensorState``: a version, requires_grad, ...),
    as drawn."""

    name: str  # DOT node name
    tensor: FTensor
    version: int
    record: TensorRecord | None  # the graph's record when this box is its last state drawn
    state: TensorState | None = None  # how the tensor was then

    @property
    def role(self) -> Role:
        """The role the box is drawn in: the tensor's at the box's moment."""
        return self.tensor.role if self.state is None else self.state.role


class _LinkWriter(_DotWriter):
    """The links of the combined view; ``render.watched._Writer`` fills the attributes."""

    data: Forward
    show_forward: bool
    node_group: dict[str, str]  # backward node id -> collapsed box name
    nodes_by_seq: dict[int, Node]
    offgraph: dict[tuple[str, int], tuple[str, int]]

    def _edge_drawn(self, edge: Edge) -> None:
        """Backward edges; beside the forward pass they point up, as in the lessons."""
        before = len(self.lines)
        super()._edge(edge)
        for index in range(before, len(self.lines)):
            if " -> " in self.lines[index]:
                self.lines[index] = self._mark(self.lines[index], edge.key)
        if not self.show_forward:
            return
        for index in range(before, len(self.lines)):
            line = self.lines[index]
            head, sep, rest = line.partition(" -> ")
            if not sep:
                continue
            dst, _, attributes = rest.partition(" [")
            self.lines[index] = f'  {dst} -> {head.strip()} [dir="back" {attributes}'

    def _mark(self, line: str, key: str) -> str:
        """An element's line as drawn; ``render.watched._Writer`` outlines marked ones."""
        return line

    # -- links between the sides ------------------------------------------------------------
    def _links(self, boxes: dict[tuple[str, int], _Box]) -> None:
        ops = self.data.replayed
        drawn = {line.split()[0] for line in self.lines if line.startswith("  ")}
        leaves, made_by = self._leaf_nodes(), self._made_by(ops)
        for (tensor_id, _), made in boxes.items():
            if made.name not in drawn:
                continue
            target, leaf = self._node_of(made, tensor_id, made.version, leaves, made_by)
            if target is None:
                continue
            target = self.node_group.get(target, target)
            role = self.theme.role(made.role)
            record = made.record
            link_id = f"l_{record.id}" if record is not None else f"l_{made.name}"
            label = (
                None
                if record is None
                else self._grad_label(self.options.link_labels.get(record.id))
            )
            attributes = dot_attributes(
                id=f"{self.prefix}_{link_id}",
                class_="gv_link",
                style="dashed",
                color=role.border,
                constraint="false" if leaf else "true",
                minlen=0,
                label=label,
            )
            if leaf:
                self.lines.append(f"  {target} -> {made.name} {attributes};")
            else:
                self.lines.append(f"  {made.name} -> {target} {attributes};")
            self._spec(
                LinkSpec(
                    src=target if leaf else made.name,
                    dst=made.name if leaf else target,
                    id=f"{self.prefix}_{link_id}",
                    css_class="gv_link",
                    color=role.border,
                    dash="5,2",
                    arrow=True,
                    label=None if record is None else self.options.link_labels.get(record.id),
                )
            )
        self._constant_links(boxes)

    def _node_of(
        self,
        made: _Box,
        tensor_id: str,
        version: int,
        leaves: dict[str, str | None],
        made_by: dict[tuple[str, int], str],
    ) -> tuple[str | None, bool]:
        """The backward node a tensor box feeds: its grad_fn, or a leaf's AccumulateGrad."""
        record = made.record
        if record is not None and record.node_id is not None:
            return record.node_id, record.role is Role.LEAF and not record.is_root
        if made.role is Role.LEAF:
            if tensor_id in leaves:
                return leaves[tensor_id], True
            return None, False
        return made_by.get((tensor_id, version)), False

    def _leaf_nodes(self) -> dict[str, str | None]:
        """Forward tensor id -> the node of the first graph record linked to it (looked up
        once per view: a scan of the records per box made a view's links quadratic)."""
        found: dict[str, str | None] = {}
        for graph_record in self.graph.tensors:
            linked = self.data.tensor_links.get(graph_record.id)
            if linked is not None and linked not in found:
                found[linked] = graph_record.node_id
        return found

    def _made_by(self, ops: list[FOp]) -> dict[tuple[str, int], str]:
        """(forward tensor id, version) -> the backward node of the first op whose output it
        is, where that node is drawn."""
        found: dict[tuple[str, int], str] = {}
        for op in ops:
            for out, out_version, seq in zip(
                op.outputs, op.output_versions, op.grad_fn_seqs, strict=True
            ):
                node = None if seq is None else self.nodes_by_seq.get(seq)
                if node is not None:
                    found.setdefault((out, out_version or 0), node.id)
        return found

    def _offgraph_args(self) -> dict[tuple[str, int], tuple[str, int]]:
        """(node id, slot) of each None slot -> the off-graph tensor input (id, state index:
        the box drawn for it) that left it: an op's None slots and its tensor inputs that
        did not require grad as it read them, in order."""
        found: dict[tuple[str, int], tuple[str, int]] = {}
        for op in self.data.replayed:
            if op.seq_end <= op.seq_start:
                continue
            nodes: list[Node] = [  # the op's nodes (linear: AddmmBackward0, ViewBackward0)
                self.nodes_by_seq[seq]
                for seq in range(op.seq_start, op.seq_end)
                if seq in self.nodes_by_seq
            ]
            if not nodes or any(node.id in self.node_group for node in nodes):
                continue
            read = [
                (a.tensor, self.data.state_at(a.tensor, op.index, False))
                for a in op.inputs
                if a.tensor is not None
            ]
            constants = [
                (tensor_id, state)
                for tensor_id, state in read
                if not _requires_grad(self.data.tensor(tensor_id), state)
            ]
            slots = [e for n in nodes for e in self.graph.out_edges(n.id) if e.dst is None]
            if constants and len(slots) == len(constants):
                for slot_edge, arg in zip(slots, constants, strict=True):
                    found[(slot_edge.src, slot_edge.slot)] = arg
        return found

    def _edge(self, edge: Edge) -> None:
        """A None slot left by a named off-graph input says whose it is: ``None · d``."""
        before = len(self.lines)
        self._edge_drawn(edge)
        if edge.dst is not None:
            return
        arg = self.offgraph.get((edge.src, edge.slot))
        name = None if arg is None else self.data.tensor(arg[0]).name
        if not name:
            return
        marker = '<FONT POINT-SIZE="9">None</FONT>'
        for index in range(before, len(self.lines)):
            if marker in self.lines[index]:
                text = f"None · {html_text(name)}"
                self.lines[index] = self.lines[index].replace(
                    marker, f'<FONT POINT-SIZE="9">{text}</FONT>', 1
                )
                break

    def _constant_links(self, boxes: dict[tuple[str, int], _Box]) -> None:
        """An off-graph tensor input left a None slot in its op's node: link the two."""
        for (src, slot), arg in self.offgraph.items():
            made = boxes.get(arg)
            if made is None:
                continue
            self.lines.append(
                f"  {made.name} -> c_{src}_{slot} "
                + dot_attributes(
                    id=f"{self.prefix}_k_{src}_{slot}",
                    class_="gv_constlink",
                    style="dotted",
                    arrowhead="none",
                    constraint="false",
                    color=self.theme.constant.border,
                )
                + ";"
            )
            self._spec(
                LinkSpec(
                    src=made.name,
                    dst=f"c_{src}_{slot}",
                    id=f"{self.prefix}_k_{src}_{slot}",
                    css_class="gv_constlink",
                    color=self.theme.constant.border,
                    dash="1,4",
                    arrow=False,
                    label=None,
                )
            )

    def _spec(self, spec: LinkSpec) -> None:
        """Keep a link's drawing data when the sides are laid out apart (``sides``)."""
        specs: list[LinkSpec] | None = getattr(self, "link_specs", None)
        if specs is not None:
            specs.append(spec)


def _requires_grad(tensor: FTensor, state: int) -> bool:
    """Whether the tensor required grad in that state (at the end, for data without)."""
    if not tensor.states:
        return tensor.requires_grad
    return tensor.states[state].requires_grad
