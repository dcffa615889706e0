"""The combined view's two sides are pasted into one SVG over one background: each side's own
background, whichever way Graphviz spells its stroke, is dropped, or it would paint over the
links drawn before it (they would end in blank space)."""

from __future__ import annotations

import re

import pytest

from gradviz.render.links import CombinedSides, LinkSpec
from gradviz.render.sidebyside import side_by_side_svg


def _side(name: str, stroke: str) -> str:
    """A one-node SVG as Graphviz writes it, its background polygon first."""
    return (
        '<svg width="62pt" height="44pt" viewBox="0.00 0.00 62.00 44.00" '
        'xmlns="http://www.w3.org/2000/svg">\n'
        '<g id="graph0" class="graph" transform="scale(1 1) rotate(0) translate(4 40)">\n'
        f'<polygon fill="white" stroke="{stroke}" points="-4,4 -4,-40 58,-40 58,4 -4,4"/>\n'
        f'<g id="node1" class="node">\n<title>{name}</title>\n'
        '<polygon fill="none" stroke="black" points="54,-36 0,-36 0,0 54,0 54,-36"/>\n'
        "</g>\n</g>\n</svg>\n"
    )


@pytest.mark.parametrize("stroke", ["transparent", "none"])
def test_each_sides_own_background_is_dropped(stroke: str) -> None:
    link = LinkSpec("f", "b", "p_l_t0", "gv_link", "#555555", "4,2", True, None)
    sides = CombinedSides("digraph{}", "digraph{}", "digraph{}", (link,))
    svg = side_by_side_svg(
        sides, "p", "white", "black", "red", laid=(_side("f", stroke), _side("b", stroke))
    )
    assert not re.search(r'<polygon fill="white" stroke="(none|transparent)"', svg)
    assert svg.count('<rect x="0" y="0"') == 1  # the one background, under everything
    assert svg.index('id="p_l_t0"') < svg.index('id="p_backward"')
