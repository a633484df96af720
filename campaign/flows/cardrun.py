"""The session's run over several cards of one host (`campaign.running.cards`).

Before anything runs: the cards are discovered and checked (`campaign.planning.cardplan`),
the workloads partitioned by LPT over the weights (an earlier sealed root of the same
manifest named by ``--weights-from``, read through `campaign.judging.evidence`; else the
manifest's ``weight_s``; else equal, said so) and that partition written to partition.json,
sealed with the root. A resume reads partition.json back: every card keeps its workloads,
and the unfinished workloads of cards ``--devices`` left out move to the cards that run,
recorded in ``partition.resume-<n>.json``. A card that fails its check has its unfinished
tasks marked ``card_failed`` with the reason (history, not a finish: `campaign run --devices`
resumes them elsewhere) before the other cards start.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from campaign.contract import canonical, status
from campaign.contract.artifacts import first_free
from campaign.contract.errors import InputError
from campaign.contract.runroot import RunRoot
from campaign.planning import cardplan, partition
from campaign.planning.cardplan import PARTITION_FILE, Card
from campaign.running import scheduler
from campaign.running.cards import FAILED, CardLines, LocalCards, group_runner
from campaign.running.runner import CANARY_FAILED, COMPLETED, INTERRUPTED, Outcome, RunSetup
from campaign.running.telemetry import CardSource, Sampler, make_source, visible_devices


@dataclass(frozen=True)
class CardsRun:
    outcomes: tuple[tuple[Card, Outcome], ...]
    failed: tuple[tuple[Card, str], ...]        # cards that failed their check: their tasks were marked
    groups: dict[int, tuple[str, ...]]          # slot -> workloads each running card was given


def discover(backend, device) -> list:
    """The cards the host shows (the cpu backend's declared virtual cards); replaced in tests."""
    return backend.enumerate_devices() if backend.capabilities.executes else cardplan.virtual_cards(device)


def _comparable(manifest) -> dict:
    # the cards are not the campaign: a 1-card root weighs a 2-card run of the same manifest
    return manifest.model_dump(mode="json", exclude={"device"})


def root_weights(weights_from: Path, setup: RunSetup) -> tuple[dict[str, float], str]:
    """Seconds per workload an earlier sealed root of the same manifest spent, and its digest."""
    weights_from = weights_from.resolve()
    source = RunRoot(weights_from)
    if not source.sealed:
        raise InputError(f"--weights-from {weights_from}: not a sealed root (its seconds are not final)")
    manifest = source.manifest
    if _comparable(manifest) != _comparable(setup.manifest):
        raise InputError(f"--weights-from {weights_from}: its manifest is not this root's (device aside): "
                         "its seconds would weigh other work")
    rows, _bad = source.status()
    digest = canonical.sha256_file(source.receipt_file)
    return partition.root_seconds([(row.workload, row.elapsed_s) for row in rows]), f"{weights_from} (receipt {digest})"


def _first_partition(setup: RunSetup, slots: Sequence[Card], weights_from: Optional[Path]) -> dict:
    manifest = setup.manifest
    names = [w.name for w in manifest.workloads]
    from_root, source = (None, None) if weights_from is None else root_weights(weights_from, setup)
    weighed = partition.weights(names, manifest.rounds.planned, from_root=from_root,
                                weight_s={w.name: w.weight_s for w in manifest.workloads})
    # over the cards this run was given (and those that failed their check, so their workloads are
    # marked and can be resumed elsewhere): `--devices 0` on a two-card manifest is a one-card run
    data = cardplan.record(partition.lpt(weighed, len(slots)), slots, source)
    canonical.write_json_new(setup.root / PARTITION_FILE, data)
    equal = sorted(name for name, w in weighed.items() if w.source == partition.EQUAL)
    if equal:   # said, never silent: an equal weight is a guess, and the partition is only as good
        print(f"partition: {', '.join(equal)} weighed equal (no weight_s, no --weights-from); "
              f"{PARTITION_FILE} records it", flush=True)
    return data


class _NoTelemetry:
    def mark(self) -> None:
        pass

    def window(self, start: float, end: float, cell_dir: Path):
        raise AssertionError("a card_failed row runs no cell")


def _mark(setup: RunSetup, card: Card, why: str, workloads: Sequence[str], lines: threading.Lock) -> None:
    """A card_failed row for each unsettled task of ``workloads``, appended by that card's runner."""
    runner = group_runner(setup, workloads, card, CardLines(card, lines), _NoTelemetry())
    rows = setup.root.status()[0]
    tasks = tuple(sorted((t for t in setup.matrix.tasks if t.workload in workloads), key=lambda t: t.order))
    runner.events.started(tasks, status.settled(rows))
    scheduler.mark(runner, tasks, rows, lambda task: status.StatusRow(
        task_id=task.id, round=task.round, workload=task.workload, cell=task.cell, rc=None,
        rc_name=status.CARD_FAILED, note=f"card {card.index} failed its check: {why}"))


def plan(setup: RunSetup, backend, devices: Optional[Sequence[int]], weights_from: Optional[Path],
         parent_env, lines: threading.Lock) -> tuple[list[tuple[Card, tuple[str, ...]]], list[tuple[Card, str]]]:
    """(cards that run with their workloads, cards that failed with why); partition.json written."""
    device = setup.manifest.device
    variable = backend.visibility_variable
    cards, failed = cardplan.select(device, discover(backend, device), devices,
                                    visible_devices(parent_env.get(variable)) if variable else None)
    path = setup.root / PARTITION_FILE
    if path.is_file():
        if weights_from is not None:
            raise InputError(f"--weights-from: {path} already places this root's workloads; a resume keeps it")
        data = canonical.read_json(path)
    else:
        data = _first_partition(setup, sorted([*cards, *(c for c, _why in failed)], key=lambda c: c.slot),
                                weights_from)
    weights = {name: partition.Weight(float(w["seconds"]), w["source"]) for name, w in data["weights"].items()}
    failed_slots = {card.slot for card, _why in failed}
    placement = {slot: names for slot, names in cardplan.placed(data).items() if slot not in failed_slots}
    unfinished = {t.workload for t in scheduler.unsettled(setup.matrix.tasks, setup.root.status()[0])}
    groups, moved = cardplan.replace_onto(placement, [c.slot for c in cards], unfinished, weights)
    if moved:
        by_slot = {c.slot: c for c in cards}
        first_free(lambda n: setup.root / f"partition.resume-{n}.json",
                   lambda p: canonical.write_json_new(p, {"schema_version": 1, "moved": {
                       name: {"slot": slot, "uuid": by_slot[slot].uuid} for name, slot in sorted(moved.items())}}))
    for card, why in failed:
        _mark(setup, card, why, cardplan.placed(data).get(card.slot, ()), lines)
    return [(card, groups[card.slot]) for card in cards], failed


def run(setup: RunSetup, backend, devices: Optional[Sequence[int]], weights_from: Optional[Path],
        interval: float, executor: LocalCards) -> CardsRun:
    """Plan, then run every card's group at once, one thread each; telemetry per card."""
    lines = threading.Lock()
    groups, failed = plan(setup, backend, devices, weights_from, os.environ, lines)
    for card, why in failed:
        print(f"RUN_CARD card {card.index} ({card.uuid}) failed its check: {why}; its unfinished workloads are "
              "marked card_failed", flush=True)
    samplers, work = [], []
    for card, workloads in groups:
        sampler = Sampler(setup.root, lambda card=card: CardSource(make_source(
            backend.capabilities.telemetry, [card.visible] if card.visible is not None else None,
            not backend.capabilities.executes), card.uuid), interval)
        if not sampler.start():
            print(f"card {card.index}: {sampler.reason} (recorded in telemetry.err; the campaign goes on)", flush=True)
        samplers.append(sampler)
        work.append((card, workloads, CardLines(card, lines), sampler))
    try:
        outcomes = executor.run(setup, work)
    finally:
        for sampler in samplers:
            sampler.stop()
    return CardsRun(tuple((card, outcome) for (card, _w, _e, _t), outcome in zip(work, outcomes)), tuple(failed),
                    {card.slot: tuple(names) for card, names in groups})


CARD_FAILED = "card_failed"   # an Outcome state: a card failed its check or died; the root stays unsealed


def settle(ran: CardsRun, setup: RunSetup) -> Outcome:
    """One Outcome for the session: a failed canary first, then an interruption, then a failed card
    (a card whose runner died has its unfinished tasks marked now, as a card failing its check was)."""
    states = {outcome.state: (card, outcome) for card, outcome in ran.outcomes}
    for state in (CANARY_FAILED, INTERRUPTED):
        if state in states:
            return states[state][1]
    lines = threading.Lock()
    failed = list(ran.failed)
    for card, outcome in ran.outcomes:
        if outcome.state == FAILED:
            _mark(setup, card, f"its runner died: {outcome.detail}", ran.groups.get(card.slot, ()), lines)
            failed.append((card, f"its runner died: {outcome.detail}"))
    if not failed:
        return Outcome(COMPLETED)
    ok = [str(card.index) for card, outcome in ran.outcomes if outcome.state == COMPLETED]
    where = (f"`campaign run {setup.root} --devices {','.join(ok)}` runs them on the cards that completed"
             if ok else f"`campaign run {setup.root} --devices N` runs them on a card that works")
    return Outcome(CARD_FAILED, "; ".join(f"card {card.index} ({card.uuid}): {why}" for card, why in failed)
                   + f"; its unfinished tasks are marked {status.CARD_FAILED}; {where}")

