"""Several cards of one host: one runner per card, one root.

A manifest's ``device`` may name several cards of one model (``count``, ``indices`` or
``uuids``); ``campaign run --devices 0,1`` narrows them (`campaign.planning.cardplan`).
Workloads, never cells, are placed (`campaign.planning.partition.lpt`): a workload's cells,
every round, run on one card, so an A/B pair never crosses cards. Each card gets its own
`Runner` over its own workloads, its workers started with the backend's visibility
variable set to that card only, its own telemetry sampler, and its own entry in the root's
one lock (`campaign.running.lock`: one running worker per card, so a takeover ends every
orphan). Rows from every card go to the one status.tsv, each carrying its card's uuid.

`run_group` is the seam every executor calls: `LocalCards` runs one thread per card; an
executor that places groups on other hosts calls the same function there.

The cpu backend has no cards to enumerate: ``count: K`` there declares K virtual cards,
``cpu-virtual-<n>``, which all compile for the declared target -- labelled so in every row.
"""
from __future__ import annotations

import sys
import threading
from dataclasses import replace
from typing import Optional, Sequence, TextIO

from campaign.planning.cardplan import Card
from campaign.running.progress import PlainProgress
from campaign.running.runner import Events, Outcome, Runner, RunSetup, Telemetry

FAILED = "failed"             # an Outcome state: the card's runner raised (the card died under it)


def group_setup(setup: RunSetup, workloads: Sequence[str], card: Optional[Card]) -> RunSetup:
    """The session's setup narrowed to one card: its workloads, its visibility, its uuid (no card:
    the workloads alone, rows naming no device, as a one-card run's)."""
    pinned = dict(setup.pinned_env)
    if card is not None and card.visible is not None and setup.visibility_variable:
        pinned[setup.visibility_variable] = card.visible
    return replace(setup, pinned_env=pinned, workloads=frozenset(workloads), card=card)


def group_runner(setup: RunSetup, workloads: Sequence[str], card: Optional[Card], events: Events,
                 telemetry: Telemetry) -> Runner:
    """A `Runner` over ``workloads`` only, on ``card`` only (call ``.run()``, or ``.interrupt()``
    from another thread). Its workers see that one card; its rows carry ``card.uuid``."""
    return Runner(group_setup(setup, workloads, card), events, telemetry)


def run_group(setup: RunSetup, workloads: Sequence[str], card: Optional[Card], events: Events,
              telemetry: Telemetry) -> Outcome:
    """Run one card's group of workloads against ``setup.root`` and return how it ended.

    ``setup`` is the session's (`campaign.flows.session`), built once; ``workloads`` the
    card's names from the partition (partition.json); ``events``/``telemetry`` that card's
    (a sampler of that card only). Every task of those workloads runs serially on the card,
    in matrix order, resumed as `Runner.run` resumes (settled tasks are not run again), its
    rows appended to the root's status.tsv with ``card.uuid`` in the device column and its
    running worker in the root lock under ``card.slot``. It never judges and never seals:
    the caller does that once, when every group has completed. The Outcome is the Runner's:
    COMPLETED, CANARY_FAILED (the group holds the canary) or INTERRUPTED.
    """
    return group_runner(setup, workloads, card, events, telemetry).run()


class CardLines(PlainProgress):
    """Plain progress lines of one card, prefixed with it; the cards share a stream and a lock."""

    def __init__(self, card: Card, lock: threading.Lock, stream: TextIO = sys.stdout):
        super().__init__(stream)
        self.card, self.lock = card, lock

    def _print(self, text: str) -> None:
        with self.lock:
            print(f"card {self.card.index} ({self.card.uuid}): {text}", file=self.stream, flush=True)


class LocalCards:
    """One thread per card on this host, each driving `group_runner`; `interrupt` stops them all,
    and a failed canary on one card stops the others (the campaign stops before the rest runs)."""

    def __init__(self) -> None:
        self.runners: list[Runner] = []
        self._lock = threading.Lock()
        self._stopped: Optional[str] = None

    def interrupt(self, reason: str) -> None:
        with self._lock:
            self._stopped = reason
            for runner in self.runners:
                runner.interrupt(reason)

    def run(self, setup: RunSetup, groups: Sequence[tuple[Card, Sequence[str], Events, Telemetry]]) -> list[Outcome]:
        outcomes: list[Optional[Outcome]] = [None] * len(groups)

        def drive(index: int, runner: Runner) -> None:
            try:
                outcomes[index] = runner.run()
            except BaseException as exc:   # one card's failure is its outcome; the others go on
                outcomes[index] = Outcome(FAILED, f"{type(exc).__name__}: {exc}")
            if outcomes[index].state == "canary_failed":
                self.interrupt(f"the canary failed on card {groups[index][0].index}")

        threads = []
        with self._lock:
            for index, (card, workloads, events, telemetry) in enumerate(groups):
                runner = group_runner(setup, workloads, card, events, telemetry)
                if self._stopped is not None:
                    runner.interrupt(self._stopped)
                self.runners.append(runner)
                threads.append(threading.Thread(target=drive, args=(index, runner), name=f"card-{card.index}"))
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():      # a timed join: the main thread keeps taking SIGINT/SIGTERM
                thread.join(0.2)
        return [outcome or Outcome(FAILED, "the card's thread ended without an outcome") for outcome in outcomes]
