"""Immutable instances: the public classes reject attribute assignment and deletion."""

from __future__ import annotations

from typing import Any


class Frozen:
    """Base of xgr2's value classes: attributes are set once, in ``__init__``.

    Subclasses set their slots with :func:`init_slots`; any later ``obj.x = ...`` or
    ``del obj.x`` raises ``AttributeError``, so a value shared between threads or cached
    by a :class:`~xgr2.Compiler` cannot be changed under its other users.
    """

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete attribute {name!r}")


def init_slots(obj: Frozen, **values: Any) -> None:
    """Sets ``obj``'s slots from ``__init__`` (the only place a :class:`Frozen` changes)."""
    for name, value in values.items():
        object.__setattr__(obj, name, value)
