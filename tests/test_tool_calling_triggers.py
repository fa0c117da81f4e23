"""Free text holding (part of) a call's trigger, for every preset whose free text has one.

The trigger and the excluded strings are read from the preset's own structural tag (its
``triggered_tags``: the call's start, or the calls section's, and for MiniMax-M2 and
DeepSeek V3.2 the block marker without its whitespace). The oracle is the
``triggered_tags`` semantics (docs/structural_tags.md): free text is any UTF-8 text that
holds no trigger and no excluded string; a completed trigger must go on into a call, of
an offered tool only. Calls come from the independent renderers of test_tool_calling.py.
"""

from __future__ import annotations

import random

import pytest

import xgr2
from parsing import accepts
from test_tool_calling import BYTES, TIME, WEATHER, render, spec_triggers
from xgr2 import tool_calling

TRIGGERED = [f for f in tool_calling.FAMILIES if spec_triggers(f)[0]]
CALLS = {"get_weather": {"city": "Paris", "days": 2}, "get_time": {"tz": "UTC"}}
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, TIME)}
# Not offered: another name, an offered name with more after it, a proper prefix of one.
UNOFFERED = ["lookup_stock", "get_time_zone", "get_weathe"]


def start(family, tool_choice="auto"):
    grammar = getattr(tool_calling, family)([WEATHER, TIME], tool_choice)
    return xgr2.compile(grammar, BYTES).initial_state()


def free_text_ok(text, triggers, excludes):
    """The oracle for a document of free text only (no call body in it)."""
    return not any(s in text for s in triggers + excludes)


def pieces_texts(triggers, excludes, rng, count):
    """Random free texts: proper prefixes of the triggers (by character), now and then a
    whole trigger or excluded string, ordinary characters between them."""
    whole = triggers + excludes
    partial = [t[:k] for t in whole for k in range(1, len(t))]
    ordinary = list("ab <>=\n|[é") + [" then more.", "Ok "]
    for _ in range(count):
        kinds = rng.choices([whole, partial, ordinary], weights=[1, 5, 4], k=rng.randrange(1, 7))
        yield "".join(rng.choice(kind) for kind in kinds)


def test_the_families_with_free_text_triggers():
    """Every preset but the three whose free text is no trigger-led text (Llama-3 JSON: text
    or calls; Harmony: a final channel; Kimi-K3: a response block, then the tools block)
    has a trigger, which its renderer writes."""
    assert set(tool_calling.FAMILIES) - set(TRIGGERED) == {"llama3_json", "harmony", "kimi_k3"}
    for family in TRIGGERED:
        (trigger,), _ = spec_triggers(family)
        assert render(family, "Ok ", [("get_time", CALLS["get_time"], SCHEMAS["get_time"])], None).startswith(
            "Ok " + trigger), family


@pytest.mark.parametrize("tool_choice", ["auto", "none"])
@pytest.mark.parametrize("family", TRIGGERED)
def test_a_partial_trigger_in_free_text_is_text(family, tool_choice):
    """Every proper prefix of the trigger, followed by ordinary text or ending the output,
    is free text; the completed trigger followed by the same text is not."""
    triggers, excludes = spec_triggers(family, tool_choice="auto")
    state = start(family, tool_choice)
    for trigger in triggers:
        for k in range(1, len(trigger)):
            part = trigger[:k]
            for text in (f"Ok {part} then more.", f"Ok {part}", f"{part}{part}x", f"{part}é{part} {part}"):
                assert free_text_ok(text, triggers, excludes), text  # the oracle agrees it is text
                assert accepts(state, text.encode()), text
        assert not accepts(state, f"Ok {trigger} then more.".encode())


@pytest.mark.parametrize("tool_choice", ["auto", "none"])
@pytest.mark.parametrize("family", TRIGGERED)
def test_random_free_texts_with_trigger_pieces_match_the_oracle(family, tool_choice):
    """Texts of trigger pieces: accepted exactly when they hold no trigger nor excluded string."""
    triggers, excludes = spec_triggers(family, tool_choice="auto")
    state = start(family, tool_choice)
    rng = random.Random(family + tool_choice)
    seen = {True: 0, False: 0}
    for text in pieces_texts(triggers, excludes, rng, 150):
        expected = free_text_ok(text, triggers, excludes)
        assert accepts(state, text.encode()) == expected, (text, expected)
        seen[expected] += 1
    assert seen[True] > 20 and seen[False] > 20, seen  # both sides are tested


@pytest.mark.parametrize("family", TRIGGERED)
def test_a_completed_trigger_must_go_on_into_an_offered_call(family):
    """After the trigger: no end, no free text; a call of an offered tool is accepted, one
    naming a tool not offered (or not allowed by the choice) is refused as soon as its name
    is complete."""
    (trigger,), _ = spec_triggers(family)
    state = start(family)
    after = state.try_advance_bytes(f"Ok {trigger}".encode())
    assert after is not None and not after.can_terminate
    assert after.try_advance_bytes(b"hello") is None

    def name_prefix(name, args, schema):
        """The rendered call up to its tool name and the character after it."""
        text = render(family, "Ok ", [(name, args, schema)], None)
        i = text.index(name, len("Ok " + trigger) - 1)
        return text, text[: i + len(name) + 1]

    only_time = start(family, ["get_time"])
    for name, args in CALLS.items():
        text, prefix = name_prefix(name, args, SCHEMAS[name])
        assert accepts(state, text.encode()), text
        assert state.try_advance_bytes(prefix.encode()) is not None, prefix
        assert accepts(only_time, text.encode()) == (name == "get_time"), text
        assert (only_time.try_advance_bytes(prefix.encode()) is not None) == (name == "get_time"), prefix
    for bad in UNOFFERED:
        text, prefix = name_prefix(bad, CALLS["get_weather"], SCHEMAS["get_weather"])
        assert not accepts(state, text.encode()), text
        assert state.try_advance_bytes(prefix.encode()) is None, prefix
