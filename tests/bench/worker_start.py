"""What a worker's start costs with each bytecode store: none (cold), timestamp files, checked files.

A worker-like start: ``python -P [--check-hash-based-pycs always] -c "import torch, triton, the
worker's modules"`` under a PYTHONPYCACHEPREFIX that is empty (cold: what no cross-run seeding
costs every run's first worker), holds timestamp ``.pyc`` files (the store before issue 39), or
holds their checked hash-based forms (the store now: the import system hashes each source on
import). Then the store's own costs with the project's code (`campaign.running.bytecode`): `keep`
of a cold prefix into an empty store (each file turned into its checked form and listed), `seed`
of that store into a fresh prefix (listed files linked unread), and `keep` after a seeded run.

    .venv/bin/python tests/bench/worker_start.py [--reps 5]

Not a test: its printed table is committed beside it (bytecode.md).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from campaign.running import bytecode

IMPORTS = "import torch, triton, campaign.worker.preflight, campaign.plugins.run_identity, _pytest.main"


def start(prefix: Path, checked_always: bool) -> tuple[float, float]:
    """(wall s, CPU s) of one worker-like start under ``prefix``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX=str(prefix), PYTHONSAFEPATH="1", OMP_NUM_THREADS="1")
    flags = ["--check-hash-based-pycs", "always"] if checked_always else []
    before, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, "-P", *flags, "-c", IMPORTS], env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def timed(call) -> tuple[float, object]:
    began = time.perf_counter()
    result = call()
    return time.perf_counter() - began, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    rule = bytecode.run_rule(Path("/nonexistent-project"), ())
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        warm, store = base / "timestamp", base / "store"
        start(warm, False)                                          # the run's own compile: timestamp files
        keep_s, kept = timed(lambda: bytecode.keep(warm, store, rule))
        seed_s, seeded = timed(lambda: bytecode.seed(base / "seeded", store, rule))
        again_s, _ = timed(lambda: bytecode.keep(base / "seeded", store, rule, seeded))
        rows: dict[str, list[tuple[float, float]]] = {"cold": [], "timestamp": [], "checked": [], "checked, always": []}
        for rep in range(args.reps):
            cold = base / f"cold-{rep}"
            rows["cold"].append(start(cold, False))
            shutil.rmtree(cold)
            rows["timestamp"].append(start(warm, False))
            rows["checked"].append(start(base / "seeded", False))
            rows["checked, always"].append(start(base / "seeded", True))
    print("| prefix | wall median (min-max) | CPU median (min-max) |\n| --- | ---: | ---: |")
    for name, runs in rows.items():
        walls, cpus = [r[0] for r in runs], [r[1] for r in runs]
        print(f"| {name} | {statistics.median(walls):.2f} s ({min(walls):.2f}-{max(walls):.2f}) "
              f"| {statistics.median(cpus):.2f} s ({min(cpus):.2f}-{max(cpus):.2f}) |")
    print(f"\nkeep into an empty store: {kept} files in {keep_s:.2f} s; seed (each verified): {len(seeded)} files "
          f"in {seed_s:.2f} s; keep after a seeded run: {again_s:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
