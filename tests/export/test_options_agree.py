"""One source of truth for options: the typed keywords users pass are the fields of
``RenderOptions`` (``view`` aside for the stepper), plus what a page or an SVG takes; and no
public function or method of gradviz takes ``**options: Any``."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterator
from typing import Any

import gradviz
from gradviz.export.keywords import PAGE_OR_SVG, VIDEO, PageKeywords, SaveKeywords
from gradviz.render.options import RenderKeywords, RenderOptions, StyleKeywords

FIELDS = {f.name for f in dataclasses.fields(RenderOptions)}


def test_render_keywords_are_the_render_options_fields() -> None:
    assert set(RenderKeywords.__annotations__) | set(StyleKeywords.__annotations__) == FIELDS
    assert set(typing.get_type_hints(RenderKeywords)) == FIELDS


def test_style_keywords_are_the_render_options_but_the_view() -> None:
    assert set(typing.get_type_hints(StyleKeywords)) == FIELDS - {"view"}


def test_save_keywords_are_the_render_options_and_the_page_svg_or_video_keywords() -> None:
    hints = set(typing.get_type_hints(SaveKeywords))
    assert hints == FIELDS | PAGE_OR_SVG | VIDEO
    assert set(typing.get_type_hints(PageKeywords)) == FIELDS | (PAGE_OR_SVG - {"title", "health"})


def test_every_keyword_is_optional() -> None:
    for keywords in (RenderKeywords, StyleKeywords, PageKeywords, SaveKeywords):
        assert not keywords.__required_keys__, keywords


def _public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    for name in gradviz.__all__:
        item = getattr(gradviz, name)
        if inspect.isclass(item):  # the methods gradviz defines, not those it inherits
            for klass in item.__mro__:
                if not klass.__module__.startswith("gradviz"):
                    continue
                for member, function in vars(klass).items():
                    function = getattr(function, "__func__", function)  # class methods
                    if not member.startswith("_") and callable(function):
                        yield f"{name}.{member}", function
        elif callable(item):
            yield name, item


def test_no_public_signature_takes_untyped_keywords() -> None:
    untyped = []
    for name, function in _public_callables():
        for parameter in inspect.signature(function).parameters.values():
            keywords = parameter.kind is inspect.Parameter.VAR_KEYWORD
            if keywords and parameter.annotation in (Any, "Any", inspect.Parameter.empty):
                untyped.append(name)
    assert not untyped, untyped
