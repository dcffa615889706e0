"""``gradviz.__all__`` is exactly the public names of the package: nothing public is left
out, nothing private or missing is listed."""

from __future__ import annotations

import inspect

import gradviz

# what gradviz/__init__.py itself needs, not part of the API
HELPERS = {"TYPE_CHECKING", "Any", "annotations"}


def test_all_equals_the_public_names() -> None:
    public = {
        name
        for name, value in vars(gradviz).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name not in HELPERS
    }
    public |= {"Stepper", "__version__"}  # loaded on first use; a plain string
    assert set(gradviz.__all__) == public


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert gradviz.__all__ == sorted(gradviz.__all__, key=lambda n: (not n.isupper(), n))
    for name in gradviz.__all__:
        assert getattr(gradviz, name) is not None, name


def test_the_types_users_receive_are_exported() -> None:
    for name in ("Frame", "ForwardFrame", "HookChange", "RenderOptions", "RenderKeywords"):
        assert name in gradviz.__all__, name
