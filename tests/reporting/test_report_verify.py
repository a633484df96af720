"""`campaign report` on a sealed root: verified first (exit 5, nothing rendered), then the
sealed verdicts, with classes that moved since the seal in their own labelled section;
an unsealed root is labelled "not sealed"; a released caliber guard always warns."""
from __future__ import annotations

import json
import os
from pathlib import Path

import rootbuilder as rb

from campaign.contract import canonical
from campaign.contract.receiptmodel import content_digest
from campaign.contract.runroot import RunRoot
from campaign.flows.report import NOT_SEALED
from campaign.reporting import report
from campaign.sealing import receipt


def _reseal_verdicts(root: Path, edit) -> dict:
    """The receipt an older classifier would have sealed: other verdicts, its own digest recomputed."""
    rb.rewrite_receipt(root, edit, redigest=True)
    return canonical.read_json(root / "receipt.json")


def test_report_refuses_a_tampered_root_and_renders_nothing(tmp_path: Path, cli):
    root = rb.sealed(tmp_path)
    rows = root / "cells" / "matmul" / "r1" / "candidate" / "rows.json"
    rb.edit_sealed(rows, rows.read_text().replace("0.", "9.", 1))
    for fmt in ("md", "json"):
        done = cli("report", root, "--format", fmt)
        assert done.returncode == 5
        assert done.stdout == ""
        assert "REPORT_REFUSED check=verify:" in done.stderr
        assert "changed: cells/matmul/r1/candidate/rows.json" in done.stderr


def test_report_refuses_a_planted_fifo_without_hanging(tmp_path: Path, cli):
    root = rb.sealed(tmp_path)
    root.chmod(0o755)
    os.mkfifo(root / "pipe")
    done = cli("report", root, timeout=60)
    assert done.returncode == 5 and done.stdout == ""
    assert "refused: pipe (a FIFO (never opened))" in done.stderr


def test_report_renders_the_sealed_verdicts_and_shows_moved_classes_apart(tmp_path: Path, cli):
    root = rb.sealed(tmp_path)
    derived = canonical.read_json(root / "receipt.json")["verdicts"]["workloads"]["matmul"]
    older = "R" if derived["class"] != "R" else "G"
    sealed = _reseal_verdicts(root, rb.turn_class("matmul", older, "older rule"))
    assert cli("verify", root).returncode == 0

    md = cli("report", root)
    assert md.returncode == 0, md.stderr
    assert md.stdout.startswith("> **Classes moved since the seal.** Re-derived now under today's classifier: "
                                "not the record.")
    assert f"> - matmul: {older} -> {derived['class']} ({derived['reason']})" in md.stdout
    assert md.stdout.endswith(report.markdown(sealed["verdicts"]))
    assert f"| matmul | {older} |" in md.stdout and f"| matmul | {derived['class']} |" not in md.stdout
    assert "warning: classes moved since the seal" in md.stderr

    js = cli("report", root, "--format", "json")
    assert js.returncode == 0 and json.loads(js.stdout) == sealed["verdicts"]


def test_released_caliber_guard_always_warns(tmp_path: Path, cli):
    root = rb.sealed(tmp_path)
    done = cli("report", root, "--allow-caliber-mismatch", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "warning: --allow-caliber-mismatch: the caliber guard is released" in done.stderr
    unsealed = rb.build(tmp_path / "unsealed", [rb.pointwise()])
    again = cli("report", unsealed, "--allow-caliber-mismatch")
    assert again.returncode == 0 and "warning: --allow-caliber-mismatch" in again.stderr
    assert again.stdout.startswith(NOT_SEALED)


def test_a_seal_without_verdicts_is_reported_as_derived_now(tmp_path: Path, cli):
    root = rb.build(tmp_path, [rb.pointwise()])
    # what an older seal recorded where no classifier was installed
    receipt.seal(RunRoot(root), receipt.Judgement(None, "no classifier installed: verdicts not derived", ()))
    done = cli("report", root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("> **Derived now, not sealed.** The seal recorded no verdicts: no classifier")
    assert "note: the receipt holds no verdicts" in done.stderr


def test_a_version_1_receipt_is_reported_with_its_note(tmp_path: Path, cli):
    root = rb.sealed(tmp_path)
    data = canonical.read_json(root / "receipt.json")
    data.update(schema_version=1)
    for key in ("folders", "content_sha256"):
        data.pop(key)
    for entry in data["files"].values():
        entry.pop("mode")
    root.chmod(0o755)
    (root / "receipt.json").chmod(0o644)
    (root / "receipt.json").write_text(canonical.dumps(data))
    refused = cli("report", root, "--format", "json")     # as verify: an older receipt only when asked for
    assert refused.returncode == 5 and refused.stdout == ""
    assert "REPORT_REFUSED check=verify: " in refused.stderr and "`--allow-schema 1` verifies it" in refused.stderr
    done = cli("report", root, "--format", "json", "--allow-schema", "1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == data["verdicts"]
    assert "note: receipt.json is schema_version 1" in done.stderr


def test_the_re_derivation_judges_the_evidence_the_seal_judged(tmp_path: Path, cli):
    from campaign.judging.classify import classify_root
    root = rb.sealed(tmp_path)
    drift = ("campaign/judging/stats.py",)                # a harness file that changed while the campaign ran
    with_drift = classify_root(root, harness_drift=drift)
    assert with_drift["workloads"]["matmul"]["class"] != classify_root(root)["workloads"]["matmul"]["class"]

    data = canonical.read_json(root / "receipt.json")
    data["harness_changed_since_prepare"] = list(drift)
    data["verdicts"] = with_drift
    data["content_sha256"] = content_digest(data)
    rb.edit_sealed(root / "receipt.json", canonical.dumps(data))
    done = cli("report", root)
    assert done.returncode == 0, done.stderr
    assert "Classes moved since the seal" not in done.stdout and "classes moved" not in done.stderr
    assert done.stdout.startswith("# Campaign ")
    assert f"| matmul | {with_drift['workloads']['matmul']['class']} |" in done.stdout
