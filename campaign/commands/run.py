"""`campaign run [ROOT]`: execute a prepared root's matrix (`campaign.running.runner`), then seal it.

Without ROOT, the newest prepared, unsealed campaign root under --runs-dir.
Refusals name their check (``RUN_REFUSED check=<name>: ...``, exit 1): prepared,
mode (a screen root is run only by `campaign screen`, which also resumes it),
then the session's own (`campaign.flows.session`: sealed, lock, project_root,
harness, versions, device, journal). The session runs the cells, judges and seals; `run`
again resumes an interrupted campaign or completes an interrupted seal. ``--sign KEY`` (an
ed25519 private key, as `campaign attest --sign` takes) signs the root's statement as the seal
ends, into the DSSE envelope ``ROOT.dsse.json`` that `campaign verify ROOT --key PUB` checks:
the key and a free envelope path are checked before anything runs (exit 2).
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from campaign.commands import add_execution_arguments, execution
from campaign.flows import session

EXAMPLE = "examples:\n  campaign run runs/demo-20261201T120000Z\n  campaign run --runs-dir /data/runs     (its newest prepared root)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", nargs="?", type=Path, help="the run root (default: newest prepared, unsealed)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), metavar="DIR",
                        help="where roots are looked for (default: runs/)")
    add_execution_arguments(parser)
    parser.add_argument("--sign", type=Path, metavar="KEY", default=None,
                        help="an ed25519 private key (PEM, PKCS8): sign the root's statement at the seal, into "
                             "ROOT.dsse.json beside the root")


def main(args: argparse.Namespace) -> int:
    root = session.find_root(args.root, args.runs_dir)
    key = None
    if args.sign is not None:
        from campaign.sealing import signing  # the signing library, only when asked for
        key = signing.load_private(args.sign, session.PREFIX)
        signing.require_free(signing.envelope_path(root), session.PREFIX)
    return session.execute(root, dataclasses.replace(execution(args), sign_key=key))
