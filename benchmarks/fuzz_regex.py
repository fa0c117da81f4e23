"""Fuzz the regex front end: random patterns from regex syntax fragments, for a time budget.

Checks that no pattern crashes the process or hangs, and that every one either compiles or
raises xgr2.RegexError / xgr2.GrammarError (automaton limits). Prints the slowest patterns.

    python benchmarks/fuzz_regex.py --seconds 600
"""

from __future__ import annotations

import argparse
import random
import time

import xgr2
from xgr2 import _core

FRAGMENTS = [
    "a", "b", "é", "😀", "\n", ".", "|", "(", ")", "(?:", "(?P<n", ">", "(?<", "(?", "[", "]", "[^", "-", "^", "$",
    "*", "+", "?", "{", "}", ",", "0", "1", "2", "9", "{2}", "{0,3}", "{1,}", "{,2}", "{10000}", "{99999}", "\\",
    "\\d", "\\w", "\\s", "\\D", "\\b", "\\u", "\\u{", "\\x4", "\\0", "\\1", "\\ud83d\\ude00", "#", "=", "!", "<",
]


def random_pattern(rng: random.Random) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 24)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace", help="file to write each pattern to before compiling it (finds a hang)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    end = time.monotonic() + args.seconds
    counts = {"compiled": 0, "RegexError": 0, "GrammarError": 0}
    slowest: list[tuple[float, str, bool]] = []
    while time.monotonic() < end:
        pattern, search = random_pattern(rng), rng.random() < 0.5
        if args.trace:
            with open(args.trace, "w", encoding="utf-8") as f:
                f.write(f"{search} {pattern!r}\n")
        t0 = time.perf_counter()
        try:
            _core.GrammarIR.from_regex(pattern, search)
            counts["compiled"] += 1
        except xgr2.RegexError:
            counts["RegexError"] += 1
        except xgr2.GrammarError:
            counts["GrammarError"] += 1
        slowest = sorted(slowest + [(time.perf_counter() - t0, pattern, search)], reverse=True)[:5]
    total = sum(counts.values())
    print(f"{total} patterns in {args.seconds:.0f} s: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("slowest (seconds, search, pattern):")
    for dt, pattern, search in slowest:
        print(f"  {dt:.4f}  {search!s:5}  {pattern!r}")


if __name__ == "__main__":
    main()
