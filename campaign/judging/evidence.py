"""Reading a run root into evidence: the one road by which a root's results are read.

The classifier (`load_root`), the screen's table (`campaign.judging.screenroot`, through
`load_task`) and the runner's adaptive rounds (`cell_tuned`, `cell_ir`, `load_rounds`) all read
a root's cells, status.tsv, run identities and telemetry here, so what one judges is what
the others judge; `tests/structure/test_read_road.py` fails when another module opens those files.
Everything read is named in `campaign.contract.artifacts`; nothing is written. The
caliber is compared first (`caliber_of`) and a workload whose own cells disagree on it
has no latency read at all unless the mismatch was released. A screen's IR pass (round 0,
untimed tasks) is read like any cell but kept out of the timed rounds' caliber.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Optional

from pydantic import ValidationError

from campaign.contract import canonical, errorlines, regular, status, telemetryfile
from campaign.contract.artifacts import (
    AUTOTUNE_CORRECTNESS_FILE,
    AUTOTUNE_FILE,
    FAILED_SUFFIX,
    IR_DIR,
    OFFLINE_FILE,
    OUTCOMES_FILE,
    REPLAY_FALLBACK_MARKER,
    RESULT_FILE,
    ROWS_FILE,
    STDERR_LOG,
    STDOUT_LOG,
)
from campaign.contract.cellfiles import AutotuneEntry, AutotuneFile, CellResult, OfflineTrust, Outcomes, Row, Rows
from campaign.contract.fields import PER_SIDE
from campaign.contract.manifest import Manifest
from campaign.contract.plans import Matrix, Task
from campaign.contract.platforms import IR_STAGES
from campaign.contract.runroot import RunRoot
from campaign.judging import caliber, irdiff, irevidence, irpairing, throttle


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
    # benchmarked autotune configs while the cells it is compared with replay (pinned): its ir/ holds every
    # config's variants, its timings come after tuning. Never under per_side, where every timed cell tunes
    # over the same configs, so none stands apart (`apart`).
    tuned: bool = False
    ir_variants: tuple[irevidence.VariantDigest, ...] = ()   # the IR stage's variants, with signatures
    identity: Optional[dict] = None              # run_identity.json as the cell wrote it
    throttle: Optional[throttle.TaskThrottle] = None   # timed rows vs telemetry; None: no telemetry.tsv or no rows
    row: Optional[status.StatusRow] = None       # the task's latest status.tsv row; None: it has none
    coverage: Optional[str] = None               # an untimed cell's IR: which configs (`irevidence.untimed_coverage`)
    # where the cell ran no row or left no IR: its logs' last error line (`log_error`); None elsewhere
    error_line: Optional[errorlines.LogLine] = None
    chosen: tuple[AutotuneEntry, ...] = ()       # the configs its benchmark session recorded (per_side: its own winners)
    offline: Optional[OfflineTrust] = None       # an offline FlagGems cell's offline.json; None: not offline, or absent

    @property
    def variants(self) -> tuple[str, ...]:
        """``kernel<TAB>sha256`` of every variant, sorted: what the fingerprint is taken over, so one
        cell's variants can be looked up among another's (a recording cell holds every config's)."""
        return tuple(sorted(v.line for v in self.ir_variants))

    @property
    def ir(self) -> irevidence.CellIR:
        """What `irevidence.ir_change` judges of this cell."""
        return irevidence.CellIR(self.fingerprint, self.ir_variants)


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
    if not os.path.lexists(path):
        return None
    try:
        return model.model_validate(canonical.read_json(path))
    except regular.NotRegular as exc:
        problems.append(f"{path.name}: unreadable ({exc.strerror})")
        return None
    except (OSError, ValueError, ValidationError) as exc:
        problems.append(f"{path.name}: unreadable ({str(exc).splitlines()[0]})")
        return None


def caliber_of(root: RunRoot, tasks: Iterable[Task]) -> tuple[caliber.CaliberCheck, dict[str, Optional[dict]]]:
    """The caliber of ``tasks`` and the identities it was judged on: every task whose cell
    wrote result.json takes part (an identity missing or unreadable there is a finding)."""
    tasks = list(tasks)
    ran = [t for t in tasks if (root.cell(t.id) / RESULT_FILE).is_file()]
    identities = caliber.load_identities(root, ran)
    rows = root.latest()
    preflight = frozenset(t.id for t in ran if t.id in rows and rows[t.id].preflight_failed)
    return caliber.compare(tasks, identities, preflight), identities


def apart(autotune: Optional[AutotuneFile], tuning: str) -> bool:
    """Whether a cell stands apart from the cells it is compared with: it benchmarked configs
    (`irevidence.holds_tuning_variants`) while they replay. Under per_side every timed cell tunes over
    the same configs, so each holds every config's variants and is timed after tuning: none stands
    apart, and a winner one side chose and the other did not is no code change (each side's winners
    are named in the report, `campaign.judging.choices`)."""
    return irevidence.holds_tuning_variants(autotune) and tuning != PER_SIDE


def _autotune(cell: Path, problems: list[str], tuning: str) -> tuple[Optional[AutotuneFile], bool]:
    """autotune.json and whether the cell stands `apart`; an unreadable one counts as apart: a
    cell that may hold every config's variants is never compared."""
    before = len(problems)
    autotune = read_model(cell / AUTOTUNE_FILE, AutotuneFile, problems)
    return autotune, apart(autotune, tuning) or len(problems) > before


def cell_tuned(root: RunRoot, task: Task, manifest: Manifest) -> bool:
    """Whether ``task``'s cell stands `apart` (benchmarked configs where the others replay)."""
    return _autotune(root.cell(task.id), [], manifest.defaults.tuning)[1]


def cell_coverage(root: RunRoot, task: Task) -> Optional[str]:
    """Which autotune configs an untimed cell's IR holds (`irevidence.untimed_coverage`)."""
    return irevidence.untimed_coverage(read_model(root.cell(task.id) / AUTOTUNE_FILE, AutotuneFile, []))


def cell_ir(root: RunRoot, task: Task, manifest: Manifest, extra_strip: tuple[str, ...] = ()) -> irevidence.CellIR:
    """`irevidence.read_cell_ir` of the cell's IR stage, the manifest's annotations (and ``extra_strip``)
    stripped: its fingerprint (None: no comparable IR) and its variants, what `irevidence.ir_change` judges."""
    strip = tuple(manifest.switch.strip_annotations) + tuple(extra_strip)
    return irevidence.read_cell_ir(root.cell(task.id) / IR_DIR, manifest.switch.ir_stage, strip)


def _log_tail(path: Path) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(max(0, path.stat().st_size - errorlines.TAIL_BYTES))
            return log.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def log_error(cell: Path) -> Optional[errorlines.LogLine]:
    """The cell's last error line: an error-looking line of stdout.log (pytest's output), else of
    stderr.log (a crash before pytest), else pytest's skip summary in stdout.log (why nothing ran where
    the test skipped itself), else the last line of either (`campaign.contract.errorlines`);
    None when both are empty or absent."""
    tails = {name: _log_tail(Path(cell) / name) for name in (STDOUT_LOG, STDERR_LOG)}
    found = [(name, errorlines.last_error(tails[name]), True) for name in (STDOUT_LOG, STDERR_LOG)]
    found.append((STDOUT_LOG, errorlines.last_skip(tails[STDOUT_LOG]), False))
    found += [(name, errorlines.last_line(tails[name]), False) for name in (STDERR_LOG, STDOUT_LOG)]
    return next((errorlines.LogLine(*entry) for entry in found if entry[1]), None)


def cell_variant_texts(root: RunRoot, task: Task, manifest: Manifest) -> tuple[irdiff.VariantTexts, ...]:
    """Every IR variant of the cell with each captured stage's text normalised as its fingerprint is
    (`irevidence.normalize`, the manifest's annotations stripped), its signature at the manifest's
    stage (where that stage prints none, sass, at the first stage of the same variant that does) and
    its launches from index.tsv: what `campaign.judging.irdiff` pairs and diffs."""
    ir_dir = root.cell(task.id) / IR_DIR
    strip, judged = tuple(manifest.switch.strip_annotations), manifest.switch.ir_stage
    texts: dict[str, dict[str, str]] = {}
    kernels: dict[str, str] = {}
    for stage in IR_STAGES:
        for path in irevidence.stage_files(ir_dir, stage):
            variant_hash, kernel, _ = irevidence.split_name(path)
            kernels[variant_hash] = kernel
            raw = path.read_text(encoding="utf-8", errors="replace")
            texts.setdefault(variant_hash, {})[stage] = irevidence.normalize(raw, stage, strip)
    try:
        index = irevidence.read_index(ir_dir)
    except ValueError:
        index = irevidence.Index()          # load_task names the unreadable index; launches stay unknown here
    out = []
    for variant_hash, by_stage in sorted(texts.items()):
        kernel = kernels[variant_hash]
        signature = next((s for s in (irpairing.signature(by_stage[stage], stage, kernel)
                                      for stage in (judged, *IR_STAGES) if stage in by_stage) if s), None)
        row = index.variants.get(variant_hash)
        out.append(irdiff.VariantTexts(variant_hash, kernel, signature, irdiff.digest(by_stage.get(judged)),
                                       row.launches if row else None, tuple(by_stage.items())))
    return tuple(out)


def cell_dtypes(root: RunRoot, task: Task) -> tuple[str, ...]:
    """The dtypes a cell wrote rows for, in their first order; none where it wrote no readable rows.json."""
    rows = read_model(root.cell(task.id) / ROWS_FILE, Rows, [])
    return tuple(dict.fromkeys(row.dtype for row in rows.rows if row.dtype)) if rows is not None else ()


def cell_autotune_files(root: RunRoot, task: Task) -> dict[str, Optional[AutotuneFile]]:
    """The cell's autotune records (benchmark and correctness sessions) that exist; an unreadable one is None."""
    cell = root.cell(task.id)
    return {name: read_model(cell / name, AutotuneFile, [])
            for name in (AUTOTUNE_FILE, AUTOTUNE_CORRECTNESS_FILE) if (cell / name).is_file()}


def load_task(root: RunRoot, task: Task, manifest: Manifest, floor: int, row: Optional[status.StatusRow],
              read_rows: bool, identity: Optional[dict] = None, extra_strip: tuple[str, ...] = ()) -> TaskEvidence:
    """One task's evidence; ``extra_strip`` adds annotation patterns to the manifest's (a rescore)."""
    cell = root.cell(task.id)
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
    ir = cell_ir(root, task, manifest, extra_strip)
    try:
        topology = irevidence.topology(ir_dir, floor) if ir_dir.is_dir() else None
    except ValueError as exc:
        problems.append(str(exc))
        topology = None
    outcomes = read_model(cell / OUTCOMES_FILE, Outcomes, problems)
    rows_file = read_model(cell / ROWS_FILE, Rows, problems) if read_rows else None
    autotune, tuned = _autotune(cell, problems, manifest.defaults.tuning)
    fallbacks = max(result.markers.get(REPLAY_FALLBACK_MARKER, 0) if result else 0,
                    len(autotune.fallbacks) if autotune else 0)
    offline = read_model(cell / OFFLINE_FILE, OfflineTrust, problems)
    ran_nothing = result is None or not ir.variants or not result.rows.ok + result.rows.compiled
    return TaskEvidence(task, state, result, rc_name, ir.fingerprint, len(ir.variants), topology,
                        outcomes, rows_file.rows if rows_file else None, fallbacks, tuple(problems), tuned,
                        ir.variants, identity, row=row, coverage=irevidence.untimed_coverage(autotune),
                        error_line=log_error(cell) if ran_nothing else None,
                        chosen=autotune.entries if autotune else (),
                        offline=offline)


def load_rounds(root: RunRoot, manifest: Manifest, matrix: Matrix, workload: str, before: int,
                latest: dict[str, status.StatusRow]) -> RootEvidence:
    """One workload's timed rounds before ``before``, read as `load_root` reads them (without telemetry:
    the clocks judge a verdict, not whether a round is worth running): what adaptive rounds decide from."""
    tasks = [t for t in matrix.tasks if t.workload == workload and t.timed and t.round < before]
    check, identities = caliber_of(root, tasks)
    refused = bool(check.workloads.get(workload))
    read = {t.id: load_task(root, t, manifest, manifest.measured_launch_floor, latest.get(t.id), read_rows=not refused,
                            identity=identities.get(t.id)) for t in tasks}
    return RootEvidence(manifest, matrix, manifest.measured_launch_floor, read, check, False)


def load_root(run_root: RunRoot | Path, floor: Optional[int] = None, allow_caliber_mismatch: bool = False,
              harness_drift: tuple[str, ...] = ()) -> RootEvidence:
    """Everything the classifier needs; ``floor`` overrides the manifest's measured_launch_floor. A
    `RunRoot` handed in is read as it is: its manifest and matrix, parsed once, are not parsed again;
    a path (a test, a bench script) becomes one here, once."""
    root = RunRoot.of(run_root)
    manifest, matrix = root.frame()
    floor = manifest.measured_launch_floor if floor is None else floor
    latest = root.latest()
    # a screen's IR pass (untimed, each side running its first config) is no timing round: its caliber is
    # judged with its own pair (`campaign.judging.screenroot`), never against the timed rounds
    check, identities = caliber_of(root, [t for t in matrix.tasks if t.timed])
    tasks = {}
    for task in matrix.tasks:
        refused = bool(check.workloads.get(task.workload)) and not allow_caliber_mismatch
        tasks[task.id] = load_task(root, task, manifest, floor, latest.get(task.id), read_rows=not refused,
                                   identity=identities.get(task.id))
    samples = telemetryfile.read_samples(root.telemetry_file)
    worker_clocks = any(r.clock is not None for t in tasks.values() for r in (t.rows or ()))
    if samples is not None or worker_clocks:
        judged = throttle.judge(samples or [], {task_id: t.rows for task_id, t in tasks.items()},
                                cards={task_id: t.row.device for task_id, t in tasks.items() if t.row is not None})
        tasks = {task_id: replace(t, throttle=judged.get(task_id)) for task_id, t in tasks.items()}
    return RootEvidence(manifest, matrix, floor, tasks, check, allow_caliber_mismatch, tuple(harness_drift))
