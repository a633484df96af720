"""`campaign report ROOT [--format md|json] [--plot FILE] [--html DIR] [--allow-caliber-mismatch]`.
The flow (verification, the caliber guard, the verdicts shown): `campaign.flows.report`.

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
from campaign.contract.errors import EXIT_OK, EXIT_VERIFY, CampaignError, InputError
from campaign.contract.runroot import RunRoot
from campaign.flows import report as flow
from campaign.flows import shardset
from campaign.flows.report import PREFIX
from campaign.judging import irdiffroot
from campaign.reporting import page, report

EXAMPLE = "examples:\n  campaign report runs/demo-20261201T120000Z > report.md\n  campaign report ROOT --format json --html review/"

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
    args.root = Path(args.roots[0])
    root = RunRoot(args.root)     # read once: the gate, the signature's check, the verdicts and the page share it
    folder = _page_dir(root.path, Path(args.html)) if args.html is not None else None
    verified = flow.verified(root, args.allow_schema)
    _check_signature(args, root, verified)
    shown = flow.derive(root, verified, args.allow_caliber_mismatch)
    link = None
    if folder is not None:
        own = report.markdown(shown.verdicts, shown.beside, ir_pass=shown.ir_pass, page="", logs=shown.logs)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / page.PAGE_FILE
        target.write_text(page.html(shown.verdicts, own, irdiffroot.gather(root, shown.evidence), shown.banner),
                          encoding="utf-8")
        print(f"page: {target}", file=sys.stderr)
        link = target.as_posix()
    if args.format == "json":
        sys.stdout.write(report.json_text(shown.verdicts))
    else:
        sys.stdout.write(shown.banner + report.markdown(shown.verdicts, shown.beside, ir_pass=shown.ir_pass,
                                                        page=link, logs=shown.logs))
    if args.plot is not None:   # after the report: a root with nothing timed still gets its report
        why = report.forest_plot(shown.verdicts, args.plot)
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
        derived = flow.derive(member.root, member.verified, args.allow_caliber_mismatch)   # verified in gather
        verdicts, banner = derived.verdicts, derived.banner
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


def _check_signature(args: argparse.Namespace, root: RunRoot, verified) -> None:
    if args.key is not None and verified is None:
        raise InputError(f"--key {args.key}: {root} is not sealed, so no signed envelope can vouch for it")
    signed = signature_differences(args, root, PREFIX)
    failed = signed(verified.receipt) if signed is not None else ()
    if failed:
        raise CampaignError([f"{PREFIX} check=signature: {d.line()}" for d in failed], EXIT_VERIFY)
