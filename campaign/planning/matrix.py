"""Expansion of a manifest into its task matrix: a pure function with byte-stable output.

Order: canary workloads first (all their rounds, so a broken canary stops the
campaign before anything else is measured), then round-major over the rest so
every workload's round 1 exists before any later round (adaptive rounds read
it). Within a round the cells alternate: odd rounds baseline -> control ->
candidate, even rounds the reverse, cancelling one-directional drift. Round 1's
baseline records the autotune configs; every other task replays that recording,
so only the switch and noise remain between cells. With ``defaults.autotune_from``
no task records: every one replays the recording copied from that sealed root
(`campaign.planning.pinning`). With ``defaults.tuning: per_side`` every timed task
records: each side tunes for itself in every round, in its own tuner store, and
nothing replays (the winner a side picks is then part of what is measured, and a
round's re-tuning part of the spread the rounds see).

A screen's matrix (``ir_pass``) puts an IR round, round 0, before round 1 (canaries
still first, all their rounds): baseline then candidate, untimed (``Task.timed``
False), each recording its own first config (policy first-config: neither side
benchmarks configs, so the pair is compared directly and nothing replays round 0); each
compiles every config of every autotune key (`campaign.plugins.warmup.compile_every`), so the
pair compares the code of every config a tuner could pick, not the first one alone.
The runner times round 1 of a workload only where round 0's IR differs, unless
``time_unchanged`` (`campaign.running.rounds.Rounds.skip`); rounds after the first run only where
round 1's IR differs while ``later_only_if_ir_changed``, frozen here from the manifest. Adaptive
rounds (``rounds.stop: decided``) expand to ``max`` and freeze ``stopping``: rounds after ``min`` run
only while the workload is undecided (`campaign.judging.stopping`).
The manifest's process defaults (``tuner_cache``, ``workloads_per_process``, ``ir_pass_lanes``) are frozen here
too: the runner reads the plan, never the root's manifest copy.

The matrix also carries the cells' terms (`CellTerms`: device, pins, timer, bench level, IR
stage) and each task's correctness dtypes, so a worker reads its cell from task.json alone.
"""
from __future__ import annotations

from typing import Optional

from campaign.contract.artifacts import task_id
from campaign.contract.fields import BASELINE, CANDIDATE, PER_SIDE
from campaign.contract.manifest import Manifest
from campaign.contract.plans import IR_ROUND, Autotune, CellTerms, Matrix, Stopping, Targets, Task
from campaign.contract.platforms import platform
from campaign.contract.workloads import Workload
from campaign.planning.pinning import pinned_source
from campaign.planning.resolve import Resolved


def cell_order(cells: tuple[str, ...], round_number: int, alternate: bool) -> tuple[str, ...]:
    return tuple(reversed(cells)) if alternate and round_number % 2 == 0 else cells


def cell_terms(manifest: Manifest) -> CellTerms:
    sources, defaults = manifest.sources, manifest.defaults
    return CellTerms(device=manifest.device, triton=sources.triton, torch=sources.torch, flag_gems=sources.flag_gems,
                     timer=manifest.timer, bench_level=defaults.bench_level, shape_mode=defaults.shape_mode,
                     ir_stage=manifest.switch.ir_stage,
                     autotune_from=defaults.autotune_from.receipt_sha256 if defaults.autotune_from else None,
                     tuning=defaults.tuning)


def correctness_dtypes(workload: Workload, targets: Targets) -> Optional[tuple[str, ...]]:
    """Only where the manifest narrows the workload's dtypes: the benchmark measures those
    alone, and correctness over dtypes nothing measured costs time and proves nothing
    about the comparison. Explicit node ids are the manifest author's own choice: kept."""
    if targets.correctness_node_ids or workload.dtypes is None:
        return None
    return tuple(workload.dtypes)


IR_CELLS = (BASELINE, CANDIDATE)


def expand(manifest: Manifest, resolved: dict[str, Resolved], ir_pass: bool = False,
           time_unchanged: bool = False) -> Matrix:
    cells = manifest.switch.cell_names()
    policy = "measured" if platform(manifest.device.backend).executes else "first-config"
    canaries = [w for w in manifest.workloads if w.canary]
    others = [w for w in manifest.workloads if not w.canary]
    rounds = range(IR_ROUND if ir_pass else 1, manifest.rounds.planned + 1)
    schedule = [(w, r) for w in canaries for r in rounds]
    schedule += [(w, r) for r in rounds for w in others]
    tasks = []
    for workload, round_number in schedule:
        found = resolved[workload.name]
        if round_number == IR_ROUND:
            tasks += [_ir_task(manifest, workload, found, cell, len(tasks) + n) for n, cell in enumerate(IR_CELLS)]
            continue
        for cell in cell_order(cells, round_number, manifest.rounds.alternate_order):
            pinned = manifest.defaults.autotune_from is not None
            records = (round_number == 1 and cell == BASELINE and not pinned) or manifest.defaults.tuning == PER_SIDE
            tasks.append(Task(
                id=task_id(workload.name, round_number, cell),
                order=len(tasks),
                round=round_number,
                cell=cell,
                workload=workload.name,
                op=workload.op,
                provider=workload.provider,
                canary=workload.canary,
                env=dict(getattr(manifest.switch.cells, cell)),
                autotune=Autotune(
                    mode="record" if records else "replay",
                    source=None if records else (pinned_source(workload.name) if pinned
                                                 else task_id(workload.name, 1, BASELINE)),
                    policy=policy,
                ),
                timeout_s=manifest.timeout_for(workload),
                targets=found.targets,
                dtypes=found.dtypes,
                shapes=found.shapes,
                correctness_dtypes=correctness_dtypes(workload, found.targets),
            ))
    return Matrix(
        campaign=manifest.campaign,
        backend=manifest.device.backend,
        switch=manifest.switch.name,
        cells=cells,
        rounds=manifest.rounds.planned,
        tasks=tuple(tasks),
        terms=cell_terms(manifest),
        time_unchanged=time_unchanged,
        later_only_if_ir_changed=manifest.rounds.later_only_if_ir_changed,
        stopping=(Stopping(min=manifest.rounds.min, max=manifest.rounds.max)
                  if manifest.rounds.stop == "decided" else None),
        tuner_cache=manifest.defaults.tuner_cache,
        workloads_per_process=manifest.defaults.workloads_per_process,
        ir_pass_lanes=manifest.defaults.ir_pass_lanes,
    )


def _ir_task(manifest: Manifest, workload: Workload, found: Resolved, cell: str, order: int) -> Task:
    return Task(id=task_id(workload.name, IR_ROUND, cell), order=order, round=IR_ROUND, cell=cell,
                workload=workload.name, op=workload.op, provider=workload.provider, canary=workload.canary,
                env=dict(getattr(manifest.switch.cells, cell)),
                autotune=Autotune(mode="record", source=None, policy="first-config"),
                timeout_s=manifest.timeout_for(workload), targets=found.targets, dtypes=found.dtypes,
                shapes=found.shapes, correctness_dtypes=correctness_dtypes(workload, found.targets), timed=False)
