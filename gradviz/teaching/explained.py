"""The gallery's answers to the questions users ask most (``make demo`` writes them into
``out/explained/``): why ``.grad`` is None, what backward holds in memory, vanishing
gradients, what changed between two runs, and what ``optimizer.step()`` did.

Each entry builds a small example with a fixed seed (so a second run writes the same
bytes), draws it and keeps the words gradviz says about it; notebook 12 tells the story.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from gradviz.export.files import write_file
from gradviz.objects import record, record_step, watch

__all__ = ["ENTRIES", "Explained", "explained_section", "render_explained"]

FOLDER = "explained"


@dataclass
class Explained:
    """One entry: what it shows, the files written (SVGs previewed, pages linked) and the
    text gradviz printed about it."""

    slug: str
    title: str
    about: str
    files: list[Path] = field(default_factory=list)
    text: str = ""
    wide: bool = False  # a long, flat drawing: previewed across the whole row


def _why_no_grad(folder: Path) -> Explained:
    done = Explained(
        "why-no-grad",
        "Why is my .grad None?",
        "w.why_no_grad(x, loss) under gradviz.watch(): x.detach() cut the path from the loss "
        "to x (the cut, highlighted); and a computed h, reached along the highlighted path, "
        "that keeps no .grad without retain_grad().",
    )
    torch.manual_seed(0)
    with watch() as w:
        x = torch.randn(3, requires_grad=True)
        weight = torch.randn(3, requires_grad=True)
        h = x.detach() * 2
        loss = (h * weight).sum()
    cut = w.why_no_grad(x, loss)
    with watch() as w:
        x = torch.randn(3, requires_grad=True)
        h = torch.tanh(x) * 2
        loss = (h * h).sum()
    path = w.why_no_grad(h, loss)
    done.files += [cut.save(folder / "why-no-grad.svg"), path.save(folder / "why-path.svg")]
    done.text = f"{cut}\n\n{path}"
    return done


def _memory(folder: Path) -> Explained:
    done = Explained(
        "memory",
        "Memory in backward, and the second backward",
        "rec.memory(): the bytes each node's saved tensors hold, freed as backward passes "
        "them; the replay page's panel shows the running total and its peak.",
    )
    torch.manual_seed(0)
    x = torch.randn(256, requires_grad=True)
    weight = torch.randn(256, 64, requires_grad=True)
    y = x.exp()
    z = torch.tanh(y @ weight)
    loss = z.pow(2).sum()
    names = {"x": x, "weight": weight, "y": y, "z": z, "loss": loss}
    recording = record(loss, names=names)
    memory = recording.memory()
    rows = [
        f"step {s.index:>2}: saved {s.saved:>6} B held, freed {s.freed:>6} B, total {s.total:>6} B"
        for s in memory.steps
    ]
    peak = folder / "memory-peak.svg"  # the replay at the peak: which nodes have run
    write_file(peak, recording.svg(step=memory.peak_step))
    done.files += [peak, recording.save(folder / "memory.html", title="gradviz · memory")]
    done.text = "\n".join(
        [*rows, f"peak {memory.peak} B at step {memory.peak_step}", "",
         memory.explain_second_backward()]
    )  # fmt: skip
    return done


def _health(folder: Path) -> Explained:
    done = Explained(
        "health",
        "Vanishing gradients: eight sigmoid layers",
        "rec.svg(health=True): each edge's width by log10 of its gradient's norm, vanishing "
        "gradients (under 1e-6) in the node colour; the per-layer norms below.",
    )
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(8):
        layers += [torch.nn.Linear(8, 8), torch.nn.Sigmoid()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(8, 1))
    recording = record(model(torch.randn(16, 8)).pow(2).mean(), params=model)
    health = recording.health()
    path = folder / "health.svg"
    write_file(path, recording.svg(health=True, direction="left-right"))
    done.files.append(path)
    done.wide = True
    done.text = "\n".join(f"layer {m.module}: ‖grad‖ = {m.norm:.2e}" for m in health.modules) + (
        f"\n{len(health.band('vanishing'))} edges in the vanishing band"
    )
    return done


def _diff(folder: Path) -> Explained:
    done = Explained(
        "diff",
        "Two runs side by side: with and without a detach()",
        "a.diff(b): run B detaches the hidden layer and doubles the loss; the nodes only "
        "one run has are highlighted, and each edge whose gradient changed is labelled "
        "with ‖B‖/‖A‖.",
    )
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    data = torch.randn(5, 3)
    a = record(net(data).pow(2).mean(), params=net)
    net.zero_grad()
    b = record(net[2](net[1](net[0](data)).detach()).pow(2).mean() * 2, params=net)
    diff = a.diff(b)
    done.files += [diff.save(folder / "diff.svg"), diff.save(folder / "diff.html")]
    done.text = diff.summary_text()
    return done


def _optimizer_step(folder: Path) -> Explained:
    done = Explained(
        "optimizer-step",
        "What optimizer.step() does: SGD with momentum",
        "gradviz.record_step(optimizer, loss), the second step of a training loop: each "
        "parameter before and after, the momentum buffer before and after, the "
        "update-to-weight ratio. The replay page steps through that backward pass; its last "
        "step shows what optimizer.step() did to each parameter (key s).",
    )
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = torch.randn(4, 3)
    for _ in range(2):
        optimizer.zero_grad()
        step = record_step(optimizer, model(data).pow(2).mean(), params=model)
    title = "gradviz · the backward, then optimizer.step()"
    picture = folder / "optimizer-step.svg"
    write_file(picture, step.recording.svg())
    done.files += [picture, step.save(folder / "optimizer-step.html", title=title)]
    done.text = step.text()
    return done


ENTRIES: tuple[Callable[[Path], Explained], ...] = (
    _why_no_grad,
    _memory,
    _health,
    _diff,
    _optimizer_step,
)


def render_explained(out: Path, progress: Callable[[str], None] | None = None) -> list[Explained]:
    """Every entry into ``out/explained/``; each entry's text is saved beside it too."""
    folder = out / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    done = []
    for make in ENTRIES:
        entry = make(folder)
        entry.files.append(write_file(folder / f"{entry.slug}.txt", entry.text + "\n"))
        if progress is not None:
            progress(f"  explained/{entry.slug}: {len(entry.files)} files")
        done.append(entry)
    return done


def _rel(path: Path, out: Path) -> str:
    return html.escape(path.relative_to(out).as_posix())


def explained_section(out: Path, entries: list[Explained]) -> str:
    """The gallery's section for the entries: SVG previews, page links and the text."""
    cards = []
    for entry in entries:
        wide = ' class="wide"' if entry.wide else ""
        figures = "".join(
            f'<figure{wide}><a href="{_rel(p, out)}"><img src="{_rel(p, out)}" '
            f'alt="{html.escape(entry.title)}"></a></figure>'
            for p in entry.files
            if p.suffix == ".svg"
        )
        links = " · ".join(
            f'<a href="{_rel(p, out)}">{html.escape(p.name)}</a>'
            for p in entry.files
            if p.suffix in (".html", ".txt")
        )
        cards.append(
            f'<section class="lesson" id="{html.escape(entry.slug)}">'
            f"<h2>{html.escape(entry.title)}</h2><p>{html.escape(entry.about)}</p>"
            f'<p class="replay">{links}</p><div class="views">{figures}</div>'
            f'<pre class="explained">{html.escape(entry.text)}</pre></section>'
        )
    return (
        '<h1 id="explained">Questions, answered on the graph</h1>\n'
        "<p>Why <code>.grad</code> is None, memory, gradient health, a diff of two runs and "
        "the optimizer step (notebook 12).</p>\n" + "\n".join(cards)
    )
