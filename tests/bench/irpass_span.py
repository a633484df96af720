"""The IR pass's span in a screen root: from the first start to the last end of its non-canary
round-0 workloads, read from every batch's progress.tsv, and each side's own span (tests/bench/lanes.md).

    .venv/bin/python tests/bench/irpass_span.py ROOT [ROOT ...]
"""
from __future__ import annotations

import sys
from pathlib import Path

from campaign.contract.progresslines import parse


def span(root: Path, canaries: tuple[str, ...] = ("add",)) -> tuple[float, dict[str, float]]:
    events = [e for p in root.glob("batches/*/progress.tsv") for e in parse(p.read_text(encoding="utf-8"))
              if "/r0/" in e.task_id and e.task_id.split("/")[0] not in canaries]
    sides: dict[str, list[float]] = {}
    for e in events:
        sides.setdefault(e.task_id.split("/")[-1], []).append(e.unix)
    whole = max(e.unix for e in events) - min(e.unix for e in events)
    return whole, {side: max(times) - min(times) for side, times in sides.items()}


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        whole, sides = span(Path(arg))
        print(f"{arg}: IR pass {whole:.1f} s; " + ", ".join(f"{s} {t:.1f} s" for s, t in sides.items()))
