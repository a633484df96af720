"""The 16-core host's cells against the sealed 2-core root's, and what they say of the whole suite.

    PYTHONPATH=$PWD .venv/bin/python receipts/h100-2026-12-07-suite16-partial/estimate.py

Reads this folder's status.tsv (shard 1 of 2 of the weighted whole-suite screen, up to the call that
ended it) and the 2-core root's status.tsv. Prints the host/2-core ratio of each cell that ended ok on
both, by the 2-core cell's size; then each cell of the suite at its host seconds where measured here,
else at its 2-core seconds times the ratio of its size class (a split workload's dtype at a third of the
whole's): an estimate, not a measurement.
"""
import csv
import re
import statistics
from pathlib import Path

from campaign.contract import yamlio
from campaign.contract.manifest import Manifest
from campaign.planning import shards

HERE = Path(__file__).resolve().parent
TWO_CORES = HERE.parent / "cpu-flaggems-suite-screen-2cores-screen-20261206T200428Z" / "status.tsv"
MANIFEST = HERE.parents[1] / "manifests" / "cpu-flaggems-suite-screen-weighted.yaml"
SIZES = ((0, 20), (20, 60), (60, float("inf")))
SIDES = ("baseline", "candidate")


def ir_pass(path: Path) -> dict:
    return {r["task_id"]: r for r in csv.DictReader(path.open(), delimiter="\t") if "/r0/" in r["task_id"]}


host, two = ir_pass(HERE / "status.tsv"), ir_pass(TWO_CORES)
pairs = [(float(host[k]["elapsed_s"]), float(two[k]["elapsed_s"])) for k in host
         if k in two and host[k]["rc_name"] == "ok" and two[k]["rc_name"] == "ok"]
ratios = sorted(a / b for a, b in pairs)
print(f"{len(pairs)} cells ok on both: host/2-core {sum(a for a, _ in pairs) / sum(b for _, b in pairs):.2f} (sums), "
      f"quartiles {ratios[len(ratios) // 4]:.2f} / {statistics.median(ratios):.2f} / {ratios[3 * len(ratios) // 4]:.2f}")
factor = {}
for lo, hi in SIZES:
    chosen = [(a, b) for a, b in pairs if lo <= b < hi]
    factor[lo, hi] = sum(a for a, _ in chosen) / sum(b for _, b in chosen)
    print(f"  2-core cell {lo}-{hi} s: {len(chosen)} cells, host/2-core {factor[lo, hi]:.2f}")


def seconds(name: str, side: str) -> float:
    """The cell's host seconds: measured here, else estimated from the 2-core root."""
    row = host.get(f"{name}/r0/{side}")
    if row is not None and row["rc_name"] == "ok":
        return float(row["elapsed_s"])
    whole = re.sub(r"-(float16|float32|bfloat16)$", "", name)
    base = float(two[f"{whole}/r0/{side}"]["elapsed_s"]) / (3 if whole != name else 1)
    return base * next(f for (lo, hi), f in factor.items() if lo <= base < hi)


manifest = yamlio.validate(Manifest, MANIFEST)
split = shards.split(manifest, 2, None)
total = 0.0
for n, names in enumerate(split.workloads, 1):
    cells = sum(seconds(name, side) for name in names for side in SIDES)
    total += cells
    print(f"shard {n}: {len(names)} workloads, {cells:.0f} host cell-seconds (est.), {cells / 16:.0f} s over 16 lanes")
print(f"suite: {total:.0f} host cell-seconds (est.), {total / 16:.0f} s over 16 lanes packed without a gap")
ended = {k for k, r in host.items() if r["rc_name"] in ("ok", "tests_failed")}
left = [(name, side) for name in split.workloads[0] for side in SIDES if f"{name}/r0/{side}" not in ended]
print(f"shard 1 at its end: {len(ended)} IR-pass cells ended ({sum(float(host[k]['elapsed_s']) for k in ended):.0f} "
      f"host cell-seconds), {len(left)} not ({sum(seconds(*c) for c in left):.0f} est., in-flight ones whole)")
