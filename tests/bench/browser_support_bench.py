"""The tests' Chromium launcher, importable from the benchmark directory."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.browser import chromium

__all__ = ["chromium"]
