"""The demo's ``--tools`` mode: SmolLM2 answers by calling a tool, in the Hermes format.

SmolLM2-135M-Instruct's chat template (ChatML) has no tool-calling format of its own, so
the demo uses the Hermes ``<tool_call>`` JSON format (:func:`xgr2.tool_calling.hermes`,
also Qwen 2.5's): the system turn lists the tools and shows the call layout, and the
grammar holds the model to it. :func:`check_row` reads the calls back with
:func:`xgr2.tool_calling.parse_calls` and judges each one (an offered tool? arguments
valid under its ``parameters``, by ``jsonschema``?) and the row's number of calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xgr2 import ToolCallingError
from xgr2.tool_calling import ToolChoice, parse_calls

FAMILY = "hermes"
EXAMPLE_TOOLS = Path(__file__).with_name("tools_weather.json")
"""The example tools file (a weather lookup and a thermostat), the default of ``--tools``."""


def load_tools(path: Path) -> list[dict[str, Any]]:
    """An OpenAI-style tool list from a JSON file (checked when the grammar is built)."""
    try:
        tools = json.loads(path.read_text())
    except ValueError as e:
        raise ToolCallingError(f"{path}: not JSON: {e}") from e
    if not isinstance(tools, list):
        raise ToolCallingError(f"{path}: expected a JSON list of {{\"type\": \"function\", \"function\": ...}}")
    return tools


def tool_choice(arg: str) -> ToolChoice:
    """``--tool-choice``: ``auto``, ``required``, ``none``, or a tool's name (that tool only)."""
    if arg in ("auto", "required", "none"):
        return arg
    return {"type": "function", "function": {"name": arg}}


def system_prompt(tools: Sequence[Mapping[str, Any]]) -> str:
    """The system turn: the tools, one JSON object a line, and the Hermes call layout."""
    listing = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return ("You are a helpful assistant that answers by calling functions. The functions you can call "
            f"are listed as JSON between <tools> and </tools>:\n<tools>\n{listing}\n</tools>\n"
            "To call a function, write its name and its arguments as one JSON object between "
            "<tool_call> and </tool_call>:\n"
            '<tool_call>\n{"name": "<function name>", "arguments": {<arguments>}}\n</tool_call>')


def default_prompt(tools: Sequence[Mapping[str, Any]]) -> str:
    """A user request that the first tool answers (``--prompt`` replaces it)."""
    fn = tools[0].get("function", {}) if tools else {}
    name, description = fn.get("name", "a tool"), str(fn.get("description", "")).strip()
    return f"Use {name} for me{': ' + description if description else '.'} Pick realistic arguments yourself."


@dataclass(frozen=True)
class CallCheck:
    """One call of an output: its tool, whether that tool is offered (by ``tool_choice``
    too), whether its arguments were read and validate against the tool's ``parameters``
    (``jsonschema``), and why not."""

    name: str
    offered: bool
    valid: bool
    problem: str | None


@dataclass(frozen=True)
class RowCheck:
    """A row's calls, and whether their number follows ``tool_choice`` and
    ``parallel_tool_calls`` (``count_problem`` says how it does not)."""

    calls: list[CallCheck]
    count_problem: str | None

    @property
    def valid(self) -> bool:
        return self.count_problem is None and all(c.offered and c.valid for c in self.calls)


def _count_problem(n: int, choice: ToolChoice, parallel: bool) -> str | None:
    if choice == "none":
        return None if n == 0 else f"{n} call(s) with tool_choice none"
    if choice != "auto" and n == 0:
        return "no call, but tool_choice requires one"
    if not parallel and n > 1:
        return f"{n} calls without parallel tool calls"
    return None


def check_row(text: str, finished: bool, tools: Sequence[Mapping[str, Any]], choice: ToolChoice,
              parallel: bool) -> RowCheck:
    """Judges one output: each call, and the number of calls (a row cut off by the token
    budget before its stop token counts as a count problem: it may lack a call)."""
    import jsonschema

    params = {t["function"]["name"]: t["function"].get("parameters", {"type": "object", "properties": {}})
              for t in tools}
    # A named tool_choice offers that tool only.
    offered_names = {choice["function"]["name"]} if isinstance(choice, Mapping) else set(params)
    checks = []
    for call in parse_calls(FAMILY, text, tools):
        problem = call.error
        if problem is None and call.name not in params:
            problem = "no such tool"
        if problem is None:
            try:
                jsonschema.validate(call.arguments, params[call.name])
            except jsonschema.ValidationError as e:
                problem = e.message
        checks.append(CallCheck(call.name, call.name in offered_names, problem is None, problem))
    count = _count_problem(len(checks), choice, parallel)
    if not finished:
        count = "cut off by --max-tokens" + (f"; {count}" if count else "")
    return RowCheck(checks, count)


def describe(check: RowCheck) -> str:
    """One line per call, for the summary."""
    lines = [f"{c.name or '?'}: offered {'yes' if c.offered else 'NO'}, arguments "
             f"{'valid' if c.valid else 'INVALID'}" + (f" ({c.problem})" if c.problem else "")
             for c in check.calls] or ["no calls"]
    if check.count_problem:
        lines.append(f"count: {check.count_problem}")
    return "; ".join(lines)
