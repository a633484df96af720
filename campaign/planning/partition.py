"""Workloads spread over the cards of one host: longest processing time first, by weight.

A workload's cells, every round of them, stay on one card (an A/B pair never crosses
cards), so the unit placed is a workload and its weight is the device time of all its
rounds. Greedy LPT -- heaviest first, each to the card with the least load so far --
is within 4/3 of the best makespan and, unlike a hash or a count split, never leaves a
card idle while one heavy workload waits behind three light ones (the earlier harness:
70 min against 120 for a hash split of the same batch). Nothing can beat the floor
max(heaviest workload, total / cards); the report prints the critical path against it.

Weights, in order of trust: the seconds an earlier sealed root of the same manifest spent
on the workload (every cell that ran, all rounds: later rounds skipped for an unchanged IR
cost nothing there and nothing here), the screen's ``weight_s`` (one screened round; N
rounds cost about N times it), else equal weights -- and the partition says which.
Pure functions: the caller reads roots and manifests.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

ROOT, SCREEN, EQUAL = "sealed root", "weight_s", "equal"


@dataclass(frozen=True)
class Weight:
    seconds: float
    source: str                   # ROOT | SCREEN | EQUAL


@dataclass(frozen=True)
class Partition:
    cards: tuple[tuple[str, ...], ...]          # workloads per card, in run order (heaviest first)
    weights: Mapping[str, Weight]

    def load(self, card: int) -> float:
        return sum(self.weights[name].seconds for name in self.cards[card])

    @property
    def critical_path_s(self) -> float:
        return max((self.load(card) for card in range(len(self.cards))), default=0.0)

    @property
    def floor_s(self) -> float:
        """No placement finishes sooner: the heaviest workload, or an even share of the total."""
        seconds = [w.seconds for w in self.weights.values()]
        return max(max(seconds, default=0.0), sum(seconds) / max(len(self.cards), 1))

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(sorted({w.source for w in self.weights.values()}))


def weights(workloads: Sequence[str], rounds: int, from_root: Optional[Mapping[str, float]] = None,
            weight_s: Optional[Mapping[str, Optional[float]]] = None) -> dict[str, Weight]:
    """Each workload's predicted device seconds for ``rounds`` rounds, with where it came from.

    ``from_root``: seconds an earlier sealed root of the same manifest spent on the workload,
    all its rounds; ``weight_s``: the manifest's screened seconds for one round. A workload with neither weighs the mean of
    those that have one (so an unknown workload is neither free nor dominant), and if none
    has one every workload weighs 1 -- equal weights, said so in ``source``.
    """
    from_root, weight_s = from_root or {}, weight_s or {}
    known: dict[str, Weight] = {}
    for name in workloads:
        if from_root.get(name) is not None:
            known[name] = Weight(float(from_root[name]), ROOT)
        elif weight_s.get(name) is not None:
            known[name] = Weight(float(weight_s[name]) * rounds, SCREEN)
    mean = sum(w.seconds for w in known.values()) / len(known) if known else 1.0
    return {name: known.get(name, Weight(mean, EQUAL)) for name in workloads}


def lpt(weights: Mapping[str, Weight], cards: int) -> Partition:
    """Heaviest first, each to the least-loaded card (ties: the lower card, then the name)."""
    if cards < 1:
        raise ValueError(f"cannot partition over {cards} cards")
    loads = [0.0] * cards
    placed: list[list[str]] = [[] for _ in range(cards)]
    for name in sorted(weights, key=lambda n: (-weights[n].seconds, n)):
        card = min(range(cards), key=lambda c: (loads[c], c))
        placed[card].append(name)
        loads[card] += weights[name].seconds
    return Partition(cards=tuple(tuple(p) for p in placed), weights=dict(weights))


def fewest_within(weights: Mapping[str, Weight], budget_s: float) -> Partition:
    """The LPT partition over the fewest bins whose heaviest bin is within ``budget_s`` (one GPU job's
    seconds); raises ValueError naming each workload that alone exceeds it (no partition fits)."""
    over = sorted(name for name, w in weights.items() if w.seconds > budget_s)
    if over:
        raise ValueError(", ".join(f"{name} ({weights[name].seconds:g} s)" for name in over)
                         + f" alone exceed{'s' if len(over) == 1 else ''} {budget_s:g} s")
    bins = max(1, math.ceil(sum(w.seconds for w in weights.values()) / budget_s)) if budget_s > 0 else 1
    while True:    # LPT over the even-share floor first; one bin more until the heaviest fits
        placed = lpt(weights, bins)
        if placed.critical_path_s <= budget_s or bins >= len(weights):
            return placed
        bins += 1


def root_seconds(rows: Sequence[tuple[str, Optional[float]]]) -> dict[str, float]:
    """Seconds per workload from an earlier root's (workload, elapsed_s) status rows: every
    attempt counts (a retried cell cost its device time twice), a row without time adds none."""
    totals: dict[str, float] = {}
    for workload, elapsed in rows:
        totals[workload] = totals.get(workload, 0.0) + (elapsed or 0.0)
    return totals


def ir_pass_seconds(rows: Sequence[tuple[str, int, Optional[float]]]) -> dict[str, float]:
    """Seconds per workload of a screen's IR pass from its (workload, round, elapsed_s) status rows: the
    heavier of its round-0 cells (each side's queue runs one of them; a retried cell counts its last
    attempt's seconds at most once), for a later screen's ``weight_s`` (`campaign inventory --weights-from`)."""
    heaviest: dict[str, float] = {}
    for workload, round_, elapsed in rows:
        if round_ == 0 and elapsed is not None:
            heaviest[workload] = max(heaviest.get(workload, 0.0), elapsed)
    return heaviest
