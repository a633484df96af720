"""One module per subcommand (`campaign.cli` lists them): each parses its arguments, calls
one flow (`campaign.flows`) and returns an exit code. No command imports another; the
options two commands share are defined here."""
from __future__ import annotations

import argparse
from pathlib import Path

from campaign.flows.session import Execution
from campaign.running.telemetry import INTERVAL_S


def add_execution_arguments(parser: argparse.ArgumentParser) -> None:
    """How cells are executed; `campaign run`'s and `campaign screen`'s."""
    parser.add_argument("--scratch-dir", type=Path, default=None,
                        help="where per-cell caches are made, outside the root (default: the system temp dir)")
    parser.add_argument("--telemetry-interval", type=float, default=INTERVAL_S,
                        help=f"seconds between samples (default {INTERVAL_S}: a sample inside every timing window)")
    parser.add_argument("--grace", type=float, default=10.0,
                        help="seconds between SIGTERM and SIGKILL when a cell is ended (default 10)")


def execution(args: argparse.Namespace) -> Execution:
    return Execution(scratch_dir=args.scratch_dir, telemetry_interval=args.telemetry_interval, grace_s=args.grace,
                     emit_manifest=getattr(args, "emit_manifest", None))
