"""The command line: render a user's script's autograd graph without editing the script.

``gradviz render model.py --root loss --view combined -o out/`` runs the script, records
the backward pass of the chosen root and writes the files. When the script calls
``backward()`` itself, that very call is recorded (with hooks that only look), so a
training step that goes on to ``optimizer.step()`` still renders as it ran.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import time
import traceback
from collections.abc import Sequence
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import torch

from gradviz.cli.capture import Capture, names_in, params_in
from gradviz.cli.output import OutputError, fitted_dot, png_size, svg_scale, writable_folder
from gradviz.cli.terminal import EscapedStream, terminal_text
from gradviz.cli.training import ScriptTraining
from gradviz.errors import GradvizError
from gradviz.export.files import write_file
from gradviz.objects import OptimizerStep, Recording, record
from gradviz.render.theme import THEMES

__all__ = ["PNG_MAX_SIZE", "main"]

# PNGs are scaled down to fit this many pixels on their longer side by default: a slide
# holds it, and Graphviz would clamp bitmaps at 32,767 px without a word
PNG_MAX_SIZE = 4096

EXAMPLES = """\
examples:
  gradviz render model.py                      # last scalar tensor with a graph -> out/
  gradviz render model.py --root loss --view combined -o slides/
  gradviz render model.py --steps --html       # plus one SVG per step and an offline replay
  gradviz render model.py --format png --theme colorblind --direction left-right
  gradviz render train.py --call 1 --html      # the first backward() of a training loop
  gradviz render model.py --pdf --pptx         # lecture slides: one page/slide per frame
  gradviz render train.py --collapse-depth 1 --format png --max-size 1920
  gradviz render train.py --training           # every step's gradient norms: a film strip
  gradviz demo out/                            # the built-in lessons and a gallery
"""


class CliError(Exception):
    """A problem the user can fix; printed without a traceback."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gradviz",
        description="Draw what PyTorch autograd really does: backward graphs and replays.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    render = commands.add_parser(
        "render",
        help="run a script and render the backward pass of one of its tensors",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    render.add_argument("script", type=Path, help="the Python script to run, unmodified")
    render.add_argument(
        "--root",
        help="name of the tensor to record (default: the last "
        "scalar tensor with a graph the script defines)",
    )
    render.add_argument(
        "--call",
        type=int,
        metavar="N",
        help="record the script's N-th backward() call (from 1) and run the others as plain "
        "PyTorch; default: the last call (then every call is recorded, to know the last)",
    )
    render.add_argument("--view", choices=("backward", "forward", "combined"), default="backward")
    render.add_argument("--format", choices=("svg", "png", "pdf", "dot", "json"), default="svg")
    render.add_argument("-o", "--out", type=Path, default=Path("out"), help="output folder")
    render.add_argument(
        "--modules", action="store_true", help="cluster the graph by the nn.Module that ran it"
    )
    render.add_argument(
        "--collapse-depth",
        type=int,
        metavar="D",
        help="draw each module D deep (0: the top-level ones) as one box (implies --modules)",
    )
    render.add_argument(
        "--fold", action="store_true", help="draw runs of identical blocks once, as 'N x block'"
    )
    render.add_argument(
        "--max-size",
        type=int,
        metavar="PX",
        help="scale the drawing (SVG or PNG) down to fit PX pixels on its longer side, and "
        f"say so (default: {PNG_MAX_SIZE} for PNG, none for SVG; 0: no limit)",
    )
    render.add_argument(
        "--no-watch",
        action="store_true",
        help="record without gradviz.watch(): no forward frames or module views, less overhead",
    )
    render.add_argument(
        "--no-optimizer-step",
        action="store_true",
        help="do not record the optimizer.step() after the recorded backward (it copies "
        "every parameter twice)",
    )
    render.add_argument(
        "--training",
        action="store_true",
        help="instead of one backward pass, keep every training step's gradient norms, loss, "
        "learning rate and update sizes (gradviz.watch_training) and write the film strip "
        "page NAME-training.html and NAME-training.json",
    )
    render.add_argument("--steps", action="store_true", help="also one SVG per backward step")
    render.add_argument("--html", action="store_true", help="also an offline HTML replay")
    render.add_argument(
        "--pdf", action="store_true", help="also lecture slides: one PDF page per frame"
    )
    render.add_argument(
        "--pptx", action="store_true", help="also a PowerPoint deck: one slide per frame"
    )
    render.add_argument("--theme", choices=sorted(THEMES), default="default")
    render.add_argument("--direction", choices=("top-down", "left-right"), default="top-down")
    demo = commands.add_parser("demo", help="render the built-in lessons and a gallery")
    demo.add_argument("out", nargs="?", type=Path, default=Path("out"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in given:  # everything after -- goes to the user's script
        cut = given.index("--")
        given, script_args = given[:cut], given[cut + 1 :]
    args = _parser().parse_args(given)
    args.script_args = script_args
    try:
        if args.command == "demo":
            from gradviz.teaching.gallery import main as demo_main

            with redirect_stdout(EscapedStream(sys.stdout)):  # it prints the folder's name
                return demo_main([str(args.out)])
        return _render(args)
    except CliError as error:
        _complain(f"gradviz: {error}")
        return error.code
    except GradvizError as error:
        _complain(f"gradviz: {error}")
        return 1


def _say(message: str) -> None:
    """A line on standard output; the names in it escaped (``terminal_text``)."""
    print(terminal_text(message), flush=True)


def _complain(message: str) -> None:
    """A message on standard error; the names in it escaped (``terminal_text``)."""
    print(terminal_text(message), file=sys.stderr, flush=True)


def _render(args: argparse.Namespace) -> int:
    script: Path = args.script
    if not script.is_file():
        raise CliError(f"no such script: {script} (give the path of a .py file)")
    _check_options(args)
    try:  # before the script runs: a script may train for minutes, then change directory
        args.out = writable_folder(args.out)
    except OutputError as error:
        raise CliError(str(error)) from None
    if args.training:
        return _render_training(script, args)
    if args.format != "json" or args.steps or args.html or args.pdf or args.pptx:
        _check_graphviz()
    started = time.perf_counter()
    _say(f"==> running {script}")
    capture = Capture(call=args.call, watched=not args.no_watch, steps=not args.no_optimizer_step)
    namespace, code = _run_script(script, args.script_args, capture)
    if code != 0:
        return code
    recording = _chosen_recording(namespace, capture, args.root)
    _say(f"    {len(recording.graph.nodes)} nodes, {len(recording.steps)} steps")
    written = _write(recording, args, script.stem)
    if capture.optimizer_step is not None and recording is capture.recording:
        written.append(_optimizer_step(capture.optimizer_step, args.out, script.stem))
    for path in written:
        if not path.name.startswith(("step-", "forward-")):
            _say(f"  wrote {path}")
    steps = [p for p in written if p.name.startswith(("step-", "forward-"))]
    if steps:
        _say(f"  wrote {len(steps)} step SVGs in {steps[0].parent}/")
    _say(f"==> {len(written)} files in {args.out}/ ({time.perf_counter() - started:.1f} s)")
    return 0


def _render_training(script: Path, args: argparse.Namespace) -> int:
    """``--training``: run the script with its first optimizer watched; write the page."""
    started = time.perf_counter()
    _say(f"==> running {script} (watching its training loop)")
    training = ScriptTraining()
    _, code = _run_script(script, args.script_args, training)
    if code != 0:
        return code
    run = training.run
    if run is None:
        raise CliError(
            f"{script} never called optimizer.step(): --training watches a training loop "
            "(loss.backward(); optimizer.step())"
        )
    model = training.model_name or "the optimizer's parameters"
    _say(f"    {len(run)} training steps of {model}, {len(run.params)} parameter tensors")
    bad = run.first_nonfinite()
    if bad is not None:
        where = ", ".join(bad.params) or "the loss"
        _say(f"    first non-finite value: step {bad.step} ({where})")
    written = [
        run.save(args.out / f"{script.stem}-training.html", title=f"{script.name}: training"),
        run.save(args.out / f"{script.stem}-training.json"),
    ]
    for path in written:
        _say(f"  wrote {path}")
    _say(f"==> {len(written)} files in {args.out}/ ({time.perf_counter() - started:.1f} s)")
    return 0


def _check_options(args: argparse.Namespace) -> None:
    if args.call is not None and args.call < 1:
        raise CliError(f"--call {args.call}: backward calls count from 1 (the first)")
    if args.collapse_depth is not None:
        if args.collapse_depth < 0:
            raise CliError("--collapse-depth counts from 0 (the top-level modules)")
        args.modules = True
    if args.fold and args.view != "backward":
        raise CliError("--fold draws the backward graph; use it with --view backward")
    if args.max_size is None:
        args.max_size = PNG_MAX_SIZE if args.format == "png" else 0
    if args.max_size < 0:
        raise CliError("--max-size is a number of pixels (0: no limit)")


def _check_graphviz() -> None:
    """Lay out a one-node graph: Graphviz must run before the script trains for minutes."""
    from gradviz.render.backend import run_dot

    try:
        run_dot('digraph { a [label="gradviz"] }', "svg")
    except GradvizError as error:
        raise CliError(f"Graphviz cannot run, so nothing could be drawn: {error}") from None


def _chosen_recording(
    namespace: dict[str, Any], capture: Capture, root_name: str | None
) -> Recording:
    """The recorded backward call, or (when the script ran none, or --root names another
    tensor) a new recording of the chosen root; says which it is."""
    recording = capture.recording
    if capture.call is not None and capture.calls < capture.call:
        raise CliError(
            f"--call {capture.call}: the script made {capture.calls} backward() "
            f"call{'s' if capture.calls != 1 else ''}; choose one of 1..{capture.calls}"
        )
    if recording is not None and root_name is not None and capture.root_name != root_name:
        recording = None  # --root names another tensor: record it anew, below
    if recording is not None:
        number, name = capture.call_recorded, capture.root_name or "its root"
        which = "the last" if number == capture.calls else f"--call {number}"
        where = f" at {capture.where}" if capture.where else ""
        _say(
            f"==> recorded backward() call {number} of {capture.calls} ({which}), "
            f"of {name!r}{where}"
        )
        if capture.call is None and capture.calls > 1:
            _say("    (--call N records only call N and runs the others as plain PyTorch)")
        return recording
    if root_name is None and capture.calls:
        raise CliError(
            f"the script made {capture.calls} backward() call(s), none of which could be "
            "recorded; name a tensor at the script's top level with --root"
        )
    root, name = _choose_root(namespace, root_name)
    names, params = names_in(namespace), params_in(namespace)
    _say(f"==> recording the backward pass of {name!r}")
    return record(root, names=names, params=params or None)


def _run_script(
    script: Path, script_args: list[str], capture: Capture | ScriptTraining
) -> tuple[dict[str, Any], int]:
    """Run the script as ``python script`` would: its namespace and its exit status."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *script_args]
    sys.path.insert(0, str(script.parent.resolve()))
    namespace: dict[str, Any] = {}
    try:
        with capture.running():
            namespace = runpy.run_path(str(script), run_name="__main__")
    except SystemExit as stop:
        if stop.code is None or stop.code == 0:
            return namespace, 0  # sys.exit(main()) after a good run: draw it
        if isinstance(stop.code, int):
            _complain(f"gradviz: {script} exited with status {stop.code}")
            return namespace, stop.code
        _complain(str(stop.code))
        return namespace, 1
    except Exception:
        _complain(traceback.format_exc().rstrip("\n"))
        raise CliError(
            f"{script} raised the error above. gradviz needs a script that runs to the end "
            f"with `python {script}`; fix the error and try again.",
            code=1,
        ) from None
    finally:
        sys.argv, sys.path = saved_argv, saved_path
    return namespace, 0


def _choose_root(namespace: dict[str, Any], name: str | None) -> tuple[torch.Tensor, str]:
    tensors = {k: v for k, v in namespace.items() if isinstance(v, torch.Tensor)}
    on_graph = [k for k, v in tensors.items() if v.requires_grad]
    if name is not None:
        if name not in tensors:
            raise CliError(
                f"the script defines no tensor named {name!r}; tensors with a graph: "
                f"{', '.join(on_graph) or 'none'}"
            )
        if not tensors[name].requires_grad:
            raise CliError(
                f"{name!r} is on no autograd graph (requires_grad=False); choose "
                f"one of: {', '.join(on_graph) or 'none'}"
            )
        return tensors[name], name
    scalars = [k for k in on_graph if tensors[k].numel() == 1 and tensors[k].grad_fn is not None]
    if not scalars:
        raise CliError(
            "found no scalar tensor with a graph at the script's top level; name one with "
            f"--root (tensors with a graph: {', '.join(on_graph) or 'none'})"
        )
    return tensors[scalars[-1]], scalars[-1]


def _write(recording: Recording, args: argparse.Namespace, stem: str) -> list[Path]:
    out: Path = args.out
    look = {"theme": args.theme, "direction": args.direction}
    views = {"view": args.view, **look}
    if args.modules:
        views.update(modules=True, collapse_depth=args.collapse_depth)
    graph = recording.graph
    written = []
    if args.modules and (graph.forward is None or not graph.forward.node_modules):
        _say("    (no module data: the script's modules were not watched; drawn without them)")
        views.pop("modules", None)
        views.pop("collapse_depth", None)
    if args.fold and args.format != "json":
        from gradviz.render.fold import fold_with_reason

        folded, why = fold_with_reason(graph)
        if folded is graph:
            _say(f"    --fold: nothing folded ({why}); drawn unfolded")
            args.fold = False  # said once here, not again as a warning from every view
    if args.format == "json":
        written.append(recording.save(out / f"{stem}.json"))
    elif args.format in ("dot", "pdf"):
        written.append(graph.save(out / f"{stem}.{args.format}", fold=args.fold, **views))
    else:
        written.append(_drawing(recording, out / f"{stem}.{args.format}", args, views))
    if args.steps:
        _say(f"==> one SVG per step ({len(recording.steps) + 1} frames)")
        written += recording.save_steps(out / f"{stem}-steps", **views)
    if args.html:
        written.append(recording.save(out / f"{stem}.html", **look))
    for suffix in ("pdf", "pptx"):
        if getattr(args, suffix):
            _say(f"==> slides: one {suffix.upper()} page per frame")
            written.append(recording.save(out / f"{stem}-slides.{suffix}", **views))
    return written


def _optimizer_step(step: OptimizerStep, out: Path, stem: str) -> Path:
    """Say what the recorded call's ``optimizer.step()`` did; its whole account as text."""
    ratios = [p.ratio for p in step.params if p.ratio is not None]
    skipped = sum(p.skipped for p in step.params)
    largest = f", largest update/weight {max(ratios):.3g}" if ratios else ""
    _say(
        f"==> then {step.settings.optimizer}.step() over {len(step.params)} parameters"
        f"{largest}"
        + (f", {skipped} skipped (.grad None)" if skipped else "")
        + (", on accumulated gradients (no zero_grad before)" if step.accumulated else "")
    )
    for note in step.notes:
        _say(f"    note: {note}")
    path = out / f"{stem}-optimizer-step.txt"
    return write_file(path, step.text() + "\n")


def _drawing(recording: Recording, path: Path, args: argparse.Namespace, views: Any) -> Path:
    """An SVG or PNG at most ``--max-size`` pixels on its longer side; says the scale."""
    from gradviz.render.backend import run_dot

    dot = fitted_dot(recording.graph.to_dot(fold=args.fold, **views), args.max_size)
    data = run_dot(dot, args.format)
    write_file(path, data)
    if args.format == "svg":
        scale = svg_scale(data.decode("utf-8"))
    elif args.max_size == 0 or max(png_size(data)) < args.max_size - 1:
        scale = 1.0
    else:  # at the limit: the SVG of the same DOT (the same layout) says by how much
        scale = svg_scale(run_dot(dot, "svg").decode("utf-8"))
    if scale < 0.999:
        _say(
            f"    scaled to {scale:.0%} to fit --max-size {args.max_size} px "
            "(--max-size 0: full size)"
        )
    return path


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
