"""Entry point: parse arguments and dispatch; each subcommand is one module returning an int."""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Optional, Sequence

from campaign import __version__, crash
from campaign.contract import faults
from campaign.contract.errors import EXIT_INTERRUPTED, EXIT_REFUSED, CampaignError

# subcommand (a module of campaign.commands) -> one-line help
COMMANDS = {
    "validate": "check a manifest as prepare would, writing nothing",
    "prepare": "validate a manifest and freeze it into a run root",
    "run": "execute a prepared root's matrix, then seal it",
    "verify": "re-hash a sealed root and name every difference",
    "attest": "an in-toto provenance statement for a sealed root",
    "report": "verdicts of a sealed root as markdown or JSON",
    "compare": "sealed roots side by side: classes, geomeans, what differs between them",
    "reaccount": "re-derive verdicts from a sealed root under a new launch floor",
    "screen": "one pinned pair per workload: decide what deserves rounds",
    "cost": "where a root's seconds went, per workload and phase",
    "schema": "regenerate the JSON Schemas under schemas/",
    "inventory": "a FlagGems checkout's benchmark items as a table",
}


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """Every subcommand with its one-line help; only ``command``'s module is imported and its
    arguments added, so a command loads what it runs and nothing more (``campaign --help``
    and a misspelt command import none)."""
    parser = argparse.ArgumentParser(
        prog="campaign", description="Sealed, reviewable A/B campaigns of Triton compiler switches over FlagGems operators.")
    parser.add_argument("--version", action="version", version=f"campaign {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, help_text in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = importlib.import_module(f"campaign.commands.{name}")
            module.add_arguments(sp)
            sp.epilog = module.EXAMPLE          # every command shows an example under its options
            sp.formatter_class = argparse.RawDescriptionHelpFormatter
            sp.set_defaults(_module=module)
    return parser


def _command(argv: Sequence[str]) -> Optional[str]:
    """The subcommand argv names: its first word that is not an option (the top level has no
    option that takes a value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    try:
        return int(args._module.main(args))
    except CampaignError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:     # a file that cannot be read is named; anything else is a bug, below
        refused = faults.read_failed(exc, args.command)
        if refused is None:
            return _crashed(exc, argv, args)
        print(refused.lines[0], file=sys.stderr)
        return refused.exit_code
    except Exception as exc:   # a bug: one line naming its crash log, never a bare traceback
        return _crashed(exc, argv, args)


def _crashed(exc: BaseException, argv: Sequence[str], args: argparse.Namespace) -> int:
    root = getattr(args, "root", None)
    crash.report(exc, argv, root if isinstance(root, Path) else None)
    return EXIT_REFUSED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
