"""`campaign screen MANIFEST`: one pinned pair per workload, to decide what deserves rounds.

The manifest is checked exactly as `prepare` checks it and frozen into a screen
root (``<campaign>-screen-<stamp>``, prepare.json ``"mode": "screen"``, the
manifest copied byte for byte) whose matrix is an IR pass and round 1. The IR
pass (round 0) runs baseline and candidate untimed, each on its first autotune
config, without correctness: it decides whether the switch changed the code.
Round 1 -- the baseline records the autotune configs, the candidate (and the
control) replay them, timed, with correctness -- runs only for workloads whose
IR changed; the others are skipped and screen.tsv says "not timed: IR unchanged".
``--time-unchanged`` times every workload's round 1 (recorded in matrix.json). On a backend that
compiles only, round 1 runs only with ``--time-unchanged``: it would time nothing, so the IR pass
decides every workload there (`campaign.running.rounds`: IR_PASS_DECIDES). The
cells run through `campaign run`'s session flow (`campaign.flows.screen`) -- same worker, plugins, caliber and
timeouts -- and ``screen.tsv`` (`campaign.judging.screening`) is written before the seal,
so the receipt hashes it. The last stdout line is the table's path.

``--resume ROOT`` completes a screen root that was stopped before its seal (an
interrupted or killed screen): finished cells are kept, the unfinished one is set
aside and run again, exactly as `campaign run` resumes a campaign; then the table
is written and the root sealed.

``--ray auto|ADDRESS`` (a screen or its ``--resume``) runs each workload as a Ray task on a
cluster, as `campaign run --ray` does (`campaign.running.rayexec`): on the compile-only backend
each task asks one CPU, so CPU nodes share the IR pass; a lost node's workloads are named
``card_failed`` rows (``RUN_FAILED check=lost``), which ``--resume ROOT`` runs again; this host
writes the table and seals once.

``--rescore ROOT`` re-judges a sealed screen root under the current fingerprint
rule (plus any ``--strip-annotation``) without running anything: the sealed root
is never written; ``<root>.rescore-<n>/`` gets the new screen.tsv, the original
as screen.original.tsv, and rescore.json naming the rule and what moved.

``--emit-manifest FILE`` writes the IR_CHANGED and NEEDS_CARD workloads (an offline cell that
proved its own IR untrustworthy) as a campaign manifest (each with ``weight_s``); an existing FILE
is refused before anything runs. Before the table's path, one line counts the verdicts, NEEDS_CARD
apart from the IR verdicts.
Refusals: ``SCREEN_REFUSED check=<name>: ...``. ``--format json`` prints the table as
`campaign.contract.outputs.ScreenOutput` (schemas/screen.schema.json) and nothing else on stdout.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from campaign.commands import add_execution_arguments, add_schema_arguments, execution, positive
from campaign.contract import canonical
from campaign.contract.errors import EXIT_OK, InputError, Refused
from campaign.contract.outputs import OUTPUT_VERSION, ScreenOutput
from campaign.flows import screen as flow
from campaign.judging import screenroot, screentable

EXAMPLE = "examples:\n  campaign screen manifests/demo.yaml --emit-manifest next.yaml\n  campaign screen --resume ROOT"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", type=Path, nargs="?", help="the manifest to screen (YAML)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), metavar="DIR",
                        help="where the screen root is made (default: runs/)")
    parser.add_argument("--resume", type=Path, nargs="+", metavar="ROOT",
                        help="finish a stopped screen, or a set's shards")
    parser.add_argument("--rescore", type=Path, metavar="ROOT", help="re-judge a sealed screen root; runs nothing")
    parser.add_argument("--strip-annotation", action="append", default=[], metavar="RE",
                        help="--rescore: also strip RE before fingerprinting")
    add_schema_arguments(parser)   # --rescore of a root sealed under an older receipt schema
    parser.add_argument("--time-unchanged", action="store_true", help="time round 1 also where the IR is unchanged")
    parser.add_argument("--emit-manifest", type=Path, metavar="FILE",
                        help="write IR_CHANGED, NEEDS_CARD as a manifest")
    parser.add_argument("--shards", type=positive(int), metavar="N",
                        help="N roots of whole workloads, each sealed")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) or json (schemas/screen.schema.json)")
    add_execution_arguments(parser)


def _usage(args: argparse.Namespace) -> None:
    given = [what for what, value in (("MANIFEST", args.manifest), ("--resume", args.resume),
                                      ("--rescore", args.rescore)) if value is not None]
    if len(given) != 1:
        raise InputError("give one of: a MANIFEST to screen, --resume ROOT, --rescore ROOT"
                         + (f" (got {' and '.join(given)})" if given else ""))
    if args.strip_annotation and args.rescore is None:
        raise InputError("--strip-annotation applies to --rescore only (a fresh screen uses the manifest's patterns)")
    if args.time_unchanged and args.manifest is None:
        raise InputError("--time-unchanged applies to a fresh screen (a MANIFEST); a resumed screen keeps its matrix's choice")
    if args.ray is not None and args.rescore is not None:
        raise InputError("--ray applies to a screen that runs cells (a MANIFEST or --resume ROOT); --rescore runs nothing")
    if args.shards is not None and args.manifest is None:
        raise InputError("--shards applies to a fresh screen (a MANIFEST); a set's shards are resumed by "
                         "`--resume ROOT ROOT...`")
    if _is_set(args) and args.format == "json":
        raise InputError("--format json is one screen root's table (schemas/screen.schema.json); a set of shards "
                         "has one in each shard: its screen.tsv")
    if args.emit_manifest is not None and args.emit_manifest.exists():
        raise Refused(flow.PREFIX, "emit_exists", f"{args.emit_manifest} exists: an emitted manifest never overwrites one")


def _is_set(args: argparse.Namespace) -> bool:
    return args.shards is not None or (args.resume is not None and len(args.resume) > 1)


def main(args: argparse.Namespace) -> int:
    _usage(args)
    if _is_set(args):
        return _main_set(args)
    as_json = args.format == "json"
    # with --format json, stdout holds the JSON alone: every other line goes to stderr
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
        if args.rescore is not None:
            code, out, rows = flow.rescore(args.rescore, tuple(args.strip_annotation), args.allow_schema)
        elif args.resume is not None:
            code, out, rows = flow.resume(args.resume[0], execution(args))
        else:
            code, out, rows = flow.screen(args.manifest, args.runs_dir, execution(args), args.time_unchanged)
        if code != EXIT_OK:
            return code
        for r in rows if not as_json else ():
            print(line(r))
        if not as_json:
            print(screentable.summary(rows))
        if args.emit_manifest is not None:
            flow.emit(args.rescore or out, rows, args.emit_manifest)
    if as_json:
        table = ScreenOutput(schema_version=OUTPUT_VERSION, root=str(out), table=str(out / screenroot.SCREEN_FILE),
                             columns=screentable.COLUMNS, rows=tuple(rows),
                             emitted_manifest=str(args.emit_manifest) if args.emit_manifest is not None else None)
        sys.stdout.write(canonical.dumps(table.model_dump(mode="json")))
    else:
        print(out / screenroot.SCREEN_FILE)
    return EXIT_OK


def _main_set(args: argparse.Namespace) -> int:
    """A screen as shards (``--shards N``) or a set's shards resumed (``--resume ROOT ROOT...``): every
    shard's rows, one summary over the set, an emitted manifest over the set; the last lines are the
    shards' screen.tsv paths, shard 1 first."""
    if args.shards is not None:
        code, roots, rows = flow.screen_shards(args.manifest, args.runs_dir, execution(args), args.shards,
                                               args.time_unchanged)
    else:
        code, roots, rows = flow.resume_set(args.resume, execution(args))
    if code != EXIT_OK:
        return code
    for r in rows:
        print(line(r))
    print(screentable.summary(rows) + f" (over {len(roots)} shards)")
    if args.emit_manifest is not None:
        flow.emit_set(roots, rows, args.emit_manifest)
    for root in roots:
        print(root / screenroot.SCREEN_FILE)
    return EXIT_OK


def line(r: dict[str, str]) -> str:
    """One printed row: verdict, range and its label, then the control's A/A beside it."""
    shown = " ".join(part for part in (r["range"], f"({r['range_label']})" if r["range_label"] else "") if part)
    aa = (f"; A/A {r['aa_range']} ({r['aa_label']})" if r["aa_range"]
          else f"; {r['aa_label']}" if r["aa_label"] else "")
    return f"{r['workload']}: {r['verdict']} {shown}".rstrip() + aa
