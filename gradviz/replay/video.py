"""The replay as a video (MP4) or an animated GIF, for slides and course pages.

Each frame is a lecture slide (``slides.slides``: one layout, restyled per step) drawn into
a fixed size: the graph rasterised by resvg (``render.raster``) and letterboxed into the
space above a caption band, where the frame's title and narration are written. Pip-only:
PyAV (``av``, with libav and x264 inside its wheel) encodes the MP4, Pillow writes the GIF.
The same replay gives the same bytes: x264 runs on one thread with bit-exact flags, the
muxer writes no date, and the GIF no comment.
"""

from __future__ import annotations

import io
import math
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape as xml_escape

from typing_extensions import Unpack

from gradviz.errors import GradvizError, InvalidArgument
from gradviz.escape import visible_text
from gradviz.model.recording import Recording
from gradviz.render import raster
from gradviz.render.options import RenderKeywords, RenderOptions
from gradviz.replay.slides import Slide, slides

if TYPE_CHECKING:
    from PIL.Image import Image
    from PIL.ImageFont import FreeTypeFont

__all__ = ["DEFAULT_FPS", "DEFAULT_SIZE", "video_bytes", "video_frames"]

DEFAULT_SIZE = (1280, 720)  # 720p: sharp on a projector, small enough for a course page
DEFAULT_SECONDS_PER_STEP = 1.0
DEFAULT_FPS = 10  # an MP4's frame rate: still frames need few; players expect some
INSTALL = "pip install torch-gradviz[video]"

CAPTION_LINES = 4  # the title, then up to three lines of narration
ELLIPSIS = "…"
_FAMILY = "Helvetica,sans-Serif"  # what Graphviz writes; raster maps it to faces installed


@dataclass(frozen=True)
class _Layout:
    """Where things go in a frame of ``width`` x ``height`` pixels."""

    width: int
    height: int

    @property
    def margin(self) -> int:
        return max(4, round(min(self.width, self.height) * 0.03))

    @property
    def font_size(self) -> int:
        return max(10, round(self.height / 36))

    @property
    def line_height(self) -> int:
        return round(self.font_size * 1.3)

    @property
    def caption_height(self) -> int:
        return CAPTION_LINES * self.line_height + self.margin

    @property
    def graph_box(self) -> tuple[int, int, int, int]:
        """Left, top, width, height of the graph's box."""
        m = self.margin
        return m, m, self.width - 2 * m, self.height - self.caption_height - 2 * m


def video_bytes(
    recording: Recording,
    suffix: str,
    *,
    size: object = DEFAULT_SIZE,
    seconds_per_step: object = DEFAULT_SECONDS_PER_STEP,
    fps: object = None,
    **options: Unpack[RenderKeywords],
) -> bytes:
    """The file a ``suffix`` (.mp4 or .gif) holds: every frame of the replay for
    ``seconds_per_step`` seconds, drawn at ``size`` (width, height) pixels; ``fps`` is the
    MP4's frame rate (each step lasts ``round(fps * seconds_per_step)`` frames). The other
    keywords are render options."""
    if suffix not in (".mp4", ".gif"):
        raise InvalidArgument(f"cannot make a {suffix!r} video: use .mp4 or .gif")
    width, height = _size(size, even=suffix == ".mp4")
    seconds = _seconds(seconds_per_step)
    if suffix == ".gif":
        if fps is not None:
            raise InvalidArgument(
                "fps= is for .mp4; a GIF shows each frame for seconds_per_step seconds"
            )
        _require("PIL", "Pillow")
        frames = video_frames(recording, (width, height), **options)
        return _gif(frames, seconds)
    rate, per_step = _frames_per_step(DEFAULT_FPS if fps is None else fps, seconds)
    _require("av", "PyAV")
    _require("PIL", "Pillow")
    frames = video_frames(recording, (width, height), **options)
    return _mp4(frames, rate, per_step)


def video_frames(
    recording: Recording, size: tuple[int, int], **options: Unpack[RenderKeywords]
) -> Iterator[Image]:
    """Each slide of the replay as an RGB picture of ``size`` pixels, in order."""
    layout = _Layout(*size)
    theme = RenderOptions.make(**options).theme
    for slide in slides(recording, **options):
        yield _frame(slide, layout, theme.background, theme.text)


# -- one frame ---------------------------------------------------------------------------
def _frame(slide: Slide, layout: _Layout, background: str, ink: str) -> Image:
    from PIL import Image

    canvas = Image.new("RGB", (layout.width, layout.height), _rgb(background))
    left, top, box_width, box_height = layout.graph_box
    if box_width > 0 and box_height > 0:
        graph = _graph_picture(slide.svg, box_width, box_height)
        x = left + (box_width - graph.width) // 2
        y = top + (box_height - graph.height) // 2
        canvas.paste(graph, (x, y), graph if graph.mode == "RGBA" else None)
    caption = _caption_picture(slide, layout, background, ink)
    canvas.paste(caption, (0, layout.height - layout.caption_height))
    return canvas


def _graph_picture(svg: str, box_width: int, box_height: int) -> Image:
    """The slide's SVG rasterised to fit the box, keeping its shape."""
    from PIL import Image

    width_pt, height_pt = raster._svg_points(svg.encode("utf-8"))
    if not width_pt or not height_pt:
        raise GradvizError("the replay's SVG has no size in points; cannot draw it in a video")
    scale = min(box_width / width_pt, box_height / height_pt)  # pixels per point
    dpi = min(72 * scale, 2400.0)
    png = raster.svg_to(svg.encode("utf-8"), "png", dpi=dpi)
    picture = Image.open(io.BytesIO(png))
    picture.load()
    if picture.width > box_width or picture.height > box_height:  # resvg rounds up
        picture.thumbnail((box_width, box_height), Image.Resampling.LANCZOS)
    return picture.convert("RGBA")


def _caption_picture(slide: Slide, layout: _Layout, background: str, ink: str) -> Image:
    """The title (bold) and the narration, wrapped to the frame's width; what does not fit
    in the band ends in an ellipsis. resvg writes it (the graph's faces, and the system's
    for characters they lack); Vera's wider metrics measure it, so no line overflows."""
    from PIL import Image

    width = layout.width - 2 * layout.margin
    size = layout.font_size
    title = _fit_line(visible_text(slide.title), _measure_font(size, bold=True), width)
    body = _wrap(visible_text(slide.narration), _measure_font(size), width, CAPTION_LINES - 1)
    rows = [(title, "bold"), *((line, "normal") for line in body)]
    texts = "".join(
        f'<text x="{layout.margin}" y="{(index + 1) * layout.line_height}" '
        f'font-family="{_FAMILY}" font-size="{size}" font-weight="{weight}" '
        f'fill="{xml_escape(ink)}">{xml_escape(line)}</text>'
        for index, (line, weight) in enumerate(rows)
    )
    height = layout.caption_height
    # written in points at 96 dpi: resvg then draws exactly width x height pixels
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width * 0.75}pt" '
        f'height="{height * 0.75}pt" viewBox="0 0 {layout.width} {height}">'
        f'<rect width="{layout.width}" height="{height}" fill="{xml_escape(background)}"/>'
        f"{texts}</svg>"
    )
    png = raster.svg_to(svg.encode("utf-8"), "png", dpi=raster.DEFAULT_DPI)
    picture = Image.open(io.BytesIO(png)).convert("RGB")
    if picture.size != (layout.width, height):
        picture = picture.resize((layout.width, height), Image.Resampling.LANCZOS)
    return picture


def _wrap(text: str, font: FreeTypeFont, width: int, lines: int) -> list[str]:
    """Greedy word wrap into at most ``lines`` lines; the last ends in an ellipsis when
    the text goes on."""
    out: list[str] = []
    words = text.split()
    while words and len(out) < lines:
        line = words.pop(0)
        while words and font.getlength(f"{line} {words[0]}") <= width:
            line = f"{line} {words.pop(0)}"
        out.append(_fit_line(line, font, width))
    if words and out:
        out[-1] = _fit_line(f"{out[-1]} {' '.join(words)}", font, width, force=True)
    return out


def _fit_line(line: str, font: FreeTypeFont, width: int, force: bool = False) -> str:
    """The line, cut to fit ``width`` with an ellipsis (also when ``force``: more follows)."""
    if not force and font.getlength(line) <= width:
        return line
    while line and font.getlength(line + ELLIPSIS) > width:
        line = line[:-1]
    return line.rstrip() + ELLIPSIS


@cache
def _measure_font(size: int, bold: bool = False) -> FreeTypeFont:
    """Vera (shipped in reportlab), wider than the Helvetica-like faces resvg draws with."""
    from PIL import ImageFont

    regular, bold_face = raster._png_fonts()[:2]
    return ImageFont.truetype(bold_face if bold else regular, size)


def _rgb(colour: str) -> tuple[int, int, int]:
    from PIL import ImageColor

    try:
        red, green, blue = ImageColor.getrgb(colour)[:3]
    except ValueError:  # a colour Pillow cannot read: the default's white
        return 255, 255, 255
    return red, green, blue


# -- encoders ----------------------------------------------------------------------------
def _mp4(frames: Iterator[Image], fps: int, per_step: int) -> bytes:
    """H.264 (x264, one thread, bit-exact) in an MP4 with its index first (faststart:
    a course page plays it before it has all loaded)."""
    import av

    # into a scratch file: faststart moves the index by reopening the file by its name
    with tempfile.TemporaryDirectory(prefix="gradviz-video-") as scratch:
        target = Path(scratch) / "replay.mp4"
        _encode(av, target, frames, fps, per_step)
        return target.read_bytes()


def _encode(av: Any, target: Path, frames: Iterator[Image], fps: int, per_step: int) -> None:
    with av.open(
        str(target),
        mode="w",
        format="mp4",
        container_options={"fflags": "+bitexact", "movflags": "+faststart"},
    ) as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.pix_fmt = "yuv420p"
        stream.options = {
            "preset": "medium",
            "tune": "stillimage",
            "crf": "23",
            "threads": "1",
            "flags": "+bitexact",
        }
        count = 0
        for picture in frames:
            if not count:
                stream.width, stream.height = picture.size
            frame = av.VideoFrame.from_image(picture).reformat(format="yuv420p")
            for _ in range(per_step):
                frame.pts = count
                container.mux(stream.encode(frame))
                count += 1
        container.mux(stream.encode(None))


def _gif(frames: Iterator[Image], seconds: float) -> bytes:
    """One GIF frame per slide, shown ``seconds`` each (GIF counts hundredths), looping."""
    from PIL import Image

    pictures = [
        picture.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        for picture in frames
    ]
    if not pictures:
        raise GradvizError("the replay has no frames to write")
    buffer = io.BytesIO()
    pictures[0].save(
        buffer,
        format="GIF",
        save_all=True,
        append_images=pictures[1:],
        duration=round(seconds * 100) * 10,
        loop=0,
        optimize=False,
    )
    return buffer.getvalue()


# -- checking the arguments --------------------------------------------------------------
def _require(module: str, name: str) -> None:
    try:
        __import__(module)
    except ImportError as error:
        raise GradvizError(
            f"saving the replay as a video needs {name}, which is not installed: {INSTALL}"
        ) from error


def _size(size: object, even: bool) -> tuple[int, int]:
    if (
        not isinstance(size, Sequence)
        or isinstance(size, str)
        or len(size) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in size)
    ):
        raise InvalidArgument(
            f"size= takes (width, height) in pixels, e.g. (1280, 720), not {size!r}"
        )
    width, height = int(size[0]), int(size[1])
    if not (64 <= width <= 7680 and 64 <= height <= 4320):
        raise InvalidArgument(f"size= must be 64..7680 wide and 64..4320 high, not {size!r}")
    if even and (width % 2 or height % 2):
        raise InvalidArgument(
            f"an MP4 (H.264, yuv420p) needs an even width and height, not {size!r}"
        )
    return width, height


def _seconds(value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0.01 <= value <= 600
    ):
        raise InvalidArgument(
            f"seconds_per_step= takes a number of seconds in [0.01, 600], not {value!r}"
        )
    return float(value)


def _frames_per_step(fps: object, seconds: float) -> tuple[int, int]:
    """The frame rate and how many frames each step lasts."""
    if isinstance(fps, bool) or not isinstance(fps, int) or not 1 <= fps <= 120:
        raise InvalidArgument(
            f"fps= takes a whole number of frames per second, 1..120, not {fps!r}"
        )
    per_step = round(fps * seconds)
    if per_step < 1:
        raise InvalidArgument(
            f"at fps={fps} a step of {seconds} s is less than one frame: raise fps= or "
            "seconds_per_step="
        )
    return fps, per_step
