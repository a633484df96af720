"""`campaign attest ROOT [--out FILE] [--sign KEY]`: an in-toto v1 Statement for a sealed root.

Exit 0 with the statement (canonical JSON) on stdout or in FILE; 2 when ROOT is not
a sealed root, FILE is inside it or exists already, or KEY is not an ed25519 private
key; 5 when ROOT does not verify against its receipt (each difference named, as
`campaign verify` would; a receipt of an older schema only with ``--allow-schema N``). ``--sign KEY`` wraps the statement in a DSSE envelope signed
with the key (`campaign.sealing.signing`), written to FILE or by default beside the
root, ``ROOT.dsse.json``, where `campaign verify ROOT --key PUB` looks for it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign.commands import add_schema_arguments
from campaign.contract import canonical
from campaign.contract.errors import EXIT_INPUT, EXIT_OK, Refused
from campaign.contract.runroot import RunRoot
from campaign.sealing import attest, signing

EXAMPLE = ("examples:\n  campaign attest runs/demo-20261201T120000Z --out demo.intoto.json\n"
           "  campaign attest runs/demo-20261201T120000Z --sign key.pem   # ROOT.dsse.json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", type=Path, help="a sealed run root")
    parser.add_argument("--out", type=Path, default=None,
                        help="write the statement here (outside the root, a new file) instead of stdout; "
                             "with --sign, the envelope (default: ROOT.dsse.json beside the root)")
    parser.add_argument("--sign", type=Path, metavar="KEY", default=None,
                        help="an ed25519 private key (PEM, PKCS8: `openssl genpkey -algorithm ed25519`): write a "
                             "signed DSSE envelope of the statement")
    add_schema_arguments(parser)


def _resolved(path: Path, what: str) -> Path:
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:   # a loop of symbolic links on the way
        raise Refused(attest.PREFIX, "out", f"{path}: {what} cannot be resolved ({exc}): name a file in a folder "
                      "that exists", EXIT_INPUT) from None


def _check_out(out: Path, root: Path) -> None:
    if _resolved(out, "--out").is_relative_to(_resolved(root, "the root")):
        raise Refused(attest.PREFIX, "out", f"{out} is inside {root}: nothing is written into a sealed root",
                      EXIT_INPUT)
    if out.exists() or out.is_symlink():
        raise Refused(attest.PREFIX, "out", f"{out} exists: a statement never overwrites a file; "
                      "move it aside or name another --out", EXIT_INPUT)
    if not out.parent.is_dir():
        raise Refused(attest.PREFIX, "out", f"{out}: its folder {out.parent} is not a folder that exists", EXIT_INPUT)


def main(args: argparse.Namespace) -> int:
    root = RunRoot(args.root)
    out = args.out
    key = signing.load_private(args.sign) if args.sign is not None else None
    if key is not None and out is None:
        out = signing.envelope_path(root)
    if out is not None:
        _check_out(out, args.root)
    data = attest.statement(root, args.allow_schema)
    if key is not None:
        canonical.write_new(out, canonical.dumps(signing.sign(data, key)))
        print(f"{args.root}: statement of {len(data['subject'])} files signed (keyid "
              f"{signing.keyid(key.public_key())}) into {out}", file=sys.stderr)
    elif out is None:
        sys.stdout.write(canonical.dumps(data))
    else:
        canonical.write_new(out, canonical.dumps(data))
        print(f"{args.root}: statement of {len(data['subject'])} files written to {out}", file=sys.stderr)
    return EXIT_OK
