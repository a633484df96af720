"""`campaign report ROOT [--format md|json] [--plot FILE] [--html DIR] [--allow-caliber-mismatch]`.

On a sealed root the root is verified first (`campaign.sealing.verification.require_verified`, the gate
verify's own refusals go through: exit 5, naming what failed, nothing rendered; an older receipt only with
``--allow-schema N``), and the verdicts rendered are the sealed
ones from receipt.json. They are also re-derived under today's classifier: a
workload whose class or reason moved since the seal is shown in a separate,
labelled section, and the receipt stays the record. An unsealed complete root
is derived live and labelled "not sealed". In both, the caliber of every cell
that ran is compared before any latency is read (exit 4 on a mismatch unless
released; released, a warning is printed every time). ``--key PUB`` first checks the root's signed
envelope as `campaign verify --key` does (exit 5 naming each mismatch, nothing rendered). ``--html DIR`` also writes the review page,
DIR/index.html (`campaign.reporting.page`: the same report, the forest plot and the IR diff of
every changed workload), which the markdown links. Given the shard roots of one set
(`campaign prepare --shards`), every shard is verified and the set rendered as one answer
(`campaign.flows.shardset`): one verdict table, each row naming its shard, the class counts over the set.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign.commands import add_key_arguments, add_schema_arguments, signature_differences
from campaign.contract import canonical
from campaign.contract.errors import EXIT_OK, EXIT_VERIFY, REPORT_REFUSED, CampaignError, InputError
from campaign.contract.records import Verdicts
from campaign.flows import shardset
from campaign.judging import caliber, irdiffroot
from campaign.judging.classify import classify
from campaign.judging.evidence import caliber_of, load_frame, load_root
from campaign.reporting import cardsection, page, report, speedup
from campaign.sealing import receipt

EXAMPLE = "examples:\n  campaign report runs/demo-20261201T120000Z > report.md\n  campaign report ROOT --format json --html review/"

PREFIX = REPORT_REFUSED
NOT_SEALED = ("> **Not sealed.** These verdicts are derived now from the root's files; no receipt records them, "
              "so nothing here has been verified.\n\n")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("roots", type=Path, nargs="+", metavar="ROOT",
                        help="run root (sealed, or unsealed and complete); or every shard root of one set "
                             "(`campaign prepare --shards`), each sealed: one answer over them all")
    parser.add_argument("--format", choices=("md", "json"), default="md", help="markdown for a PR (default) or JSON")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="also write a forest plot (needs the 'plot' extra)")
    parser.add_argument("--html", type=Path, metavar="DIR",
                        help="also write the review page DIR/index.html (self-contained: the report, the forest plot, "
                             "the IR diff of every changed workload), which the markdown links")
    parser.add_argument("--allow-caliber-mismatch", action="store_true",
                        help="report despite a caliber mismatch (still printed; affected workloads are X)")
    add_key_arguments(parser)
    add_schema_arguments(parser)


def check_caliber(root: Path, allow: bool) -> caliber.CaliberCheck:
    """The guard, before any latency is read: over every cell that ran, a screen's IR pass included
    (its timing fields held among its own cells, `campaign.judging.caliber.TIMING_FIELDS`)."""
    _, matrix = load_frame(root)
    check, _ = caliber_of(root, matrix.tasks)
    caliber.guard(check, allow, sys.stderr)
    return check


def _page_dir(root: Path, folder: Path) -> Path:
    if folder.resolve().is_relative_to(root.resolve()):
        raise InputError(f"--html {folder}: inside the run root {root}, which is never written after its seal; "
                         "name a folder outside it")
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--html {folder}: exists and is not a folder; name a folder (index.html is written in it)")
    return folder


def main(args: argparse.Namespace) -> int:
    if len(args.roots) > 1 or shardset.is_shard(args.roots[0]):
        return _shard_set(args)
    args.root = root = Path(args.roots[0])
    folder = _page_dir(root, Path(args.html)) if args.html is not None else None
    verified = receipt.require_verified(root, PREFIX, args.allow_schema) if receipt.is_sealed(root) else None
    _check_signature(args, verified)
    check = check_caliber(root, args.allow_caliber_mismatch)
    if args.allow_caliber_mismatch:
        print("warning: --allow-caliber-mismatch: the caliber guard is released; latencies measured under "
              "different calibers mean different things (any re-derived workload they touch is X)", file=sys.stderr)
    # re-derived from the same evidence the seal judged, a harness changed during the run included
    drift = tuple(verified.receipt.harness_changed_since_prepare) if verified else ()
    # one read of the root serves the verdicts and the speedup section
    ev = load_root(root, allow_caliber_mismatch=args.allow_caliber_mismatch, harness_drift=drift)
    verdicts, banner = _shown(root, verified, Verdicts.read(classify(ev)), args.allow_caliber_mismatch)
    for note in verified.notes if verified else ():
        print(f"note: {note}", file=sys.stderr)
    beside = tuple(speedup.section(ev)) + tuple(cardsection.section(root))
    link, logs = None, report.log_lines(ev.tasks.values())
    if folder is not None:
        own = report.markdown(verdicts, beside, ir_pass=check.ir_pass, page="", logs=logs)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / page.PAGE_FILE
        target.write_text(page.html(verdicts, own, irdiffroot.gather(root, ev), banner), encoding="utf-8")
        print(f"page: {target}", file=sys.stderr)
        link = target.as_posix()
    if args.format == "json":
        sys.stdout.write(report.json_text(verdicts))
    else:
        sys.stdout.write(banner + report.markdown(verdicts, beside, ir_pass=check.ir_pass, page=link, logs=logs))
    if args.plot is not None:   # after the report: a root with nothing timed still gets its report
        why = report.forest_plot(verdicts, args.plot)
        if why is not None:
            print(f"note: {why}", file=sys.stderr)
    return EXIT_OK


def _shard_set(args: argparse.Namespace) -> int:
    """The shard roots of one set as one answer; the review page and a signed envelope are a root's own."""
    for flag, given in (("--html", args.html), ("--key", args.key)):
        if given is not None:
            raise InputError(f"{flag}: for one root; report each shard root with it on its own")
    members = shardset.gather(args.roots, args.allow_schema)
    shown, banners = [], []
    for member in members:
        verified = receipt.require_verified(member.root, PREFIX, args.allow_schema)
        check_caliber(member.root, args.allow_caliber_mismatch)
        ev = load_root(member.root, allow_caliber_mismatch=args.allow_caliber_mismatch,
                       harness_drift=tuple(verified.receipt.harness_changed_since_prepare))
        verdicts, banner = _shown(member.root, verified, Verdicts.read(classify(ev)), args.allow_caliber_mismatch)
        shown.append(verdicts)
        banners.append(banner and f"> **{member.label}** ({member.root}):\n" + banner)
    verdicts, origin = shardset.merged(members, shown, args.allow_caliber_mismatch)
    if args.format == "json":
        sys.stdout.write(canonical.dumps({"shard_set": members[0].shard.set_id, "verdicts": verdicts.dump(),
                                          "shards": [{"shard": m.shard.index, "of": m.shard.of, "root": str(m.root),
                                                      "workloads": sorted(w for w, k in origin.items()
                                                                          if k == f"{m.shard.index}/{m.shard.of}")}
                                                     for m in members]}))
    else:
        listed = tuple(report.shard_lines(members[0].shard.set_id, [(m.label, str(m.root)) for m in members]))
        sys.stdout.write("".join(banners) + report.markdown(verdicts, listed, shards=origin))
    if args.plot is not None:
        why = report.forest_plot(verdicts, args.plot)
        if why is not None:
            print(f"note: {why}", file=sys.stderr)
    return EXIT_OK


def _check_signature(args: argparse.Namespace, verified) -> None:
    if args.key is not None and verified is None:
        raise InputError(f"--key {args.key}: {args.root} is not sealed, so no signed envelope can vouch for it")
    signed = signature_differences(args, PREFIX)
    failed = signed(verified.receipt) if signed is not None else ()
    if failed:
        raise CampaignError([f"{PREFIX} check=signature: {d.line()}" for d in failed], EXIT_VERIFY)


def _shown(root: Path, verified, derived: Verdicts, released: bool) -> tuple[Verdicts, str]:
    """The verdicts shown and the banner above them: the sealed ones where the receipt holds them."""
    if verified is None:
        print(f"note: {root} is not sealed: verdicts derived now, not a sealed record", file=sys.stderr)
        return derived, NOT_SEALED
    if verified.receipt.verdicts is None:
        why = verified.receipt.verdicts_note
        print(f"note: the receipt holds no verdicts ({why}): these are derived now", file=sys.stderr)
        return derived, f"> **Derived now, not sealed.** The seal recorded no verdicts: {why}.\n\n"
    verdicts = verified.receipt.verdicts
    changes = class_changes(verdicts, derived)
    if changes:
        print("warning: classes moved since the seal (re-derived now); the sealed verdicts are shown and are "
              "the record: " + "; ".join(changes), file=sys.stderr)
    elif verdicts.dump() != derived.dump():
        print("note: the classifier's output changed since the seal; every class and reason is the sealed one",
              file=sys.stderr)
    return verdicts, _changes_note(changes, released)


def class_changes(sealed: Verdicts, derived: Verdicts) -> list[str]:
    """'workload: A -> B (reason)' for every workload whose class or reason is not the sealed one."""
    out = []
    old, new = sealed.workloads, derived.workloads
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if (a and (a.klass, a.reason)) != (b and (b.klass, b.reason)):
            out.append(f"{name}: {a.klass if a else '-'} -> {b.klass if b else '-'} ({b.reason if b else 'absent now'})")
    return out


def _changes_note(changes: list[str], released: bool) -> str:
    if not changes:
        return ""
    how = " with the caliber guard released" if released else ""
    lines = [f"> **Classes moved since the seal.** Re-derived now under today's classifier{how}: not the "
             "record. Every class below is the sealed one from receipt.json. Sealed -> re-derived:", ">"]
    lines += [f"> - {change}" for change in changes]
    return "\n".join(lines) + "\n\n"
