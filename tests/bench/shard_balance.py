"""How evenly a manifest's weights split a screen into shards, held against seconds other roots measured.

    .venv/bin/python tests/bench/shard_balance.py MANIFEST --shards N --seconds STATUS.tsv [STATUS.tsv ...]

The manifest is split as `campaign screen --shards N` splits it (`campaign.planning.shards.split`: LPT
over ``weight_s``). Each shard's load is then read from the measured roots' status.tsv files (a shard
set's, on the host the screen will run on): the IR-pass cell-seconds (round 0, every side, every
attempt) of the shard's workloads. A workload the roots hold only as dtype parts (``<name>-<dtype>``)
counts its parts; one they do not hold at all is counted apart and named. The ratio of the heaviest
shard's measured load to the lightest's is what the split would have cost there, an estimate: a cell costs
what it cost in those roots (their tree, their host, their load).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from campaign.contract import status, yamlio
from campaign.contract.fields import DTYPES
from campaign.contract.manifest import Manifest
from campaign.planning import shards


def measured(paths: Sequence[Path]) -> dict[str, float]:
    """Workload -> its IR-pass cell-seconds over the status files, every attempt counted."""
    out: dict[str, float] = {}
    for path in paths:
        rows, _bad = status.read(path)
        for row in rows:
            if row.round == 0 and row.elapsed_s is not None:
                out[row.workload] = out.get(row.workload, 0.0) + row.elapsed_s
    return out


def load_of(name: str, seconds: dict[str, float]) -> float | None:
    """A workload's measured seconds: its own, else the sum of its dtype parts' (``<name>-<dtype>``), else None."""
    if name in seconds:
        return seconds[name]
    parts = [value for other, value in seconds.items() if other.startswith(f"{name}-") and other[len(name) + 1:] in DTYPES]
    return sum(parts) if parts else None


def balance(manifest: Manifest, count: int, seconds: dict[str, float]) -> tuple[list[dict], list[str]]:
    """Per shard: workloads, predicted (weight_s) and measured seconds; and the workloads nothing measured."""
    split = shards.split(manifest, count, None)
    rows, missing = [], []
    for index, names in enumerate(split.workloads):
        loads = {name: load_of(name, seconds) for name in names}
        missing += [name for name, value in loads.items() if value is None]
        rows.append({"shard": index + 1, "workloads": len(names), "predicted_s": split.predicted_s[index],
                     "measured_s": round(sum(v for v in loads.values() if v is not None), 1)})
    return rows, sorted(missing)


def render(rows: list[dict], missing: list[str]) -> str:
    measured_loads = [row["measured_s"] for row in rows]
    lines = ["| shard | workloads | predicted (weight_s) | measured cell-seconds |", "| ---: | ---: | ---: | ---: |"]
    lines += [f"| {r['shard']} | {r['workloads']} | {r['predicted_s']:.0f} | {r['measured_s']:.0f} |" for r in rows]
    lines.append("")
    lines.append(f"heaviest / lightest measured: {max(measured_loads) / max(min(measured_loads), 1e-9):.3f}")
    lines.append(f"not measured: {len(missing)}" + (f" ({', '.join(missing)})" if missing else ""))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--shards", type=int, required=True)
    parser.add_argument("--seconds", type=Path, nargs="+", required=True, help="the measured roots' status.tsv")
    args = parser.parse_args(argv)
    manifest = yamlio.validate(Manifest, args.manifest)
    print(render(*balance(manifest, args.shards, measured(args.seconds))), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
