"""Which class the layers below the public API build for each data class.

The public API (``gradviz.objects``, ``gradviz.reports``) subclasses the data classes with
the methods users call (``svg()``, ``save()``) and registers each subclass here when it is
imported; capture and the analyses build ``built(Recording)(...)`` and so hand out the
public object itself, without importing the layers above them. The public classes add
methods only, no state: a lower layer used before any registration builds the plain data
class, which holds the same data.
"""

from __future__ import annotations

from typing import TypeVar, cast

__all__ = ["as_public", "built", "register_public"]

T = TypeVar("T")
_PUBLIC: dict[type, type] = {}


def register_public(public: type[T]) -> type[T]:
    """Class decorator: the lower layers build ``public`` wherever they build its data
    class (its first base)."""
    _PUBLIC[public.__bases__[0]] = public
    return public


def built(data_class: type[T]) -> type[T]:
    """The class to build for ``data_class``: its registered public subclass, else itself."""
    return cast("type[T]", _PUBLIC.get(data_class, data_class))


def as_public(made: object, public: type[T]) -> T:
    """``made``, which a lower layer built as ``public`` (``built``), typed as such."""
    if not isinstance(made, public):
        raise TypeError(
            f"gradviz built a {type(made).__name__} where a {public.__name__} was expected: "
            f"{public.__name__} was not registered (gradviz.model.public) when it was made"
        )
    return made
