"""Reading a run root into the evidence the classifier judges: the IO edge of classify.

Everything read here is named in `campaign.contract.artifacts`; nothing is written. The
caliber is compared first and a workload whose own cells disagree on it has no
latency read at all unless the mismatch was released.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from pydantic import ValidationError

from campaign.judging import caliber, irevidence, throttle
from campaign.running import status, telemetry
from campaign.contract import yamlio
from campaign.contract.artifacts import (AUTOTUNE_FILE, FAILED_SUFFIX, IR_DIR, MANIFEST_FILE, MATRIX_FILE, OUTCOMES_FILE,
                                RESULT_FILE, ROWS_FILE, STATUS_FILE, TELEMETRY_FILE, AutotuneFile, CellResult,
                                Matrix, Outcomes, Row, Rows, Task, cell_dir_name)
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest


@dataclass(frozen=True)
class TaskEvidence:
    task: Task
    state: str                                   # "done" | "skipped" | "missing"
    result: Optional[CellResult]
    rc_name: str                                 # from status.tsv where known
    fingerprint: Optional[str]                   # None: no comparable IR
    ir_files: int
    topology: Optional[irevidence.Topology]
    outcomes: Optional[Outcomes]
    rows: Optional[tuple[Row, ...]]              # None: not read (caliber refused) or absent
    fallbacks: int                               # AUTOTUNE_REPLAY_FALLBACK, from result or autotune.json
    problems: tuple[str, ...]                    # files present but unreadable
    tuned: bool = False                          # benchmarked autotune configs: ir/ holds every config's variants
    variants: tuple[str, ...] = ()               # irevidence.variant_digests of the IR stage
    identity: Optional[dict] = None              # run_identity.json as the cell wrote it
    throttle: Optional[throttle.TaskThrottle] = None   # timed rows vs telemetry; None: no telemetry.tsv or no rows


@dataclass(frozen=True)
class RootEvidence:
    manifest: Manifest
    matrix: Matrix
    floor: int
    tasks: dict[str, TaskEvidence]
    caliber: caliber.CaliberCheck
    caliber_released: bool
    harness_drift: tuple[str, ...] = ()          # harness files changed since prepare, as the seal found them


def read_model(path: Path, model, problems: list[str]):
    """The artifact at ``path`` as ``model``; None when absent; unreadable is noted in ``problems``."""
    if not path.is_file():
        return None
    try:
        return model.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        problems.append(f"{path.name}: unreadable ({str(exc).splitlines()[0]})")
        return None


def load_frame(root: Path) -> tuple[Manifest, Matrix]:
    root = Path(root)
    for name in (MANIFEST_FILE, MATRIX_FILE):
        if not (root / name).is_file():
            raise InputError(f"{root}: no {name}: not a run root")
    manifest = yamlio.validate(Manifest, root / MANIFEST_FILE)
    try:
        matrix = Matrix.model_validate(json.loads((root / MATRIX_FILE).read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        raise InputError(f"{root / MATRIX_FILE}: {str(exc).splitlines()[0]}") from None
    return manifest, matrix


def load_task(root: Path, task: Task, manifest: Manifest, floor: int, row: Optional[status.StatusRow],
              read_rows: bool, identity: Optional[dict] = None) -> TaskEvidence:
    cell = Path(root) / cell_dir_name(task.id)
    problems: list[str] = []
    result = read_model(cell / RESULT_FILE, CellResult, problems)
    rc_name = row.rc_name if row is not None else ("" if result is None else status.rc_name(result.rc))
    state = "done" if result is not None else ("skipped" if rc_name == status.SKIPPED else "missing")
    ir_dir = cell / IR_DIR
    stage = manifest.switch.ir_stage
    failed = sorted(ir_dir.glob(f"*.{stage}{FAILED_SUFFIX}")) if ir_dir.is_dir() else []
    if failed:
        problems.append(f"{failed[0].name}: the {stage} of {len(failed)} variant(s) could not be produced "
                        f"({failed[0].read_text(encoding='utf-8', errors='replace').strip()[:200]})")
    variants = irevidence.variant_digests(ir_dir, stage, manifest.switch.strip_annotations)
    fingerprint = irevidence.fingerprint_of(variants)
    ir_files = len(variants)
    try:
        topology = irevidence.topology(ir_dir, floor) if ir_dir.is_dir() else None
    except ValueError as exc:
        problems.append(str(exc))
        topology = None
    outcomes = read_model(cell / OUTCOMES_FILE, Outcomes, problems)
    rows_file = read_model(cell / ROWS_FILE, Rows, problems) if read_rows else None
    autotune = read_model(cell / AUTOTUNE_FILE, AutotuneFile, problems)
    fallbacks = max(result.markers.get("AUTOTUNE_REPLAY_FALLBACK", 0) if result else 0,
                    len(autotune.fallbacks) if autotune else 0)
    return TaskEvidence(task, state, result, rc_name, fingerprint, ir_files, topology, outcomes,
                        rows_file.rows if rows_file else None, fallbacks, tuple(problems),
                        irevidence.holds_tuning_variants(autotune), variants, identity)


def load_root(root: Path, floor: Optional[int] = None, allow_caliber_mismatch: bool = False,
              harness_drift: tuple[str, ...] = ()) -> RootEvidence:
    """Everything the classifier needs; ``floor`` overrides the manifest's measured_launch_floor."""
    root = Path(root)
    manifest, matrix = load_frame(root)
    floor = manifest.measured_launch_floor if floor is None else floor
    rows, _ = status.read(root / STATUS_FILE)
    latest = status.latest(rows)
    ran = [t for t in matrix.tasks if (root / cell_dir_name(t.id) / RESULT_FILE).is_file()]
    identities = caliber.load_identities(root, ran)
    check = caliber.compare(matrix.tasks, identities)
    tasks = {}
    for task in matrix.tasks:
        refused = bool(check.workloads.get(task.workload)) and not allow_caliber_mismatch
        tasks[task.id] = load_task(root, task, manifest, floor, latest.get(task.id), read_rows=not refused,
                                   identity=identities.get(task.id))
    samples = telemetry.read_samples(root / TELEMETRY_FILE)
    if samples is not None:
        judged = throttle.judge(samples, {task_id: t.rows for task_id, t in tasks.items()})
        tasks = {task_id: replace(t, throttle=judged.get(task_id)) for task_id, t in tasks.items()}
    return RootEvidence(manifest, matrix, floor, tasks, check, allow_caliber_mismatch, tuple(harness_drift))
