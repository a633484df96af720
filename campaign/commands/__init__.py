"""One module per subcommand (`campaign.cli` lists them): each parses its arguments, calls
one flow (`campaign.flows`) and returns an exit code. No command imports another; the
options two commands share are defined here."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from campaign.contract.runroot import RunRoot
    from campaign.flows.session import Execution

# The session and the telemetry sampler are imported by the two commands that execute cells,
# when they build their arguments: every command imports this package, and `validate` or
# `verify` need neither. The signing library likewise, by `verify` and `report` given --key.


def add_execution_arguments(parser: argparse.ArgumentParser) -> None:
    """How cells are executed; `campaign run`'s and `campaign screen`'s."""
    from campaign.running.telemetry import INTERVAL_S
    parser.add_argument("--scratch-dir", type=Path, default=None, metavar="DIR",
                        help="per-cell caches, outside the root (default: temp dir)")
    parser.add_argument("--telemetry-interval", type=float, default=INTERVAL_S, metavar="S",
                        help=f"seconds between samples (default {INTERVAL_S})")
    parser.add_argument("--grace", type=float, default=10.0, metavar="S",
                        help="seconds from SIGTERM to SIGKILL of a cell (default 10)")
    parser.add_argument("--devices", type=_devices, default=None, metavar="I,J,...",
                        help="only these of the manifest's cards; a resume moves the others' workloads here")
    parser.add_argument("--weights-from", type=Path, default=None, metavar="ROOT",
                        help="partition by a sealed root's seconds a workload")
    parser.add_argument("--ray", metavar="auto|ADDRESS", default=None,
                        help="each workload a Ray task; this host seals")


def _devices(text: str) -> tuple[int, ...]:
    try:
        found = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected card indices like 0,1") from None
    if not found or min(found) < 0 or len(set(found)) != len(found):
        raise argparse.ArgumentTypeError(f"{text!r}: expected distinct card indices like 0,1")
    return found


def positive(kind):
    """An argument type: `kind` of the text, refused unless above 0 (prepare's and screen's --shards)."""
    def parse(text: str):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text}: must be above 0")
        return value
    return parse


def execution(args: argparse.Namespace) -> "Execution":
    from campaign.flows.session import Execution
    return Execution(scratch_dir=args.scratch_dir, telemetry_interval=args.telemetry_interval, grace_s=args.grace,
                     emit_manifest=getattr(args, "emit_manifest", None),
                     devices=args.devices, weights_from=args.weights_from, ray=args.ray)


def add_schema_arguments(parser: argparse.ArgumentParser) -> None:
    """verify's ``--allow-schema N``, which every command that reads a sealed root shares: they refuse
    what verify refuses (`campaign.sealing.verification.require_verified`)."""
    from campaign.contract.receiptmodel import RECEIPT_VERSION
    parser.add_argument("--allow-schema", type=int, action="append", default=[], metavar="N",
                        help=f"read an older receipt, schema_version N (now {RECEIPT_VERSION})")


def add_key_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--key", type=Path, metavar="PUB",
                        help="an ed25519 public key (PEM): also check the signed envelope of the root under it")
    parser.add_argument("--envelope", type=Path, metavar="FILE",
                        help="the signed envelope to check with --key (default: ROOT.dsse.json beside the root)")


def signature_differences(args: argparse.Namespace, root: "RunRoot", prefix: str):
    """A callable giving the envelope's differences for a receipt, or None without ``--key``; the
    key and the envelope are refused (exit 2) before anything is verified."""
    if args.key is None:
        if args.envelope is not None:
            from campaign.contract.errors import InputError
            raise InputError(f"--envelope {args.envelope}: given without --key PUB, which it is checked under")
        return None
    from campaign.sealing import signing
    from campaign.sealing.verification import Difference
    public = signing.load_public(args.key, prefix)
    envelope = signing.require_envelope(args.envelope or signing.envelope_path(root), prefix)
    return lambda receipt: tuple(Difference("signature", str(envelope), line)
                                 for line in signing.problems(root, receipt, envelope, public))
