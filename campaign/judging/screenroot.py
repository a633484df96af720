"""A screen root read back and written out: the IO edges of `campaign.judging.screening`.

`gather` turns round 1 of a root, read through `campaign.judging.evidence` (status rows,
result, IR fingerprint and topology, autotune record, run identity, timed rows), into
`screening.Facts`, so a fresh screen, a rescore and the classifier judge the very same
evidence. A workload whose round 1 the runner skipped (its IR pass, round 0, found the IR
unchanged or not comparable) is judged on round 0's pair instead, caliber included; where
round 1 ran, round 0 only says whether the IR pass agreed. `emitted_manifest` turns a
judged table into the manifest of the workloads that deserve rounds. Nothing here runs anything.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from campaign.contract import status, verdictnames, yamlio, yamlwrite
from campaign.contract.manifest import Manifest
from campaign.contract.plans import IR_ROUND
from campaign.contract.platforms import card_backend, platform
from campaign.contract.runroot import RunRoot
from campaign.judging import evidence, irevidence, screening, screentable, stats
from campaign.judging.evidence import TaskEvidence
from campaign.judging.irpairing import CellIR

SCREEN_FILE = "screen.tsv"


def side(t: TaskEvidence) -> screening.Side:
    """One cell of the pair as the screen sees it; a cell with no status row has no rc name."""
    row, result, topology = t.row, t.result, t.topology
    return screening.Side(
        cell=t.task.cell,
        rc=row.rc if row is not None else (result.rc if result else None),
        rc_name=row.rc_name if row is not None else "",
        elapsed_s=row.elapsed_s if row is not None else None,
        rows=result.rows.ok + result.rows.compiled if result else None,
        fingerprint=t.fingerprint,
        variants=t.ir_variants,
        ir_files=t.ir_files,
        scoped=topology.scoped if topology else None,
        unscoped=topology.unscoped if topology else None,
        unjoinable=len(topology.unjoinable) if topology else 0,
        tuning_variants=t.tuned,
        timed=bool(result and result.timed),
        samples=stats.samples(t.rows) if t.rows else {},
        error_line=t.error_line,
        needs_card=t.offline.reasons if t.offline else (),
        compile_errors=tuple(f"{s.site} x{s.count}" for s in t.offline.compile_errors) if t.offline else (),
        refused=_refused(t),
    )


def _refused(t: TaskEvidence) -> Optional[str]:
    """``check=<name>: <detail>`` of a cell its preflight refused (an offline FlagGems of another version,
    its vendor's configs absent); None where it ran."""
    if t.result is None or t.result.preflight.ok:
        return None
    named = [c for c in t.result.preflight.checks if c[0] == t.result.preflight.failed_check]
    return f"check={t.result.preflight.failed_check}: {named[-1][2] if named else 'no detail recorded'}"


def gather(run_root: RunRoot | Path, extra_strip: tuple[str, ...] = ()) -> list[screening.Facts]:
    """The facts of every workload's round 1 (or its IR pass, where round 1 was skipped), in
    matrix order; ``extra_strip`` adds annotation patterns. A path becomes a `RunRoot` here, once."""
    root = RunRoot.of(run_root)
    manifest, matrix = root.frame()
    latest = root.latest()
    ordered = sorted(matrix.tasks, key=lambda t: t.order)
    declared = {w.name: w for w in manifest.workloads}
    out = []
    for name in dict.fromkeys(t.workload for t in ordered if t.round == 1):
        timed = [t for t in ordered if t.workload == name and t.round == 1]
        ir_pass = [t for t in ordered if t.workload == name and t.round == IR_ROUND]
        # round 1 stands wherever it ran; skipped rows on every cell leave the IR pass as the evidence
        only = bool(ir_pass) and all(latest.get(t.id) is not None and latest[t.id].rc_name == status.SKIPPED
                                     for t in timed)
        own = ir_pass if only else timed
        check, identities = evidence.caliber_of(root, own)
        # rows are read whatever the caliber says: the range itself refuses a caliber mismatch
        read = [evidence.load_task(root, t, manifest, manifest.measured_launch_floor, latest.get(t.id), read_rows=True,
                                   identity=identities.get(t.id), extra_strip=extra_strip) for t in own]
        change = None
        if ir_pass and not only:
            prints: dict[str, Optional[CellIR]] = {t.cell: evidence.cell_ir(root, t, manifest, extra_strip) for t in ir_pass}
            change = irevidence.ir_change(False, tuple(prints), prints).state
        coverages = ([t.coverage for t in read] if only else [evidence.cell_coverage(root, t) for t in ir_pass])
        coverage = irevidence.weakest_coverage(coverages) if ir_pass else None
        out.append(screening.Facts(
            workload=name, op=own[0].op, backend=matrix.backend, ir_stage=manifest.switch.ir_stage,
            dtypes=own[0].dtypes, dtypes_own=declared[name].dtypes is None, sides={t.task.cell: side(t) for t in read},
            caliber=check.table, caliber_findings=check.workloads.get(name, ()),
            problems=tuple(p for t in read for p in t.problems), provider=own[0].provider,
            ir_pass_only=only, ir_pass_change=change, ir_pass_coverage=coverage))
    return out


def table(root: RunRoot | Path, extra_strip: tuple[str, ...] = ()) -> list[dict[str, str]]:
    return [screentable.row(facts) for facts in gather(root, extra_strip)]


def emitted_manifest(root: RunRoot | Path, rows: list[dict[str, str]], autotune_from: Optional[dict[str, str]] = None,
                     others: Sequence[RunRoot | Path] = ()) -> Optional[str]:
    """The root's manifest narrowed to its IR_CHANGED and NEEDS_CARD workloads (an offline IR that is
    no evidence is checked on the card), each with ``weight_s``, pinned to ``autotune_from``
    (``defaults.autotune_from``: the sealed screen root) where given; None when there are none.
    ``others``: the other shards of a sharded screen, whose workloads follow the root's in shard order
    (one manifest for the set: its shards' manifests differ in their workloads alone)."""
    roots = [RunRoot.of(one) for one in (root, *others)]
    data, _ = yamlio.load(roots[0].manifest_file)     # the manifest's own YAML, narrowed and re-emitted
    weights = {r["workload"]: r["weight_s"] for r in rows if r["verdict"] in verdictnames.EMITTED}
    card = sum(r["verdict"] == verdictnames.NEEDS_CARD for r in rows)
    workloads = []
    for workload in [w for one in roots for w in yamlio.load(one.manifest_file)[0]["workloads"]]:
        if workload["name"] in weights:
            weight = weights[workload["name"]]
            own = {key: value for key, value in workload.items() if key != "weight_s"}   # the screen's own weight
            workloads.append({**own, "weight_s": float(weight)} if weight else own)      # (an IR pass's) predicts no round here
    if not workloads:
        return None
    data["workloads"] = workloads
    screened_on = data["device"]["backend"]
    offline = _to_the_card(data)
    if not platform(screened_on).executes:     # compiled offline: round 1 never ran, no config was timed to replay
        autotune_from = None
    if autotune_from is not None:
        data["defaults"] = {**(data.get("defaults") or {}), "autotune_from": dict(autotune_from)}
    Manifest.model_validate(data)  # what is written must be a manifest
    pinned = ("\nautotune_from replays the configs the screen recorded and timed; drop it to tune afresh."
              if autotune_from is not None else
              f"\nNot pinned: the configs the shards timed lie in {len(roots)} roots and autotune_from names one; "
              "the card tunes afresh." if len(roots) > 1 and platform(screened_on).executes else "")
    source = roots[0].name if len(roots) == 1 else f"the {len(roots)} shards {', '.join(one.name for one in roots)}"
    return yamlwrite.dump(data, (
        f"Emitted by `campaign screen` from {source}: its {len(workloads) - card} IR_CHANGED and {card} "
        "NEEDS_CARD workload(s) (their offline IR is no evidence: the card compiles them with real data).\n"
        "weight_s is one screened round's elapsed seconds: a campaign of N rounds costs about N times it." + pinned + offline))


def _to_the_card(data: dict) -> str:
    """An offline screen's changed workloads are timed on the card it compiled for: the device's backend
    becomes the one that runs its target, and the timer (a cpu manifest's is event: it times nothing)
    the card's default, graph replay. Returns the header's line saying so; '' for a card's own screen."""
    device = data["device"]
    if platform(device["backend"]).executes:
        return ""
    if not (device.get("name") or device.get("uuid")):
        return ("\nScreened offline for an unnamed card: give device.name (or uuid) in the screened manifest, and "
                "the emitted one runs on that card.")
    backend = card_backend(device["target"])
    if backend is None:
        raise ValueError(f"no backend runs {device['target']} on a card: its changed workloads cannot be timed")
    data["device"] = {**device, "backend": backend}
    data["timer"] = {"kind": "graph"}
    # the offline pass's lanes were the compiling host's cores; the card's host chooses its own (a process per
    # core on a 2-core laptop is two on the card, sixteen on the GPU host would be sixteen on one card)
    lanes = (data.get("defaults") or {}).pop("ir_pass_lanes", None)
    return (f"\nScreened offline ({device['backend']} backend): timed here on the {backend} card it compiled for "
            f"({device.get('name') or device['target']}), timer graph replay at its defaults"
            + (f"; the offline pass's {lanes} IR-pass lanes left to the card's host." if lanes is not None else "."))
