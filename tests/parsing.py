"""Whole-text acceptance, shared by the front-end tests."""

from __future__ import annotations

import xgr2


def accepts(start: xgr2.MatcherState, text: str | bytes) -> bool:
    """Whether the grammar takes all of ``text`` (UTF-8 when a str) from ``start`` and may end there."""
    state = start.try_advance_bytes(text.encode() if isinstance(text, str) else text)
    return state is not None and state.can_terminate
