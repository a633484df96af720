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
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from campaign.contract.records import WorkloadVerdict  # noqa: E402
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


@dataclass(frozen=True)
class Scenario:
    """A workload class: its noise scale, per-shape noise multipliers, and whether round 1's baseline
    recorded (benchmarked configs: its time is biased and the candidate is taken against the control)."""

    name: str
    sigma: float = SIGMA
    shape_noise: tuple[float, ...] = (1.0,) * SHAPES
    recording_round_1: bool = False


# The classes the rule meets on the H200 (receipts/h200-2026-12-01-b.md): pointwise ops under the graph
# timer (median per-shape |A/A| 0.25 %), dense BLAS at the power cap (per-shape A/A floors 0.1-3 % over
# three rounds: median |A/A| about 0.5 %), shapes of one workload with unequal noise (one shape 8x noisier:
# mm 2048^3 beside 4096^3), and round 1 timed against the control because its baseline recorded.
SCENARIOS = (
    Scenario("pointwise, graph timer"),
    Scenario("BLAS at the power cap", sigma=0.005 / (0.6745 * 2)),
    Scenario("unequal noise across shapes", shape_noise=(0.5, 1.0, 2.0, 8.0)),
    Scenario("round 1 against the control (recording baseline)", recording_round_1=True),
    Scenario("BLAS, unequal noise, recording round 1", sigma=0.005 / (0.6745 * 2), shape_noise=(0.5, 1.0, 2.0, 8.0),
             recording_round_1=True),
)
PLAIN = SCENARIOS[0]
RECORDING_BIAS = 0.9        # a recording cell's own latencies (measured on the H200: mm's control -11.4 % against it)


def workload(rounds: int, shape: str, effect: float, rng: random.Random, scenario: Scenario = PLAIN) -> stats.Timing:
    return stats.timing(*draw(rounds, shape, effect, rng, scenario))


def draw(rounds: int, shape: str, effect: float | tuple[float, ...], rng: random.Random,
         scenario: Scenario = PLAIN) -> tuple:
    """One simulated workload's rounds as `stats.timing` reads them: (per_round, orders, has_control, references).
    ``effect``: the candidate's true delta, one for every shape or one per shape (heterogeneous shapes)."""
    effects = effect if isinstance(effect, tuple) else (effect,) * SHAPES
    per_round, orders = {}, {}
    base_ms = [0.01 * (k + 1) for k in range(SHAPES)]
    sigma = scenario.sigma
    for r in range(1, rounds + 1):
        order = CELLS if r % 2 else tuple(reversed(CELLS))
        orders[r] = direction.BASELINE_FIRST if r % 2 else direction.CANDIDATE_FIRST
        per_round[r] = {}
        for position, cell in enumerate(order):
            process = noise(shape, rng) * sigma
            bias = RECORDING_BIAS if scenario.recording_round_1 and r == 1 and cell == "baseline" else 1.0
            per_round[r][cell] = {
                (f"test_{k}", (1024 * (k + 1),), "float16", 0): stats.Sample(
                    base_ms[k] * (1 + effects[k] if cell == "candidate" else 1.0) * bias
                    * math.exp(process + noise(shape, rng) * sigma * scenario.shape_noise[k] + DRIFT * sigma * position),
                    "graph")
                for k in range(SHAPES)}
    references = {1: "control"} if scenario.recording_round_1 else {}
    return per_round, orders, True, references


def judge(t: stats.Timing) -> dict:
    klass, reason, on_timing = timing_class(t, (4, 2), "scoped topology 4 -> 2")
    return {"class": klass, "reason": reason, "rests_on_timing": on_timing,
            "p": t.primary.p_value if t.primary else None}


def verdict(w: dict) -> WorkloadVerdict:
    """A judged workload as the verdict `holm_pass` reads: IR changed, topology 4 -> 2 (as `judge` says)."""
    cells = {c: {"task": c, "scoped": n, "unscoped": n, "excluded": [], "unjoinable": []}
             for c, n in (("baseline", 4), ("candidate", 2))}
    return WorkloadVerdict.model_validate({
        "class": w["class"], "reason": w["reason"], "rests_on_timing": w["rests_on_timing"], "screen": "IR_CHANGED",
        "ir": {"stage": "ttir", "fingerprints": {}, "changed": True, "control_matches": None, "files": {}},
        "topology": {"floor": 0, "cells": cells}, "correctness": {}, "markers": {},
        "rounds": {"planned": [], "done": [], "skipped": [], "missing": []}, "timing": None, "caliber": []})


def campaign(ws: list[dict]) -> dict:
    named = {str(i): verdict(w) for i, w in enumerate(ws)}
    held = holm_pass(named, {str(i): w["p"] for i, w in enumerate(ws)})
    return {n: {"class": v.klass, "reason": v.reason} for n, v in held.items()}


def false_rates(rounds: int, shape: str, trials: int, m: int, rng: random.Random,
                scenario: Scenario = PLAIN) -> tuple[float, float, float]:
    ws = [judge(workload(rounds, shape, 0.0, rng, scenario)) for _ in range(trials)]
    per_workload = sum(w["class"] in ("G", "R") for w in ws) / trials
    groups = [ws[i:i + m] for i in range(0, trials - m + 1, m)]
    after = [campaign(g) for g in groups]
    per_workload_holm = sum(w["class"] in ("G", "R") for g in after for w in g.values()) / (len(groups) * m)
    per_campaign = sum(any(w["class"] in ("G", "R") for w in g.values()) for g in after) / len(groups)
    return per_workload, per_workload_holm, per_campaign


def power(rounds: int, trials: int, rng: random.Random, scenario: Scenario = PLAIN, sign: int = 1) -> float | None:
    """Smallest slowdown (sign 1; a speedup with -1) in 0.1 % steps called R (G) in at least 95 % of
    trials, Gaussian noise."""
    wanted = "R" if sign > 0 else "G"
    for tenths in range(1, 201):
        effect = sign * tenths / 1000
        hits = sum(judge(workload(rounds, "gaussian", effect, rng, scenario))["class"] == wanted for _ in range(trials))
        if hits >= 0.95 * trials:
            return abs(effect)
    return None


# Heterogeneous shapes (issue 37): what a class says when its shapes move differently; (name, effects of e)
SPREADS = (("one of 4 shapes slower by e", lambda e: (e, 0.0, 0.0, 0.0)),
           ("one shape +e, one -e, two 0", lambda e: (e, -e, 0.0, 0.0)))
ISSUE_EXAMPLE = (0.003, 0.003, 0.003, -0.08)       # "3 shapes +0.3 %, 1 shape -8 %"


def outcome(w: dict) -> str:
    return w["class"] if w["class"] in ("G", "R") else "X disagree" if "shapes disagree" in w["reason"] else "other"


def identical_moved(t: stats.Timing) -> bool:
    """Whether identical code (IR unchanged) reads X "timing moved" rather than B: an established direction,
    or (with the code after issue 37) a leaning in every round or shapes disagreeing."""
    try:
        from campaign.judging import shaperule
    except ImportError:        # the code before: only an established direction
        shaperule = None
    p = t.primary
    return p is not None and (p.verdict != direction.NEUTRAL
                              or (shaperule is not None and shaperule.moved_anyway(p) is not None))


def smallest(rounds: int, trials: int, rng: random.Random, spread, wanted: str, top: int = 100) -> float | None:
    """Smallest e, in 0.1 % steps up to top/10 %, whose workloads read ``wanted`` (`outcome`) 95 % of the time."""
    for tenths in range(1, top + 1):
        e = tenths / 1000
        if sum(outcome(judge(workload(rounds, "gaussian", spread(e), rng))) == wanted for _ in range(trials)) >= 0.95 * trials:
            return e
    return None


def heterogeneous(trials: int, m: int, power_trials: int, rounds_list: list[int], rng: random.Random) -> None:
    print(f"\n# Heterogeneous shapes ({trials} workloads per row, campaigns of {m} through Holm; pointwise noise, "
          "Gaussian)\n")
    print("Wrong: under no effect a G or R; one shape slower, a G or a \"shapes disagree\"; one shape each way, "
          "a G or R (a geomean hiding a shape moved the other way); 3 shapes +0.3 % and one -8 %, an R (a G names "
          "its 1 of 4 shapes, the +0.3 % ones unresolved at this noise).\n")
    print("| shapes | e | rounds | G | R | X shapes disagree | other (B, C, X) | wrong per workload | "
          "wrong per campaign (after Holm) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    cases = [("no effect", lambda e: (0.0,) * SHAPES, (0.0,), ("G", "R")),
             (SPREADS[0][0], SPREADS[0][1], (0.01, 0.02, 0.05), ("G", "X disagree")),
             (SPREADS[1][0], SPREADS[1][1], (0.01, 0.02, 0.05), ("G", "R")),
             ("3 shapes +0.3 %, 1 shape -8 %", lambda e: ISSUE_EXAMPLE, (None,), ("R",))]
    for rounds in rounds_list:
        for name, spread, effects, wrong in cases:
            for e in effects:
                ws = [judge(workload(rounds, "gaussian", spread(e), rng)) for _ in range(trials)]
                got = [outcome(w) for w in ws]
                groups = [campaign(ws[i:i + m]) for i in range(0, trials - m + 1, m)]
                bad = sum(any(outcome(w) in wrong for w in g.values()) for g in groups) / len(groups)
                share = {k: got.count(k) / trials * 100 for k in ("G", "R", "X disagree", "other")}
                print(f"| {name} | {'' if e is None else f'{e * 100:g} %'} | {rounds} | {share['G']:.2f} % | "
                      f"{share['R']:.2f} % | {share['X disagree']:.2f} % | {share['other']:.2f} % | "
                      f"{sum(share[k] for k in wrong):.3f} % | {bad * 100:.2f} % |", flush=True)
        same = sum(identical_moved(workload(rounds, "t3", 0.0, rng)) for _ in range(trials)) / trials
        print(f"| identical code (IR unchanged), t(3) noise: read X \"timing moved\" instead of B | 0 | {rounds} | "
              f"| | | | {same * 100:.3f} % | |", flush=True)
    if not power_trials:
        return
    print(f"\n# Power on heterogeneous shapes ({power_trials} workloads per 0.1 % step, Gaussian noise)\n")
    print("| rounds | one of 4 shapes slower by e: called R 95 % | one shape +e, one -e: \"shapes disagree\" 95 % |")
    print("| --- | --- | --- |")
    for rounds in rounds_list:
        found = [smallest(rounds, power_trials, rng, spread, want) for (_, spread), want in zip(SPREADS, ("R", "X disagree"))]
        print(f"| {rounds} | " + " | ".join("none up to 10 %" if f is None else f"{f * 100:.1f} %" for f in found) + " |",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20000, help="simulated workloads per cell of the table")
    parser.add_argument("--campaign", type=int, default=10, help="IR-changed workloads per campaign (Holm family)")
    parser.add_argument("--power-trials", type=int, default=400)
    parser.add_argument("--rounds", default="2,3,4,5,6,8")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--class-rounds", default="4,8,12", help="round counts of the per-class table")
    parser.add_argument("--shapes-only", action="store_true", help="only the heterogeneous-shapes tables")
    parser.add_argument("--shape-rounds", default="4,8", help="round counts of the heterogeneous-shapes tables")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    started = time.monotonic()
    if args.shapes_only:
        heterogeneous(args.trials, args.campaign, args.power_trials, [int(r) for r in args.shape_rounds.split(",")], rng)
        print(f"\n({time.monotonic() - started:.0f} s)")
        return 0
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
    print(f"\n# Per workload class and round count ({args.trials} workloads per false-claim cell, "
          f"{args.power_trials} per power step; t(3) noise for false claims, Gaussian for power)\n")
    print("| class | median per-shape A/A | rounds | false G/R per workload | per campaign | slowdown called R 95 % | "
          "speedup called G 95 % |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for scenario in SCENARIOS:
        for rounds in (int(r) for r in args.class_rounds.split(",")):
            w, _, c = false_rates(rounds, "t3", args.trials, args.campaign, rng, scenario)
            up = power(rounds, args.power_trials, rng, scenario, 1)
            down = power(rounds, args.power_trials, rng, scenario, -1)
            shown = [f"{e * 100:.1f} %" if e is not None else "none up to 20 %" for e in (up, down)]
            print(f"| {scenario.name} | {scenario.sigma * 0.6745 * 2 * 100:.2f} % | {rounds} | {w * 100:.3f} % | "
                  f"{c * 100:.2f} % | {shown[0]} | {shown[1]} |", flush=True)
    heterogeneous(args.trials, args.campaign, args.power_trials, [int(r) for r in args.shape_rounds.split(",")], rng)
    print(f"\n({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
