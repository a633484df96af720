"""`campaign attest ROOT`: an in-toto v1 Statement of a sealed root that verifies, read back
with the in-toto library; an unsealed root is bad input (exit 2), a tampered one is refused
(exit 5), and nothing is ever written inside the root."""
from __future__ import annotations

import os
from pathlib import Path

import rootbuilder as rb
from google.protobuf import json_format
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import STATEMENT_TYPE_URI, Statement

from campaign.contract import canonical
from campaign.sealing import attest


def _parsed(text: str) -> Statement:
    made = Statement.copy_from_pb(json_format.Parse(text, statement_pb2.Statement()))
    made.validate()
    return made


def test_the_statement_names_every_sealed_file_and_what_the_receipt_binds(tmp_path: Path, cli):
    root = rb.sealed(tmp_path)
    sealed = canonical.read_json(root / "receipt.json")
    done = cli("attest", root)
    assert done.returncode == 0, done.stderr
    made = _parsed(done.stdout)
    assert made.pb.type == STATEMENT_TYPE_URI and made.pb.predicate_type == attest.PREDICATE_TYPE
    subjects = {s.name: dict(s.digest) for s in made.pb.subject}
    # every sealed file, and receipt.json itself as it is on disk: a signed statement binds the receipt
    assert subjects == {**{rel: {"sha256": entry["sha256"]} for rel, entry in sealed["files"].items()},
                        "receipt.json": {"sha256": canonical.sha256_file(root / "receipt.json")}}

    data = json_format.MessageToDict(attest.read(done.stdout).pb)["predicate"]
    assert data["manifest"]["sha256"] == sealed["manifest_sha256"]
    assert data["receipt"]["sha256"] == canonical.sha256_file(root / "receipt.json")
    assert data["receipt"]["content_sha256"] == sealed["content_sha256"]
    assert data["harness"]["digest"] == sealed["harness_digest"] and data["harness"]["files"] == sealed["harness"]
    assert data["sources"] == {"triton": {"version": "3.6.0"}}
    assert data["switch"] == "DISABLE_MMA_V3" and data["campaign"] == sealed["campaign"]
    # protobuf keeps numbers as doubles; the written statement gives integers back as integers
    written = canonical.read_json(_write(cli, root, tmp_path / "statement.json"))["predicate"]
    assert written["verdict_counts"] == sealed["verdicts"]["counts"]
    assert all(type(n) is int for n in written["verdict_counts"].values()), written["verdict_counts"]
    assert written["run_identity"] == sealed["run_identity"]
    assert (tmp_path / "statement.json").read_text() == done.stdout


def _write(cli, root: Path, out: Path) -> Path:
    done = cli("attest", root, "--out", out)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "statement of " in done.stderr
    return out


def test_a_root_that_does_not_verify_is_refused(tmp_path: Path, cli):
    root = rb.sealed(tmp_path)
    rows = root / "cells" / "matmul" / "r1" / "candidate" / "rows.json"
    rb.edit_sealed(rows, rows.read_text().replace("0.", "9.", 1))
    done = cli("attest", root)
    assert done.returncode == 5
    assert done.stdout == ""
    assert "ATTEST_REFUSED check=verify:" in done.stderr
    assert "changed: cells/matmul/r1/candidate/rows.json" in done.stderr


def test_an_unsealed_root_or_a_folder_that_is_no_root_is_bad_input(tmp_path: Path, cli):
    unsealed = rb.build(tmp_path, [rb.pointwise()], name="unsealed")
    done = cli("attest", unsealed)
    assert done.returncode == 2
    assert f"ATTEST_REFUSED check=sealed: {unsealed}: no receipt.json: not a sealed root" in done.stderr
    missing = cli("attest", tmp_path / "nowhere")
    assert missing.returncode == 2 and "check=sealed" in missing.stderr and "no such directory" in missing.stderr


def test_nothing_is_written_inside_the_root_or_over_a_file(tmp_path: Path, cli):
    root = rb.sealed(tmp_path)
    before = sorted(os.listdir(root))
    for inside in (root / "statement.json", root / "cells" / "x.json"):
        done = cli("attest", root, "--out", inside)
        assert done.returncode == 2
        assert "ATTEST_REFUSED check=out:" in done.stderr and "nothing is written into a sealed root" in done.stderr
    assert sorted(os.listdir(root)) == before
    existing = tmp_path / "old.json"
    existing.write_text("keep me\n")
    done = cli("attest", root, "--out", existing)
    assert done.returncode == 2 and "exists: a statement never overwrites a file" in done.stderr
    assert existing.read_text() == "keep me\n"
