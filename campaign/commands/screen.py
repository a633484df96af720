"""`campaign screen MANIFEST`: one pinned pair per workload, to decide what deserves rounds.

The manifest is checked exactly as `prepare` checks it and frozen into a screen
root (``<campaign>-screen-<stamp>``, prepare.json ``"mode": "screen"``, the
manifest copied byte for byte) whose matrix is round 1 only: the baseline
records the autotune configs, the candidate (and the control) replay them. The
cells run through `campaign run`'s own flow -- same worker, plugins, caliber and
timeouts -- and ``screen.tsv`` (`campaign.judging.screening`) is written before the seal,
so the receipt hashes it. The last stdout line is the table's path.

``--resume ROOT`` completes a screen root that was stopped before its seal (an
interrupted or killed screen): finished cells are kept, the unfinished one is set
aside and run again, exactly as `campaign run` resumes a campaign; then the table
is written and the root sealed.

``--rescore ROOT`` re-judges a sealed screen root under the current fingerprint
rule (plus any ``--strip-annotation``) without running anything: the sealed root
is never written; ``<root>.rescore-<n>/`` gets the new screen.tsv, the original
as screen.original.tsv, and rescore.json naming the rule and what moved.

``--emit-manifest FILE`` writes the IR_CHANGED workloads as a campaign manifest
(each with ``weight_s``); an existing FILE is refused before anything runs.
Refusals: ``SCREEN_REFUSED check=<name>: ...``.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
from datetime import datetime, timezone
from pathlib import Path
from campaign import __version__
from campaign.contract import canonical, stripregex
from campaign.planning import harness
from campaign.sealing import receipt
from campaign.running import runchecks
from campaign.judging import screening, screenroot
from campaign.contract.artifacts import RECEIPT_FILE
from campaign.commands import prepare, run
from campaign.contract.errors import EXIT_INPUT, EXIT_OK, InputError, Refused
from campaign.planning.matrix import expand

PREFIX = "SCREEN_REFUSED"
ORIGINAL_FILE = "screen.original.tsv"
RESCORE_FILE = "rescore.json"
RULE_FILES = ("campaign/judging/irevidence.py", "campaign/judging/screening.py")   # the rule a rescore applies


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", type=Path, nargs="?", help="the manifest to screen (YAML)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where the screen root is made (default: runs/)")
    parser.add_argument("--resume", type=Path, metavar="ROOT",
                        help="complete an unsealed screen root that was stopped (finished cells are kept)")
    parser.add_argument("--rescore", type=Path, metavar="ROOT", help="re-judge a sealed screen root; runs nothing")
    parser.add_argument("--strip-annotation", action="append", default=[], metavar="REGEX",
                        help="with --rescore: also strip this pattern before fingerprinting (repeatable)")
    parser.add_argument("--emit-manifest", type=Path, metavar="FILE",
                        help="write the IR_CHANGED workloads as a campaign manifest with weight_s")
    run.add_execution_arguments(parser)


def main(args: argparse.Namespace) -> int:
    given = [what for what, value in (("MANIFEST", args.manifest), ("--resume", args.resume),
                                      ("--rescore", args.rescore)) if value is not None]
    if len(given) != 1:
        raise InputError("give one of: a MANIFEST to screen, --resume ROOT, --rescore ROOT"
                         + (f" (got {' and '.join(given)})" if given else ""))
    if args.strip_annotation and args.rescore is None:
        raise InputError("--strip-annotation applies to --rescore only (a fresh screen uses the manifest's patterns)")
    if args.emit_manifest is not None and args.emit_manifest.exists():
        raise Refused(PREFIX, "emit_exists", f"{args.emit_manifest} exists: an emitted manifest never overwrites one")
    if args.rescore is not None:
        code, out, rows = EXIT_OK, *rescore(args.rescore, tuple(args.strip_annotation))
    elif args.resume is not None:
        code, out, rows = resume(args)
    else:
        code, out, rows = screen(args)
    if code != EXIT_OK:
        return code
    for r in rows:
        print(line(r))
    if args.emit_manifest is not None:
        emit(args.rescore or out, rows, args.emit_manifest)
    print(out / screenroot.SCREEN_FILE)
    return EXIT_OK


def line(r: dict[str, str]) -> str:
    """One printed row: verdict, range and its label, then the control's A/A beside it."""
    shown = " ".join(part for part in (r["range"], f"({r['range_label']})" if r["range_label"] else "") if part)
    aa = (f"; A/A {r['aa_range']} ({r['aa_label']})" if r["aa_range"]
          else f"; {r['aa_label']}" if r["aa_label"] else "")
    return f"{r['workload']}: {r['verdict']} {shown}".rstrip() + aa


def screen(args: argparse.Namespace) -> tuple[int, Path, list[dict[str, str]]]:
    checked = prepare.check(args.manifest)
    one = checked.manifest.model_copy(update={"rounds": checked.manifest.rounds.model_copy(update={"count": 1})})
    root = prepare.freeze(dataclasses.replace(checked, matrix=expand(one, checked.resolved)), args.runs_dir,
                          mode="screen")
    print(f"screen {checked.manifest.campaign}: {len(checked.resolved)} workloads, one pinned pair each -> {root}")
    return _execute(root, args)


def resume(args: argparse.Namespace) -> tuple[int, Path, list[dict[str, str]]]:
    root = args.resume.resolve()
    if runchecks.root_mode(root) != "screen":
        raise Refused(PREFIX, "screen_root", f"{root}: not a screen root (prepare.json does not say mode screen); "
                      "a campaign root is resumed by `campaign run ROOT`", EXIT_INPUT)
    if receipt.is_sealed(root):
        raise Refused(PREFIX, "sealed", f"{root} is sealed: its screen is complete (`--rescore` re-judges it)",
                      EXIT_INPUT)
    print(f"screen: resuming {root}")
    return _execute(root, args)


def _execute(root: Path, args: argparse.Namespace) -> tuple[int, Path, list[dict[str, str]]]:
    """Run the root's cells through `campaign run`'s flow; the table is written before the seal."""
    rows: list[dict[str, str]] = []

    def write_table(root: Path) -> None:
        rows.extend(screenroot.table(root))
        canonical.write_new(root / screenroot.SCREEN_FILE, screening.render(rows))

    return run.execute(root, args, before_seal=write_table), root, rows


def rescore(root: Path, strip: tuple[str, ...]) -> tuple[Path, list[dict[str, str]]]:
    root = root.resolve()
    for pattern in strip:
        problem = stripregex.problem(pattern)     # the same bound a manifest's patterns get
        if problem:
            raise InputError(f"--strip-annotation: {problem}")
    if runchecks.root_mode(root) != "screen" or not (root / screenroot.SCREEN_FILE).is_file():
        raise Refused(PREFIX, "screen_root", f"{root}: not a screen root (no screen.tsv, or prepare.json "
                      "does not say mode screen)", EXIT_INPUT)
    if not receipt.is_sealed(root):
        raise Refused(PREFIX, "sealed", f"{root}: not sealed; only a sealed screen is rescored", EXIT_INPUT)
    receipt.require_verified(root, PREFIX)
    rows = screenroot.table(root, strip)
    original = (root / screenroot.SCREEN_FILE).read_bytes()
    before = {r["workload"]: r["verdict"] for r in screening.parse(original.decode("utf-8"))}
    manifest, _ = screenroot.load(root)
    out = _claim(root)
    canonical.write_new(out / screenroot.SCREEN_FILE, screening.render(rows))
    (out / ORIGINAL_FILE).write_bytes(original)
    changes = [{"workload": r["workload"], "before": before.get(r["workload"]), "after": r["verdict"]}
               for r in rows if before.get(r["workload"]) != r["verdict"]]
    canonical.write_json_new(out / RESCORE_FILE, {
        "schema_version": 1, "root": str(root), "tool_version": __version__,
        "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "receipt_sha256": canonical.sha256_file(root / RECEIPT_FILE),
        "rule": {"ir_stage": manifest.switch.ir_stage, "measured_launch_floor": manifest.measured_launch_floor,
                 "strip_annotations": list(manifest.switch.strip_annotations), "strip_annotations_added": list(strip),
                 "fingerprint": "kernel name + content of every variant, locations and annotations stripped "
                                "(campaign.judging.irevidence.fingerprint)",
                 "code": {name: canonical.sha256_file(harness.PROJECT_ROOT / name) for name in RULE_FILES}},
        "changes": changes,
    })
    print(f"rescored {root} -> {out}: " + (", ".join(f"{c['workload']} {c['before']} -> {c['after']}"
                                                    for c in changes) or "no verdict changed"))
    return out, rows


def _claim(root: Path) -> Path:
    for n in itertools.count(1):
        out = root.parent / f"{root.name}.rescore-{n}"
        try:
            out.mkdir()
            return out
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def emit(root: Path, rows: list[dict[str, str]], path: Path) -> None:
    text = screenroot.emitted_manifest(root, rows)
    if text is None:
        raise Refused(PREFIX, "emit_empty", "no workload is IR_CHANGED: nothing deserves rounds, no manifest written")
    try:
        canonical.write_new(path, text)
    except FileExistsError:
        raise Refused(PREFIX, "emit_exists", f"{path} exists: an emitted manifest never overwrites one") from None
    chosen = [r["workload"] for r in rows if r["verdict"] == screening.IR_CHANGED]
    print(f"wrote {path}: {len(chosen)} IR_CHANGED workload(s): {', '.join(chosen)}")
