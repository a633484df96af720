"""The switch's annotation regexes (`switch.strip_annotations`), always under a time limit.

A backtracking pattern such as ``([^Z]|.)*\\x01`` runs for hours inside the C
matcher, where neither SIGINT nor SIGTERM reaches Python. The `regex` package
checks a timeout inside its matcher, so both places that run a pattern use it:
`problem` at validate (the pattern against hostile probe strings) and `strip`
at use (a timeout there is an error naming the pattern, never a hang). Patterns
are compiled by `regex` in both places, so what validates is what runs.
"""
from __future__ import annotations

import string
import time
from typing import Iterable, Optional

import regex

from campaign.contract.errors import CampaignError

# All probes together: a fair pattern needs ~20 ms for them, a backtracking one
# may stay under any per-probe limit and still be slow on every probe.
PROBE_BUDGET_S = 0.5
# At use the limit grows with the text: a linear pattern strips IR at well over
# 1 MB/s, so 1 s plus 1 s per 100 kB leaves a tenfold margin on real kernels.
USE_BASE_S = 1.0
USE_CHARS_PER_S = 100_000

# Backtracking needs the pattern's required literal present (`regex` fails fast
# without it) followed by a long run its quantifiers can split many ways and no
# match at the end: one probe per (leading character, run character).
_RUN = 48
_LEADS = tuple(chr(code) for code in range(128))
_RUNS = ("a", "0", " ", "_", "%", "\n")


def _probes(pattern: str) -> Iterable[str]:
    runs = dict.fromkeys(_RUNS + tuple(ch for ch in pattern if ch in string.ascii_letters + string.digits))
    for run in runs:
        for lead in _LEADS:
            yield lead + run * _RUN


def problem(pattern: str) -> Optional[str]:
    """Why ``pattern`` cannot be a strip pattern, or None."""
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        return f"regex {pattern!r} does not compile: {exc}"
    deadline = time.monotonic() + PROBE_BUDGET_S
    for probe in _probes(pattern):
        try:
            compiled.sub("", probe, timeout=max(deadline - time.monotonic(), 0.001))
        except TimeoutError:
            return (f"regex {pattern!r} takes over {PROBE_BUDGET_S} s on {len(probe)}-character probes "
                    f"such as {probe[:4]!r}...: it backtracks; write it without nested or overlapping quantifiers")
    return None


def strip(text: str, patterns: Iterable[str]) -> str:
    """``text`` with every match of every pattern removed, each pattern under a time limit."""
    limit = USE_BASE_S + len(text) / USE_CHARS_PER_S
    for pattern in patterns:
        try:
            text = regex.sub(pattern, "", text, timeout=limit)
        except TimeoutError:
            raise CampaignError(f"strip_annotations regex {pattern!r} ran over {limit:.1f} s on one "
                                f"{len(text)}-character IR file: it backtracks; fix the manifest's pattern") from None
        except regex.error as exc:
            raise CampaignError(f"strip_annotations regex {pattern!r} does not compile: {exc}") from None
    return text
