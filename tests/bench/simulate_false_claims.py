"""False-claim rate and power of the timing rule, measured with the shipped code.

Runs `campaign.judging.stats.timing`, `campaign.judging.classrules.timing_class` and
`campaign.judging.classify.holm_pass` (the code a seal runs) on simulated campaigns with no effect, and prints how often a workload is called
G or R (a direction) per round count and noise shape, how often a campaign of M such
workloads publishes at least one, and the smallest slowdown detected 95 % of the time.

The noise model follows what the H200 showed: each cell is one process, so a process-wide
offset moves every shape of a cell together, on top of per-shape noise, plus a drift with
the position a cell runs at inside its round (rounds alternate the order). Both components
have the same scale, chosen so the median per-shape |A/A| is 0.25 % (graph replay,
receipts/h200-2026-11-29.md); the false-claim rate does not depend on the scale.

    python tests/bench/simulate_false_claims.py [--trials N] [--campaign M] [--seed S]

Not a test: a benchmark whose printed table is committed beside it (false_claims.md).
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from campaign.judging import direction, stats  # noqa: E402
from campaign.judging.classify import holm_pass  # noqa: E402
from campaign.judging.classrules import timing_class  # noqa: E402

CELLS = ("baseline", "control", "candidate")
SHAPES = 4
MEDIAN_AA = 0.0025                                  # median per-shape |control/baseline - 1|, H200 graph
SIGMA = MEDIAN_AA / (0.6745 * 2)                    # per component: A/A sd = 2 sigma with two components
DRIFT = 0.5                                         # drift per position in a round, in sigmas


def noise(shape: str, rng: random.Random) -> float:
    """Unit-variance draws of three shapes."""
    if shape == "gaussian":
        return rng.gauss(0, 1)
    if shape == "t3":
        z = rng.gauss(0, 1)
        chi = sum(rng.gauss(0, 1) ** 2 for _ in range(3))
        return z / math.sqrt(chi / 3) / math.sqrt(3)
    return (rng.expovariate(1) - rng.expovariate(1)) / math.sqrt(2)    # laplace


def workload(rounds: int, shape: str, effect: float, rng: random.Random) -> stats.Timing:
    per_round, orders = {}, {}
    base_ms = [0.01 * (k + 1) for k in range(SHAPES)]
    for r in range(1, rounds + 1):
        order = CELLS if r % 2 else tuple(reversed(CELLS))
        orders[r] = direction.BASELINE_FIRST if r % 2 else direction.CANDIDATE_FIRST
        per_round[r] = {}
        for position, cell in enumerate(order):
            process = noise(shape, rng) * SIGMA
            scale = 1 + effect if cell == "candidate" else 1.0
            per_round[r][cell] = {
                (f"test_{k}", (1024 * (k + 1),), "float16", 0): stats.Sample(
                    base_ms[k] * scale * math.exp(process + noise(shape, rng) * SIGMA + DRIFT * SIGMA * position),
                    "graph")
                for k in range(SHAPES)}
    return stats.timing(per_round, orders, True)


def judge(t: stats.Timing) -> dict:
    klass, reason, on_timing = timing_class(t, (4, 2), "scoped topology 4 -> 2")
    return {"class": klass, "reason": reason, "rests_on_timing": on_timing,
            "p": t.primary.p_value if t.primary else None}


def campaign(ws: list[dict]) -> dict:
    named = {str(i): dict(w) for i, w in enumerate(ws)}
    holm_pass(named, {n: w["p"] for n, w in named.items()})
    return named


def false_rates(rounds: int, shape: str, trials: int, m: int, rng: random.Random) -> tuple[float, float, float]:
    ws = [judge(workload(rounds, shape, 0.0, rng)) for _ in range(trials)]
    per_workload = sum(w["class"] in ("G", "R") for w in ws) / trials
    groups = [ws[i:i + m] for i in range(0, trials - m + 1, m)]
    after = [campaign(g) for g in groups]
    per_workload_holm = sum(w["class"] in ("G", "R") for g in after for w in g.values()) / (len(groups) * m)
    per_campaign = sum(any(w["class"] in ("G", "R") for w in g.values()) for g in after) / len(groups)
    return per_workload, per_workload_holm, per_campaign


def power(rounds: int, trials: int, rng: random.Random) -> float | None:
    """Smallest slowdown (0.1 % steps) called R in at least 95 % of trials, Gaussian noise."""
    for tenths in range(1, 101):
        effect = tenths / 1000
        hits = sum(judge(workload(rounds, "gaussian", effect, rng))["class"] == "R" for _ in range(trials))
        if hits >= 0.95 * trials:
            return effect
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20000, help="simulated workloads per cell of the table")
    parser.add_argument("--campaign", type=int, default=10, help="IR-changed workloads per campaign (Holm family)")
    parser.add_argument("--power-trials", type=int, default=400)
    parser.add_argument("--rounds", default="2,3,4,5,6,8")
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    started = time.monotonic()
    print(f"# False directional claims under no effect ({args.trials} workloads per row, campaigns of "
          f"{args.campaign}, seed {args.seed})\n")
    print(f"Noise: per-cell process offset + per-shape noise, each sigma {SIGMA * 100:.3f} % (median per-shape "
          f"|A/A| {MEDIAN_AA * 100:.2f} %), drift {DRIFT} sigma per position in a round; {SHAPES} shapes.\n")
    print("| rounds | noise | false G/R per workload | after Holm | per campaign (any false G/R) |")
    print("| --- | --- | --- | --- | --- |")
    for rounds in (int(r) for r in args.rounds.split(",")):
        for shape in ("gaussian", "t3", "laplace"):
            w, wh, c = false_rates(rounds, shape, args.trials, args.campaign, rng)
            print(f"| {rounds} | {shape} | {w * 100:.3f} % | {wh * 100:.3f} % | {c * 100:.2f} % |", flush=True)
    print("\n# Power: smallest slowdown called R in >= 95 % of trials (Gaussian noise as above)\n")
    print("| rounds | smallest effect detected 95 % |")
    print("| --- | --- |")
    for rounds in (int(r) for r in args.rounds.split(",")):
        effect = power(rounds, args.power_trials, rng)
        print(f"| {rounds} | {'none up to 10 %' if effect is None else f'{effect * 100:.1f} %'} |", flush=True)
    print(f"\n({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
