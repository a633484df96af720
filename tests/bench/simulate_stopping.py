"""False-claim rate, power and rounds taken of adaptive rounds (``rounds.stop: decided``), with the shipped code.

Each simulated workload draws its rounds with `simulate_false_claims.draw` (the H200 noise model:
per-cell process offset, per-shape noise, drift with the position in a round; four shapes timed
10-40 us; the effect one for every shape, or one per shape as `simulate_false_claims.SPREADS` draws them), then runs them as the runner does: after ``min`` rounds and after every further pair,
`campaign.judging.stopping.decide` on `campaign.judging.stats.timing` of the rounds so far (each look
spending its share of the level); the workload is judged (`campaign.judging.classrules.timing_class`)
on the rounds it took, and campaigns of M workloads go through Holm (`campaign.judging.classify.holm_pass`).

Rows: stopping on (spending), stopping with every look at the full level ("naive": what the
spending prevents), and fixed rounds (the min and the max). Then, per workload class and true
slowdown, power and device time (rounds taken, summed) of adaptive rounds against every fixed even
count from min to max on the same drawn workloads (a fixed count takes the first n of the rounds
adaptive rounds drew), and the ratio of adaptive rounds' device time to the cheapest fixed count
with equal or better power (issue #31's goal: at most 0.6).

    python tests/bench/simulate_stopping.py [--trials N] [--power-trials N] [--min 4] [--max 12]

Not a test: a benchmark whose printed table is committed beside it (stopping.md).
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import simulate_false_claims as sim  # noqa: E402

from campaign.contract.plans import Stopping  # noqa: E402
from campaign.judging import direction, stats, stopping  # noqa: E402


def _first(drawn: tuple, n: int, stops) -> stats.Timing:
    per_round, orders, has_control, references = drawn
    keep = range(1, n + 1)
    return stats.timing({r: per_round[r] for r in keep}, {r: orders[r] for r in keep}, has_control,
                        {r: c for r, c in references.items() if r in keep}, stops)


def adaptive(stops: Stopping, shape: str, effect: float, rng: random.Random, scenario=sim.PLAIN,
             spend: bool = True) -> tuple[dict, int]:
    """One workload run with adaptive rounds: its judgement on the rounds it took, and how many."""
    drawn = sim.draw(stops.max, shape, effect, rng, scenario)
    for n in stopping.looks(stops):
        t = _first(drawn, n, stops if spend else None)
        if not stopping.decide(t, n, stops).more:
            break
    return sim.judge(t), n


def fixed(rounds: int, shape: str, effect: float, rng: random.Random, scenario=sim.PLAIN) -> tuple[dict, int]:
    return sim.judge(sim.workload(rounds, shape, effect, rng, scenario)), rounds


def rates(run, trials: int, m: int) -> tuple[float, float, float]:
    """Under no effect: false G/R per workload, after Holm, per campaign of ``m``; mean rounds."""
    ws, taken = [], 0
    for _ in range(trials):
        w, n = run()
        ws.append(w)
        taken += n
    per_workload = sum(w["class"] in ("G", "R") for w in ws) / trials
    groups = [sim.campaign(ws[i:i + m]) for i in range(0, trials - m + 1, m)]
    per_campaign = sum(any(w["class"] in ("G", "R") for w in g.values()) for g in groups) / len(groups)
    return per_workload, per_campaign, taken / trials


def paired(stops: Stopping, scenario, effect: float, rng: random.Random) -> tuple[tuple[bool, int], dict[int, bool]]:
    """One workload drawn once for ``max`` rounds, judged as adaptive rounds would take it (called R, rounds
    taken) and as every fixed even count from ``min`` to ``max`` would (the first n of the same rounds)."""
    drawn = sim.draw(stops.max, "gaussian", effect, rng, scenario)
    for n in stopping.looks(stops):
        t = _first(drawn, n, stops)
        if not stopping.decide(t, n, stops).more:
            break
    fixed_n = {k: sim.judge(_first(drawn, k, None))["class"] == "R" for k in stopping.looks(stops)}
    return (sim.judge(t)["class"] == "R", n), fixed_n


def device_time(scenario, stops: Stopping, trials: int, rng: random.Random) -> None:
    """Power and device time (rounds taken, summed) of adaptive rounds against fixed counts on the same
    workloads; the ratio to the cheapest fixed count whose power is equal or better, and to fixed ``min``.
    Equal: within two standard errors of the paired difference (sqrt(discordant workloads) / trials), so that
    one workload's luck at 99.9 % does not pick a count."""
    counts = stopping.looks(stops)
    print(f"\n# {scenario.name} (median per-shape A/A {scenario.sigma * 0.6745 * 2 * 100:.2f} %): true slowdown "
          f"called R, {trials} workloads each, Gaussian noise; fixed n = the first n rounds of the same workloads\n")
    print(f"| effect | adaptive {stops.min}..{stops.max}: called R | mean rounds | "
          + " | ".join(f"fixed {k}" for k in counts)
          + " | cheapest fixed count at equal or better power | device time, adaptive / that count | "
            f"adaptive / fixed {stops.min} |")
    print("| --- " * (6 + len(counts)) + "|")
    for effect in (0.01, 0.02, 0.05):
        hits, taken, fixed_hits, discordant = 0, 0, dict.fromkeys(counts, 0), dict.fromkeys(counts, 0)
        for _ in range(trials):
            (hit, n), fixed_n = paired(stops, scenario, effect, rng)
            hits, taken = hits + hit, taken + n
            for k in counts:
                fixed_hits[k] += fixed_n[k]
                discordant[k] += fixed_n[k] != hit
        match = next((k for k in counts if fixed_hits[k] >= hits - 2 * math.sqrt(discordant[k])), None)
        ratio = (f"{taken / (trials * match):.2f}" if match else
                 f"none up to {stops.max} has it (against fixed {stops.max}: {taken / (trials * stops.max):.2f})")
        worse = fixed_hits[stops.min] > hits + 2 * math.sqrt(discordant[stops.min])
        low = f"{taken / (trials * stops.min):.2f}" + (" (less power)" if worse else "")
        print(f"| {effect * 100:.0f} % | {hits / trials * 100:.1f} % | {taken / trials:.2f} | "
              + " | ".join(f"{fixed_hits[k] / trials * 100:.1f} %" for k in counts)
              + f" | {match or 'none'} | {ratio} | {low} |", flush=True)


def positions(spec: str, stops: Stopping, trials: int, rng: random.Random) -> None:
    """Why the floor's position is 4/5: other positions k/(n + 1) of the A/A floor (``direction.FLOOR_POSITION``,
    set here for the measurement only), each on null workloads (mean rounds), a 1 % slowdown on the
    graph-timed class (power: adaptive, fixed min, fixed max) and false claims at the maximum (t(3) noise)."""
    print(f"\n# The floor's position: {trials} null workloads, {trials // 2} with a 1 % slowdown (pointwise), "
          f"{trials * 3 // 2} at {stops.max} fixed rounds under t(3) noise, per position\n")
    print(f"| position | rank at {', '.join(str(n) for n in stopping.looks(stops))} rounds | null: mean rounds | "
          f"1 %: adaptive called R | mean rounds | fixed {stops.min} | fixed {stops.max} | false G/R at {stops.max} |")
    print("| --- " * 8 + "|")
    shipped = direction.FLOOR_POSITION
    try:
        for text in spec.split(","):
            direction.FLOOR_POSITION = tuple(int(x) for x in text.split("/"))
            null = sum(adaptive(stops, "gaussian", 0.0, rng)[1] for _ in range(trials)) / trials
            runs = [paired(stops, sim.PLAIN, 0.01, rng) for _ in range(trials // 2)]
            hit, taken = (sum(r[0][i] for r in runs) / len(runs) for i in (0, 1))
            low, high = (sum(r[1][k] for r in runs) / len(runs) for k in (stops.min, stops.max))
            false = sim.false_rates(stops.max, "t3", trials * 3 // 2, 10, rng)[0]
            ranks = ", ".join(str(direction.floor_rank(n)) for n in stopping.looks(stops))
            print(f"| {text} | {ranks} | {null:.2f} | {hit * 100:.1f} % | {taken:.2f} | {low * 100:.1f} % | "
                  f"{high * 100:.1f} % | {false * 100:.3f} % |", flush=True)
    finally:
        direction.FLOOR_POSITION = shipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10000, help="simulated workloads per false-claim row")
    parser.add_argument("--campaign", type=int, default=10, help="IR-changed workloads per campaign (Holm family)")
    parser.add_argument("--power-trials", type=int, default=1000)
    parser.add_argument("--min", type=int, default=4)
    parser.add_argument("--max", type=int, default=12)
    parser.add_argument("--seed", type=int, default=20261205)
    parser.add_argument("--positions", default="", help="floor positions k/(n + 1) to compare, e.g. 4/5,17/20,9/10,1/1 "
                        "(1/1: the largest |A/A|); only that table is printed")
    parser.add_argument("--position-trials", type=int, default=2000)
    args = parser.parse_args(argv)
    rng, stops = random.Random(args.seed), Stopping(min=args.min, max=args.max)
    started = time.monotonic()
    if args.positions:
        positions(args.positions, stops, args.position_trials, rng)
        print(f"\n({time.monotonic() - started:.0f} s)")
        return 0
    print(f"# Adaptive rounds {args.min}..{args.max} under no effect ({args.trials} workloads per row, campaigns "
          f"of {args.campaign}, seed {args.seed})\n")
    print("| rounds | noise | false G/R per workload | per campaign (any false G/R, after Holm) | mean rounds |")
    print("| --- | --- | --- | --- | --- |")
    kinds = (("adaptive, spending", lambda s: (lambda: adaptive(stops, s, 0.0, rng)), ("gaussian", "t3", "laplace")),
             ("adaptive, naive (no spending)", lambda s: (lambda: adaptive(stops, s, 0.0, rng, spend=False)), ("gaussian",)),
             (f"fixed {args.min}", lambda s: (lambda: fixed(args.min, s, 0.0, rng)), ("gaussian",)),
             (f"fixed {args.max}", lambda s: (lambda: fixed(args.max, s, 0.0, rng)), ("gaussian",)))
    for name, make, shapes in kinds:
        for shape in shapes:
            w, c, mean = rates(make(shape), args.trials, args.campaign)
            print(f"| {name} | {shape} | {w * 100:.3f} % | {c * 100:.2f} % | {mean:.2f} |", flush=True)
    for scenario in sim.SCENARIOS:
        device_time(scenario, stops, args.power_trials, rng)
    print(f"\n({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
