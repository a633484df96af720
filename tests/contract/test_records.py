"""The sealed records as models: every committed record reads and dumps back byte for byte,
the committed H200 root still reports as its report.md, the published schemas accept what
is written, and a receipt whose verdicts are not the model's no longer verifies."""
from __future__ import annotations

from pathlib import Path
from typing import get_args

import committedroots
import jsonschema
import pytest
import rootbuilder as rb
from conftest import PROJECT_ROOT
from pydantic import ValidationError
from runroots import copy_root

from campaign.contract import canonical
from campaign.contract.receiptmodel import ReceiptFile, content_digest
from campaign.contract.records import VerdictClass, Verdicts
from campaign.contract.rootrecords import Prepare, Rescore, RunIdentity
from campaign.contract.verdictnames import CLASSES
from campaign.flows import screen

RECEIPTS = PROJECT_ROOT / "receipts"
SCHEMAS = PROJECT_ROOT / "schemas"
CAMPAIGN_RECEIPTS = sorted(p for p in RECEIPTS.rglob("receipt.json") if canonical.read_json(p).get("kind") != "derived")
DERIVED_RECEIPTS = sorted(p for p in RECEIPTS.rglob("receipt.json") if canonical.read_json(p).get("kind") == "derived")
H200 = RECEIPTS / "h200-disable-mma-v3-4rounds-20261130T074558Z"
SCREEN = RECEIPTS / "h200-disable-mma-v3-small-screen-20261129T094550Z"


def _rel(path: Path) -> str:
    return str(path.relative_to(RECEIPTS))


@pytest.fixture
def unpacked(committed_roots) -> Path:
    """Every committed root.tar.gz, unpacked once for the session (`conftest.committed_roots`): read only."""
    return committed_roots / committedroots.ROOTS


def _schema(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(canonical.read_json(SCHEMAS / name))


def test_the_committed_records_are_there():
    assert len(CAMPAIGN_RECEIPTS) >= 7 and len(DERIVED_RECEIPTS) >= 2
    versions = {canonical.read_json(p)["schema_version"] for p in CAMPAIGN_RECEIPTS}
    assert versions == {1, 2}                     # both receipt versions, old verdicts and new


def test_verdict_classes_are_the_classifiers():
    assert get_args(VerdictClass) == CLASSES


@pytest.mark.parametrize("path", CAMPAIGN_RECEIPTS, ids=_rel)
def test_a_committed_receipt_dumps_back_byte_for_byte(path: Path):
    text = path.read_text(encoding="utf-8")
    model = ReceiptFile.model_validate_json(text).root
    assert canonical.dumps(model.dump()) == text
    _schema("receipt.schema.json").validate(canonical.read_json(path))


@pytest.mark.parametrize("path", DERIVED_RECEIPTS, ids=_rel)
def test_derived_verdicts_dump_back_byte_for_byte(path: Path):
    verdicts = canonical.read_json(path)["verdicts"]
    assert canonical.dumps(Verdicts.model_validate(verdicts).dump()) == canonical.dumps(verdicts)
    _schema("verdicts.schema.json").validate(verdicts)


def test_verdicts_sealed_before_later_fields_read_with_their_defaults():
    old = ReceiptFile.model_validate(canonical.read_json(RECEIPTS / "h200-aa-event-20261129T084627Z" / "receipt.json"))
    verdicts = old.root.verdicts
    w = next(iter(verdicts.workloads.values()))
    assert verdicts.environment is None and verdicts.harness_drift == ()
    assert w.taints == () and w.clocks == {} and w.ir.reference == "baseline" and not w.rests_on_timing
    assert "environment" not in verdicts.dump() and "taints" not in w.dump()   # never written back


def test_committed_root_records_dump_back_byte_for_byte(unpacked: Path):
    prepares = sorted(unpacked.glob("*/prepare.json"))
    identities = sorted(unpacked.glob("*/cells/*/*/*/run_identity.json"))
    assert len(prepares) >= 18 and len(identities) >= 60
    for path, model, schema in ([(p, Prepare, "prepare.schema.json") for p in prepares]
                                + [(p, RunIdentity, "run_identity.schema.json") for p in identities]):
        text = path.read_text(encoding="utf-8")
        assert canonical.dumps(model.model_validate_json(text).dump()) == text, path
        _schema(schema).validate(canonical.read_json(path))


def test_the_committed_h200_root_reports_as_its_report_md(unpacked: Path, cli):
    done = cli("report", unpacked / H200.name)
    assert done.returncode == 0, done.stderr
    # sealed before the power cap was a clock fact: addmm's X (sw_power_cap on every side) re-derives as R,
    # said above the sealed report, which follows unchanged
    banner, sealed = done.stdout.split("\n\n", 1)
    assert banner.startswith("> **Classes moved since the seal.**") and "> - addmm: X -> R (slower in both orders" in banner
    assert banner.count("\n> - ") == 1
    # lines the report learned after this root was rendered: each names where more is, none changes a word above
    later = ("- IR diff: ", "- shape moved: ")
    assert "\n".join(line for line in sealed.split("\n") if not line.startswith(later)) == (
        H200 / "report.md").read_text(encoding="utf-8")
    changed = [name for name, w in canonical.read_json(H200 / "receipt.json")["verdicts"]["workloads"].items()
               if w["ir"]["changed"] is True]
    assert changed and sum(line.startswith("- IR diff: ") for line in sealed.split("\n")) == len(changed)
    json_done = cli("report", unpacked / H200.name, "--format", "json")
    assert json_done.stdout == canonical.dumps(canonical.read_json(H200 / "receipt.json")["verdicts"])


def test_prepare_writes_a_prepare_record(tmp_path: Path, cli):
    done = cli("prepare", PROJECT_ROOT / "manifests" / "demo-cpu.yaml", "--runs-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip().splitlines()[-1]) / "prepare.json"
    text = path.read_text(encoding="utf-8")
    record = Prepare.model_validate_json(text)
    assert record.mode == "campaign" and canonical.dumps(record.dump()) == text
    assert "mode" in record.dump()                # written, not only defaulted


def test_a_rescore_writes_a_rescore_record(unpacked: Path, tmp_path: Path):
    root = copy_root(unpacked / SCREEN.name, tmp_path)      # the rescore is written beside its root
    _, out, _ = screen.rescore(root, (), (1,))             # sealed under receipt schema 1: read when asked for
    assert out.parent == root.parent
    text = (out / screen.RESCORE_FILE).read_text(encoding="utf-8")
    record = Rescore.model_validate_json(text)
    assert canonical.dumps(record.dump()) == text and record.changes == ()
    assert record.receipt_sha256 == canonical.sha256_file(unpacked / SCREEN.name / "receipt.json")
    _schema("rescore.schema.json").validate(canonical.read_json(out / screen.RESCORE_FILE))


def test_records_refuse_unknown_keys_and_classes():
    verdicts = canonical.read_json(H200 / "receipt.json")["verdicts"]
    name = next(iter(verdicts["workloads"]))
    for bad in ({**verdicts, "extra": 1},
                {**verdicts, "workloads": {name: {**verdicts["workloads"][name], "class": "Z"}}}):
        with pytest.raises(ValidationError):
            Verdicts.model_validate(bad)
        assert list(_schema("verdicts.schema.json").iter_errors(bad))


def test_a_receipt_whose_verdicts_are_not_the_models_does_not_verify(tmp_path: Path, cli):
    root = rb.sealed(tmp_path)
    data = canonical.read_json(root / "receipt.json")
    data["verdicts"]["workloads"]["matmul"]["class"] = "Z"
    data["content_sha256"] = content_digest(data)       # consistent with itself: only the model can refuse it
    rb.edit_sealed(root / "receipt.json", canonical.dumps(data))
    done = cli("verify", root)
    assert done.returncode == 5
    assert "does not match its schema: 2 -> verdicts -> workloads -> matmul -> class" in done.stderr
