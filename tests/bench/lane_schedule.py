"""How a screen's IR pass scales with lanes, from one real root: its cells' own seconds replayed over N lanes.

    .venv/bin/python tests/bench/lane_schedule.py ROOT [--lanes 2 4 8 16 32] [--at SECONDS]
        [--partial LANES SECONDS CELLS] [--split WORKLOAD=N ...]

Each IR-pass side is a queue its lanes claim workloads from one at a time
(`campaign.running.sidequeue`); a lane's process takes at most ``bound`` workloads (batch.json),
then a new process starts. This replays that discipline: each side's cells in the order the root's
lanes claimed them (first start in batches/*/progress.tsv), each cell's seconds as the root measured
them (end - start), and each new process the root's median start (the gap between one process's
last end and the next one's first start on the same side, read where a side had one lane). With the
root's own lane count it should give the root's own span (the check printed first); at other
counts it is an estimate that assumes a cell costs what it cost here: a lane keeps about one core
to itself (two lanes on two cores here, sixteen on sixteen there) and nothing else is shared
(memory, disk, the SASS store's first disassembly of a cubin). ``--at`` counts the cells the
replay has ended by that second, to hold it against a partial run on the bigger host. ``--partial``
takes such a run (its lanes, how long it ran, how many IR-pass cells it ended) and finds the factors by
which its cells were slower than this root's (those for which the replay ends that many cells in that
time; every cell scaled alike), then replays the whole pass at the least and the greatest: an estimate
calibrated on the partial run, not a measurement. ``--split WORKLOAD=N`` replays each of that workload's
cells as N cells of an Nth of its seconds, claimed where it was: what `campaign inventory --split-above`
makes of a heavy workload (one per dtype), assuming its dtypes cost alike.
"""
from __future__ import annotations

import argparse
import heapq
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from campaign.contract.progresslines import parse


@dataclass(frozen=True)
class Cell:
    task_id: str
    side: str
    start: float
    seconds: float


def ir_pass_cells(root: Path) -> tuple[list[Cell], int, dict[str, list[float]]]:
    """The root's IR-pass cells (round 0), the process bound, and each side's process-start gaps."""
    cells: list[Cell] = []
    gaps: dict[str, list[float]] = {}
    bound = 0
    batches = sorted(root.glob("batches/*/progress.tsv"))
    for progress in batches:
        bound = max(bound, json.loads((progress.parent / "batch.json").read_text(encoding="utf-8"))["bound"])
        started: dict[str, float] = {}
        for e in parse(progress.read_text(encoding="utf-8")):
            if "/r0/" not in e.task_id:
                continue
            if e.kind == "start":
                started[e.task_id] = e.unix
            elif e.task_id in started:
                cells.append(Cell(e.task_id, e.task_id.rsplit("/", 1)[-1], started[e.task_id], e.unix - started[e.task_id]))
    for side in {c.side for c in cells}:
        ordered = sorted((c for c in cells if c.side == side), key=lambda c: c.start)
        gaps[side] = [b.start - (a.start + a.seconds) for a, b in zip(ordered, ordered[1:])]
    return cells, bound, gaps


def replay(cells: list[Cell], lanes: int, bound: int, restart: float, at: float | None = None,
           slower: float = 1.0, longest_first: bool = False) -> tuple[float, int]:
    """The span of the sides' queues over ``lanes`` (split evenly between the sides), and the cells
    ended by ``at``; every cell's seconds times ``slower``; each queue in the root's claim order, or
    with ``longest_first`` in the order of its cells' seconds here, longest first."""
    sides = sorted({c.side for c in cells})
    per_side = max(1, lanes // len(sides))
    span, ended = 0.0, 0
    for side in sides:
        queue = sorted((c for c in cells if c.side == side),
                       key=(lambda c: -c.seconds) if longest_first else (lambda c: c.start))
        free = [(restart, lane, 0) for lane in range(per_side)]          # (free at, lane, claimed in its process)
        heapq.heapify(free)
        for cell in queue:
            t, lane, claimed = heapq.heappop(free)
            if claimed == bound:                                          # a new process for the next claim
                t, claimed = t + restart, 0
            done = t + cell.seconds * slower
            ended += at is not None and done <= at
            span = max(span, done)
            heapq.heappush(free, (done, lane, claimed + 1))
    return span, ended


def split(cells: list[Cell], parts: dict[str, int]) -> list[Cell]:
    """Each cell of a workload named in ``parts`` as that many cells of its share of the seconds."""
    out = []
    for cell in cells:
        n = parts.get(cell.task_id.split("/", 1)[0], 1)
        out.extend(Cell(f"{cell.task_id}#{k}", cell.side, cell.start + k * 1e-6, cell.seconds / n) for k in range(n))
    return out


def slowdown(cells: list[Cell], lanes: int, bound: int, restart: float, seconds: float,
             ended: int) -> tuple[float, float]:
    """The factors for which the replay over ``lanes`` ends ``ended`` cells by ``seconds``: the least and
    the greatest (bisection both ways: the count only falls as the factor grows)."""
    def edge(fits: Callable[[int], bool]) -> float:
        low, high = 0.01, 100.0                 # fits(count at low) holds, fits(count at high) does not
        for _ in range(80):
            mid = (low + high) / 2
            low, high = (mid, high) if fits(replay(cells, lanes, bound, restart, seconds, mid)[1]) else (low, mid)
        return low
    return edge(lambda n: n > ended), edge(lambda n: n >= ended)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--lanes", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    parser.add_argument("--at", type=float, help="count the cells the replay has ended by this second")
    parser.add_argument("--partial", type=float, nargs=3, metavar=("LANES", "SECONDS", "CELLS"),
                        help="a partial run elsewhere: calibrate the cells' slowdown there and replay the whole pass")
    parser.add_argument("--split", nargs="+", default=[], metavar="WORKLOAD=N",
                        help="replay each cell of WORKLOAD as N cells of an Nth of its seconds (split by dtype)")
    args = parser.parse_args()
    cells, bound, gaps = ir_pass_cells(args.root)
    measured_cells = cells                       # as the root (and a partial run elsewhere) ran them
    parts = {name: int(n) for name, _, n in (item.partition("=") for item in args.split)}
    if parts:
        cells = split(cells, parts)
        print(f"split: {', '.join(f'{name} into {n}' for name, n in parts.items())} (each part an equal share)")
    restarts = [g for side in gaps.values() for g in side if g > 0.5]   # within a process the gap is ~0
    restart = statistics.median(restarts) if restarts else 0.0
    first = min(c.start for c in cells)
    measured = max(c.start + c.seconds for c in cells) - first
    own_lanes = json.loads((args.root / "matrix.json").read_text(encoding="utf-8")).get("ir_pass_lanes")
    seconds = sum(c.seconds for c in cells)
    longest = max(cells, key=lambda c: c.seconds)
    print(f"{args.root.name}: {len(cells)} IR-pass cells, {seconds:,.0f} cell-seconds, process bound {bound}, "
          f"median process start {restart:.1f} s ({len(restarts)} starts), longest cell {longest.task_id} "
          f"{longest.seconds:.0f} s; measured span {measured:,.0f} s ({measured / 60:.1f} min)")
    print()
    print("| lanes | replayed span, claim order | min | longest first | min | floor: cell-seconds / lanes "
          "| cells ended by --at |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for lanes in args.lanes:
        span, ended = replay(cells, lanes, bound, restart, args.at)
        lpt, _ = replay(cells, lanes, bound, restart, longest_first=True)
        mark = " (the root's own)" if lanes == own_lanes else ""
        print(f"| {lanes}{mark} | {span:,.0f} s | {span / 60:.1f} | {lpt:,.0f} s | {lpt / 60:.1f} | "
              f"{seconds / lanes:,.0f} s | {ended if args.at is not None else ''} |")
    if args.partial:
        lanes, ran, ended = int(args.partial[0]), args.partial[1], int(args.partial[2])
        low, high = slowdown(measured_cells, lanes, bound, restart, ran, ended)     # the partial run was not split
        fast, slow = (replay(cells, lanes, bound, restart, None, f)[0] for f in (low, high))
        lpt = replay(cells, lanes, bound, restart, None, high, longest_first=True)[0]
        print(f"\npartial run: {ended} IR-pass cells ended in {ran:.0f} s on {lanes} lanes: its cells "
              f"{low:.2f}x to {high:.2f}x this root's seconds (every factor in between ends that many); the "
              f"whole pass at those factors: {fast:,.0f} to {slow:,.0f} s ({fast / 60:.1f} to {slow / 60:.1f} min), "
              f"longest first {lpt:,.0f} s ({lpt / 60:.1f} min); an estimate")

if __name__ == "__main__":
    main()
