"""The 7-bit packing's numpy path (``stepper.sevenbit._values``, one 64-bit word per
7-byte group) writes what the plain-Python path writes, and round-trips."""

from __future__ import annotations

import random

from gradviz.stepper.sevenbit import _values, _values_python, from_seven_bit, to_seven_bit


def test_the_word_path_equals_the_python_path() -> None:
    rng = random.Random(0)
    for size in (0, 7, 14, 70, 7 * 999):
        data = bytes(rng.randrange(256) for _ in range(size))
        assert _values(data) == _values_python(data)
    edge = bytes([0, 255, 128, 127, 1, 254, 60]) * 5  # "<", NUL, all bits set, high bits
    assert _values(edge) == _values_python(edge)


def test_packed_text_reads_back() -> None:
    rng = random.Random(1)
    for size in (1, 6, 7, 8, 1000, 4099):
        data = bytes(rng.randrange(256) for _ in range(size))
        text = to_seven_bit(data)
        assert len(text) == -(-8 * size // 7)
        assert from_seven_bit(text) == data
