"""`campaign schema [--check]`: the JSON Schemas under schemas/, generated from the models.

Committed, sorted and LF-terminated; `--check` (and a test) fails on any byte
difference, so the schema cannot drift from the models it describes.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from campaign.contract import canonical
from campaign.contract.comparison import Comparison
from campaign.contract.errors import EXIT_OK, CampaignError
from campaign.contract.manifest import Manifest
from campaign.contract.outputs import CostOutput, InventoryOutput, ScreenOutput, ValidateOutput, VerifyOutput
from campaign.contract.plans import Matrix
from campaign.contract.receiptmodel import ReceiptFile
from campaign.contract.records import Verdicts
from campaign.contract.rootrecords import Prepare, Rescore, RunIdentity
from campaign.planning.harness import PROJECT_ROOT

EXAMPLE = "example:\n  campaign schema --check"

SCHEMAS = {"manifest.schema.json": Manifest, "matrix.schema.json": Matrix, "receipt.schema.json": ReceiptFile,
           "prepare.schema.json": Prepare, "run_identity.schema.json": RunIdentity,
           "verdicts.schema.json": Verdicts, "rescore.schema.json": Rescore,
           "comparison.schema.json": Comparison,
           # what `--format json` prints (`campaign.contract.outputs`)
           "validate.schema.json": ValidateOutput, "verify.schema.json": VerifyOutput,
           "screen.schema.json": ScreenOutput, "cost.schema.json": CostOutput,
           "inventory.schema.json": InventoryOutput}


def render() -> dict[str, str]:
    out = {}
    for name, model in SCHEMAS.items():
        schema = model.model_json_schema()
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["$id"] = f"campaign/{name}"
        out[name] = canonical.dumps(schema)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true", help="fail if the committed schemas differ")
    parser.add_argument("--dir", type=Path, default=PROJECT_ROOT / "schemas")


def main(args: argparse.Namespace) -> int:
    stale = []
    for name, text in render().items():
        path = args.dir / name
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        if args.check:
            stale.append(name)
        else:
            args.dir.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
            print(f"wrote {path}")
    if stale:
        raise CampaignError([f"schemas/{name} differs from the models: run `campaign schema`" for name in stale])
    return EXIT_OK
