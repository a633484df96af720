"""The screen flow: one pinned pair per workload in a sealed ``<campaign>-screen-*`` root.

`screen` checks the manifest exactly as prepare does and freezes a root whose
matrix is an untimed IR pass (round 0: baseline and candidate, each on its first
autotune config) and round 1 (prepare.json ``"mode": "screen"``); round 1 of a
workload is timed only where round 0's IR differs, or everywhere with
``time_unchanged`` (recorded in matrix.json, so a resume keeps it), and offline (a backend that
compiles only) only with ``time_unchanged``; its cells run through
the session flow -- same worker, plugins, caliber and timeouts -- and screen.tsv
(`campaign.judging.screening`) is written before the seal, so the receipt hashes
it. ``execution.ray`` runs the cells on a Ray cluster's nodes (`campaign.running.rayexec`; a
CPU each on the compile-only backend), the table and the seal staying here. `resume` completes a
screen root stopped before its seal. `rescore` re-judges
a sealed screen root beside it (``<root>.rescore-<n>/``), never writing inside it.
`emit` writes the IR_CHANGED and NEEDS_CARD workloads as a campaign manifest.
"""
from __future__ import annotations

import dataclasses
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Collection, Optional, Sequence

from campaign import __version__
from campaign.contract import canonical, stripregex
from campaign.contract.artifacts import RECEIPT_FILE, RESCORE_SUFFIX, SCHEMA_VERSION, first_free
from campaign.contract.errors import EXIT_INPUT, EXIT_OK, SCREEN_REFUSED, InputError, Refused
from campaign.contract.platforms import platform
from campaign.contract.rootrecords import Rescore
from campaign.contract.runroot import RunRoot
from campaign.contract.verdictnames import EMITTED
from campaign.flows import freeze, session, shardset
from campaign.judging import screenroot, screentable
from campaign.planning import harness, shards
from campaign.planning.matrix import expand
from campaign.sealing import receipt, verification

PREFIX = SCREEN_REFUSED
ORIGINAL_FILE = "screen.original.tsv"
RESCORE_FILE = "rescore.json"
RULE_FILES = ("campaign/judging/irevidence.py", "campaign/judging/screening.py")   # the rule a rescore applies
Screened = tuple[int, Path, list[dict[str, str]]]      # exit code, the root, the table's rows
ScreenedSet = tuple[int, list[Path], list[dict[str, str]]]   # exit code, the shards' roots, their tables' rows


def _screened(checked: freeze.Checked, time_unchanged: bool) -> freeze.Checked:
    """``checked`` with a screen's matrix: an untimed IR pass and one round."""
    one = checked.manifest.model_copy(update={"rounds": checked.manifest.rounds.model_copy(update={"count": 1, "stop": "fixed"})})
    return dataclasses.replace(checked, matrix=expand(one, checked.resolved, ir_pass=True, time_unchanged=time_unchanged))


def _timed(backend: str, time_unchanged: bool) -> str:
    if time_unchanged:
        return "every workload's round 1 timed"
    if platform(backend).executes:
        return "round 1 timed where the IR changed"
    return f"round 1 not run: {backend} compiles only, the IR pass decides"


def screen(manifest_path: Path, runs_dir: Path, execution: session.Execution,
           time_unchanged: bool = False) -> Screened:
    checked = _screened(freeze.check(manifest_path), time_unchanged)
    root = freeze.freeze(checked, runs_dir, mode="screen")
    print(f"screen {checked.manifest.campaign}: {len(checked.resolved)} workloads, an untimed IR pass, then "
          f"one pinned pair each ({_timed(checked.matrix.backend, time_unchanged)}) -> {root}")
    return _execute(RunRoot(root), execution)


def screen_shards(manifest_path: Path, runs_dir: Path, execution: session.Execution, count: int,
                  time_unchanged: bool = False) -> ScreenedSet:
    """The screen as ``count`` shards (`campaign.planning.shards`: whole workloads, LPT by weight_s), each
    frozen now and then screened and sealed in turn, each its own root and screen.tsv: a screen longer
    than one job's window runs a shard a job (`resume_set`), no cell in two."""
    checked = freeze.check(manifest_path)
    split = shards.split(checked.manifest, count, None)
    roots = freeze.freeze_shards(checked, runs_dir, split, mode="screen",
                                 shaped=lambda part: _screened(part, time_unchanged))
    set_id = shards.set_id(canonical.sha256_file(checked.manifest_path), split.workloads)
    print(f"screen {checked.manifest.campaign}: {len(checked.resolved)} workloads as {len(roots)} shards "
          f"(set {set_id[:12]}), each screened and sealed on its own: an untimed IR pass, then one pinned pair "
          f"each ({_timed(checked.matrix.backend, time_unchanged)})")
    for index, (root, names, seconds) in enumerate(zip(roots, split.workloads, split.predicted_s), start=1):
        # a shard's weight_s summed (the split's load is weight_s x the rounds a campaign of it would plan)
        weighed = ("" if len(split.equal) == len(checked.resolved)
                   else f", weight_s {seconds / checked.manifest.rounds.planned:g} s in all")
        print(f"shard {index} of {len(roots)}: {len(names)} workloads{weighed}: {root}")
    return _set(gathered(roots), execution)


def resume_set(roots: Sequence[Path], execution: session.Execution) -> ScreenedSet:
    """The shards of one screen set, each unsealed one screened to its seal in shard order, the sealed
    ones verified and read; refused unless the roots are one whole set of screen shards."""
    return _set(gathered(roots), execution)


def gathered(roots: Sequence[Path]) -> list[shardset.Member]:
    members = shardset.gather([root.resolve() for root in roots], prefix=PREFIX, sealed_only=False)
    plain = [str(m.root) for m in members if m.root.mode != "screen"]
    if plain:
        raise Refused(PREFIX, "screen_root", f"{', '.join(plain)}: shards of a campaign, not of a screen; "
                      "`campaign run ROOT` runs each", EXIT_INPUT)
    return members


def _set(members: list[shardset.Member], execution: session.Execution) -> ScreenedSet:
    roots = [m.root.path for m in members]
    in_set = dataclasses.replace(execution, resumed_as=tuple(roots))   # a stopped shard's resume names the set
    rows: list[dict[str, str]] = []
    for member in members:
        if member.root.sealed:      # verified as gathered
            print(f"{member.label}: sealed, read: {member.root}")
            rows.extend(screentable.parse((member.root / screenroot.SCREEN_FILE).read_text(encoding="utf-8")))
            continue
        print(f"{member.label}: screening {member.root}")    # a resumed one says its cells already finished
        code, _, own = _execute(member.root, in_set)
        if code != EXIT_OK:
            print(f"screen: {member.label} stopped; {session.resume_command(member.root, 'screen', in_set)} resumes "
                  "it and screens the shards after it", file=sys.stderr)
            return code, roots, rows
        rows.extend(own)
    return EXIT_OK, roots, rows


def resume(root: Path, execution: session.Execution) -> Screened:
    found = RunRoot(root.resolve())
    if found.mode != "screen":
        raise Refused(PREFIX, "screen_root", f"{found}: not a screen root (prepare.json does not say mode screen); "
                      "a campaign root is resumed by `campaign run ROOT`", EXIT_INPUT)
    if found.sealed:
        raise Refused(PREFIX, "sealed", f"{found} is sealed: its screen is complete (`--rescore` re-judges it)",
                      EXIT_INPUT)
    print(f"screen: resuming {found}")
    if (shard := found.prepare.shard) is not None and shard.of > 1:
        # legal (a shard is a root), but its table and emitted manifest hold its own workloads alone
        print(f"note: shard {shard.index} of {shard.of} screened alone: its table and any emitted manifest hold its "
              f"{len(shard.workloads[shard.index - 1])} workloads; `campaign screen --resume` with every root of "
              "the set screens the others too and reads the set as one")
    return _execute(found, execution)


def _execute(root: RunRoot, execution: session.Execution) -> Screened:
    """Run the root's cells through the session flow; the table is written before the seal."""
    rows: list[dict[str, str]] = []

    def write_table(root: RunRoot) -> None:
        rows.extend(screenroot.table(root))
        canonical.write_new(root / screenroot.SCREEN_FILE, screentable.render(rows))

    return session.execute(root, execution, before_seal=write_table), root.path, rows


def rescore(root: Path, strip: tuple[str, ...], allow_schema: Collection[int] = ()) -> Screened:
    root = root.resolve()
    for pattern in strip:
        problem = stripregex.problem(pattern)     # the same bound a manifest's patterns get
        if problem:
            raise InputError(f"--strip-annotation: {problem}")
    run_root = RunRoot(root)       # one reading: the gates, the table and the manifest below share its records
    if run_root.mode != "screen" or not (root / screenroot.SCREEN_FILE).is_file():
        raise Refused(PREFIX, "screen_root", f"{root}: not a screen root (no screen.tsv, or prepare.json "
                      "does not say mode screen)", EXIT_INPUT)
    verification.require_sealed(run_root, PREFIX)
    receipt.require_verified(run_root, PREFIX, allow_schema)
    rows = screenroot.table(run_root, strip)
    original = (root / screenroot.SCREEN_FILE).read_bytes()
    before = {r["workload"]: r["verdict"] for r in screentable.parse(original.decode("utf-8"))}
    manifest = run_root.manifest
    out = first_free(lambda n: root.parent / f"{root.name}{RESCORE_SUFFIX}{n}", Path.mkdir)
    canonical.write_new(out / screenroot.SCREEN_FILE, screentable.render(rows))
    (out / ORIGINAL_FILE).write_bytes(original)
    changes = [{"workload": r["workload"], "before": before.get(r["workload"]), "after": r["verdict"]}
               for r in rows if before.get(r["workload"]) != r["verdict"]]
    canonical.write_json_new(out / RESCORE_FILE, Rescore.model_validate({
        "schema_version": SCHEMA_VERSION, "root": str(root), "tool_version": __version__,
        "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "receipt_sha256": canonical.sha256_file(run_root.receipt_file),
        "rule": {"ir_stage": manifest.switch.ir_stage, "measured_launch_floor": manifest.measured_launch_floor,
                 "strip_annotations": list(manifest.switch.strip_annotations), "strip_annotations_added": list(strip),
                 "fingerprint": "kernel name + content of every variant, locations and annotations stripped "
                                "(campaign.judging.irevidence.fingerprint)",
                 "code": {name: canonical.sha256_file(harness.PROJECT_ROOT / name) for name in RULE_FILES}},
        "changes": changes,
    }).dump())
    print(f"rescored {root} -> {out}: " + (", ".join(f"{c['workload']} {c['before']} -> {c['after']}"
                                                    for c in changes) or "no verdict changed"))
    return EXIT_OK, out, rows


def pinned_to(root: Path) -> dict[str, str]:
    """``defaults.autotune_from`` naming a sealed screen root: its campaign replays the winners the
    screen timed instead of re-tuning (`campaign.planning.pinning`). Relative to the project root
    where the root lies inside it, as prepare resolves it; absolute otherwise."""
    digest = canonical.sha256_file(Path(root) / RECEIPT_FILE)
    where = Path(root).resolve()
    try:
        shown = str(where.relative_to(harness.PROJECT_ROOT))
    except ValueError:
        shown = str(where)
    return {"root": shown, "receipt_sha256": digest}


def emit(root: Path, rows: list[dict[str, str]], path: Path) -> None:
    _write_emitted(screenroot.emitted_manifest(root, rows, pinned_to(root)), rows, path)


def emit_set(roots: Sequence[Path], rows: list[dict[str, str]], path: Path) -> None:
    """One manifest of the set's IR_CHANGED and NEEDS_CARD workloads, pinned to no root: a campaign's
    autotune_from names one, and each shard timed its own workloads' configs."""
    _write_emitted(screenroot.emitted_manifest(roots[0], rows, None, others=roots[1:]), rows, path)


def _write_emitted(text: Optional[str], rows: list[dict[str, str]], path: Path) -> None:
    if text is None:
        raise Refused(PREFIX, "emit_empty", "no workload is IR_CHANGED or NEEDS_CARD: nothing deserves rounds, "
                      "no manifest written")
    try:
        canonical.write_new(path, text)
    except FileExistsError:
        raise Refused(PREFIX, "emit_exists", f"{path} exists: an emitted manifest never overwrites one") from None
    chosen = [f"{r['workload']} ({r['verdict']})" for r in rows if r["verdict"] in EMITTED]
    print(f"wrote {path}: {len(chosen)} workload(s) for the card: {', '.join(chosen)}")
