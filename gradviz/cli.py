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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from gradviz.errors import GradvizError
from gradviz.objects import Recording, record
from gradviz.render.theme import THEMES

__all__ = ["main"]

EXAMPLES = """\
examples:
  gradviz render model.py                      # last scalar tensor with a graph -> out/
  gradviz render model.py --root loss --view combined -o slides/
  gradviz render model.py --steps --html       # plus one SVG per step and an offline replay
  gradviz render model.py --format png --theme colorblind --direction left-right
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
    render.add_argument("--view", choices=("backward", "combined"), default="backward")
    render.add_argument("--format", choices=("svg", "png", "pdf", "dot", "json"), default="svg")
    render.add_argument("-o", "--out", type=Path, default=Path("out"), help="output folder")
    render.add_argument("--steps", action="store_true", help="also one SVG per backward step")
    render.add_argument("--html", action="store_true", help="also an offline HTML replay")
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

            return demo_main([str(args.out)])
        return _render(args)
    except CliError as error:
        print(f"gradviz: {error}", file=sys.stderr)
        return error.code
    except GradvizError as error:
        print(f"gradviz: {error}", file=sys.stderr)
        return 1


def _say(message: str) -> None:
    print(message, flush=True)


def _render(args: argparse.Namespace) -> int:
    script: Path = args.script
    if not script.is_file():
        raise CliError(f"no such script: {script} (give the path of a .py file)")
    script_args: list[str] = args.script_args
    started = time.perf_counter()
    _say(f"==> running {script}")
    namespace, recordings = _run_script(script, script_args)
    root, name = _choose_root(namespace, args.root)
    names, params = _names_from(namespace)
    recording = next((r for r in reversed(recordings) if _root_of(r) is root), None)
    if recording is None:
        _say(f"==> recording the backward pass of {name!r}")
        recording = record(root, names=names, params=params)
    else:
        _say(f"==> recorded the script's own backward of {name!r}")
        _apply_names(recording, names, params)
    _say(f"    {len(recording.graph.nodes)} nodes, {len(recording.steps)} steps")
    written = _write(recording, args, script.stem)
    for path in written:
        if not path.name.startswith("step-"):
            _say(f"  wrote {path}")
    steps = [p for p in written if p.name.startswith("step-")]
    if steps:
        _say(f"  wrote {len(steps)} step SVGs in {steps[0].parent}/")
    _say(f"==> {len(written)} files in {args.out}/ ({time.perf_counter() - started:.1f} s)")
    return 0


def _root_of(recording: Recording) -> torch.Tensor | None:
    roots = [t.tensor for t in recording.graph.tensors if t.is_root]
    return roots[0] if roots else None


@contextmanager
def _recorded_backward(recordings: list[Recording]) -> Iterator[None]:
    """While the script runs, its backward calls (``tensor.backward()`` and
    ``torch.autograd.backward(...)``, which the former calls) are recorded, then restored."""
    original = torch.autograd.backward
    busy = False  # record() itself calls torch.autograd.backward: that call runs as is

    def backward(
        tensors: Any,
        grad_tensors: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        grad_variables: Any = None,
        inputs: Any = None,
    ) -> None:
        nonlocal busy
        roots = (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors)
        plain = busy or not roots or not all(isinstance(t, torch.Tensor) for t in roots)
        if plain or isinstance(inputs, dict):  # gradient edges and the like: not drawn
            original(tensors, grad_tensors, retain_graph, create_graph, grad_variables, inputs)
            return
        busy = True
        try:
            recordings[:] = [
                record(
                    *roots,
                    gradient=grad_tensors if grad_tensors is not None else grad_variables,
                    retain_graph=retain_graph,
                    create_graph=create_graph,
                    inputs=inputs,
                )
            ]
        finally:
            busy = False

    torch.autograd.backward = backward
    try:
        yield
    finally:
        torch.autograd.backward = original


def _run_script(script: Path, script_args: list[str]) -> tuple[dict[str, Any], list[Recording]]:
    recordings: list[Recording] = []
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *script_args]
    sys.path.insert(0, str(script.parent.resolve()))
    try:
        with _recorded_backward(recordings):
            namespace = runpy.run_path(str(script), run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise CliError(f"{script} exited with status {stop.code}", code=1) from None
        raise CliError(
            f"{script} called sys.exit() before gradviz could look at its "
            "tensors; let it run to the end",
            code=1,
        ) from None
    except Exception:
        trace = traceback.format_exc()
        print(trace, file=sys.stderr, end="")
        raise CliError(
            f"{script} raised the error above. gradviz needs a script that runs to the end "
            f"with `python {script}`; fix the error and try again.",
            code=1,
        ) from None
    finally:
        sys.argv, sys.path = saved_argv, saved_path
    return namespace, recordings


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


def _names_from(
    namespace: dict[str, Any],
) -> tuple[dict[str, torch.Tensor], list[tuple[str, Any]]]:
    names = {
        k: v for k, v in namespace.items() if isinstance(v, torch.Tensor) and not k.startswith("_")
    }
    params = []
    for module_name, module in namespace.items():
        if isinstance(module, torch.nn.Module) and not module_name.startswith("_"):
            params += [(f"{module_name}.{p}", t) for p, t in module.named_parameters()]
    return names, params


def _apply_names(
    recording: Recording, names: dict[str, torch.Tensor], params: list[tuple[str, Any]]
) -> None:
    """Name the tensors of a backward recorded while the script ran, as it named them."""
    by_identity = {id(t): n for n, t in params}
    by_identity.update({id(t): n for n, t in names.items()})
    for record_ in recording.graph.tensors:
        if record_.name is None and record_.tensor is not None:
            record_.name = by_identity.get(id(record_.tensor))


def _write(recording: Recording, args: argparse.Namespace, stem: str) -> list[Path]:
    out: Path = args.out
    options = {"view": args.view, "theme": args.theme, "direction": args.direction}
    graph = recording.graph
    written = []
    if args.format == "json":
        written.append(recording.save(out / f"{stem}.json"))
    else:
        written.append(graph.save(out / f"{stem}.{args.format}", **options))
    if args.steps:
        _say(f"==> one SVG per step ({len(recording.steps) + 1} frames)")
        written += recording.save_steps(out / f"{stem}-steps", **options)
    if args.html:
        written.append(recording.save(out / f"{stem}.html", **options))
    return written


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
