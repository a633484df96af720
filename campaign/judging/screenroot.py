"""A screen root read back and written out: the IO edges of `campaign.judging.screening`.

`gather` reads round 1 of a root into `screening.Facts` (status rows, result,
IR fingerprint and topology, autotune record, run identity, timed rows), so a
fresh screen and a rescore judge the very same evidence; `emitted_manifest`
turns a judged table into the manifest of the workloads that deserve rounds.
Nothing here runs anything.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from campaign.judging import caliber, irevidence, screening, stats
from campaign.contract import canonical, yamlio
from campaign.running import status
from campaign.contract.artifacts import (IR_DIR, MANIFEST_FILE, MATRIX_FILE, RESULT_FILE, ROWS_FILE, STATUS_FILE, CellResult,
                                Matrix, Rows, Task, cell_dir_name)
from campaign.judging.evidence import read_model
from campaign.contract.manifest import Manifest

SCREEN_FILE = "screen.tsv"


def read_side(root: Path, task: Task, row: Optional[status.StatusRow], manifest: Manifest,
              strip: tuple[str, ...], problems: list[str]) -> screening.Side:
    cell = Path(root) / cell_dir_name(task.id)
    result = read_model(cell / RESULT_FILE, CellResult, problems)
    rows = read_model(cell / ROWS_FILE, Rows, problems)
    ir_dir, stage = cell / IR_DIR, manifest.switch.ir_stage
    topology = None
    try:
        topology = irevidence.topology(ir_dir, manifest.measured_launch_floor) if ir_dir.is_dir() else None
        tuning = irevidence.cell_holds_tuning_variants(cell)
    except ValueError as exc:
        problems.append(f"{task.id}: {str(exc).splitlines()[0]}")
        tuning = True  # unknown: never compare a cell that may hold every config's variants
    return screening.Side(
        cell=task.cell,
        rc=row.rc if row is not None else (result.rc if result else None),
        rc_name=row.rc_name if row is not None else "",
        elapsed_s=row.elapsed_s if row is not None else None,
        rows=result.rows.ok + result.rows.compiled if result else None,
        fingerprint=irevidence.fingerprint(ir_dir, stage, strip),
        ir_files=len(irevidence.stage_files(ir_dir, stage)),
        scoped=topology.scoped if topology else None,
        unscoped=topology.unscoped if topology else None,
        unjoinable=len(topology.unjoinable) if topology else 0,
        tuning_variants=tuning,
        timed=bool(result and result.timed),
        samples=stats.samples(rows.rows) if rows else {},
    )


def load(root: Path) -> tuple[Manifest, Matrix]:
    manifest = yamlio.validate(Manifest, Path(root) / MANIFEST_FILE)
    return manifest, Matrix.model_validate(canonical.read_json(Path(root) / MATRIX_FILE))


def gather(root: Path, extra_strip: tuple[str, ...] = ()) -> list[screening.Facts]:
    """The facts of every workload's round 1, in matrix order; ``extra_strip`` adds annotation patterns."""
    root = Path(root)
    manifest, matrix = load(root)
    strip = tuple(manifest.switch.strip_annotations) + tuple(extra_strip)
    latest = status.latest(status.read(root / STATUS_FILE)[0])
    tasks = [t for t in sorted(matrix.tasks, key=lambda t: t.order) if t.round == 1]
    declared = {w.name: w for w in manifest.workloads}
    out = []
    for name in dict.fromkeys(t.workload for t in tasks):
        own = [t for t in tasks if t.workload == name]
        ran = [t for t in own if (root / cell_dir_name(t.id) / RESULT_FILE).is_file()]
        check = caliber.compare(own, caliber.load_identities(root, ran))
        problems: list[str] = []
        sides = {t.cell: read_side(root, t, latest.get(t.id), manifest, strip, problems) for t in own}
        out.append(screening.Facts(
            workload=name, op=own[0].op, backend=matrix.backend, ir_stage=manifest.switch.ir_stage,
            dtypes=own[0].dtypes, dtypes_own=declared[name].dtypes is None, sides=sides,
            caliber=check.table, caliber_findings=check.workloads.get(name, ()), problems=tuple(problems)))
    return out


def table(root: Path, extra_strip: tuple[str, ...] = ()) -> list[dict[str, str]]:
    return [screening.row(facts) for facts in gather(root, extra_strip)]


def emitted_manifest(root: Path, rows: list[dict[str, str]]) -> Optional[str]:
    """The root's manifest narrowed to its IR_CHANGED workloads, each with ``weight_s``; None when there are none."""
    data, _ = yamlio.load(Path(root) / MANIFEST_FILE)
    weights = {r["workload"]: r["weight_s"] for r in rows if r["verdict"] == screening.IR_CHANGED}
    workloads = []
    for workload in data["workloads"]:
        if workload["name"] in weights:
            weight = weights[workload["name"]]
            workloads.append({**workload, "weight_s": float(weight)} if weight else dict(workload))
    if not workloads:
        return None
    data["workloads"] = workloads
    Manifest.model_validate(data)  # what is written must be a manifest
    return yamlio.dump(data, (
        f"Emitted by `campaign screen` from {Path(root).name}: its {len(workloads)} IR_CHANGED workload(s).\n"
        "weight_s is one screened round's elapsed seconds: a campaign of N rounds costs about N times it."))
