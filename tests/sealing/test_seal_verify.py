"""Sealing and verifying: a run seals its root read-only; verify re-hashes and names every
difference (exit 5), a clean root exits 0, an unsealed one is refused (exit 1)."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
import rootbuilder as rb
from runroots import copy_root, demo, prepare, run

from campaign.contract import canonical
from campaign.contract.errors import InputError, Refused
from campaign.contract.receiptmodel import ReceiptFile
from campaign.contract.runroot import RunRoot
from campaign.flows import session
from campaign.sealing import receipt


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_run_seals_and_verify_names_every_difference(sealed_add: Path, tmp_path: Path, cli):
    root = sealed_add                   # the session's sealed demo run (`conftest.sealed_add`): read here
    sealed = canonical.read_json(root / "receipt.json")
    assert sealed["manifest_sha256"] == canonical.sha256_file(root / "manifest.yaml")
    assert sealed["prepare_sha256"] == canonical.sha256_file(root / "prepare.json")
    assert sealed["harness"] == canonical.read_json(root / "prepare.json")["harness"]
    assert "receipt.json" not in sealed["files"] and "run.lock" not in sealed["files"]
    result = "cells/add/r1/baseline/result.json"
    assert sealed["files"][result] == {"sha256": canonical.sha256_file(root / result),
                                       "size": (root / result).stat().st_size, "mode": "0444"}
    assert sealed["folders"]["cells/add/r1/baseline"] == "0555" and sealed["schema_version"] == 2
    assert {"status.tsv", "matrix.json", "telemetry.err", "cells/add/r1/candidate/task.json"} <= set(sealed["files"])
    assert sealed["run_identity"]["task_id"] == "add/r1/baseline"
    assert sealed["distinct_run_identities"] == []  # baseline and candidate share one caliber
    assert (sealed["verdicts"] is None) == (sealed["verdicts_note"] is not None)
    assert _mode(root) == 0o555 and _mode(root / "cells" / "add") == 0o555
    assert _mode(root / result) == 0o444 and _mode(root / "receipt.json") == 0o444

    clean = cli("verify", root)
    assert clean.returncode == 0, clean.stderr
    assert f"{len(sealed['files'])} files verify" in clean.stdout

    root = copy_root(root, tmp_path)    # written below: a copy, modes kept
    assert cli("verify", root).returncode == 0
    again = run(root)
    assert again.returncode == 1 and "RUN_REFUSED check=sealed:" in again.stderr

    target = root / result
    target.chmod(0o644)
    data = bytearray(target.read_bytes())
    data[10] ^= 0x01  # one byte
    target.write_bytes(bytes(data))
    target.chmod(0o444)
    changed = cli("verify", root)
    assert changed.returncode == 5
    assert f"VERIFY_FAILED changed: {result} (sha256 " in changed.stderr
    assert "1 difference(s)" in changed.stderr

    (root / "cells" / "add" / "r1" / "baseline").chmod(0o755)
    (root / "cells" / "add" / "r1" / "baseline" / "run.log").unlink()
    (root / "cells" / "add" / "r1" / "baseline" / "extra.txt").write_text("added after seal\n")
    worse = cli("verify", root)
    assert worse.returncode == 5
    assert "VERIFY_FAILED missing: cells/add/r1/baseline/run.log" in worse.stderr
    assert "VERIFY_FAILED extra: cells/add/r1/baseline/extra.txt (not in the receipt)" in worse.stderr
    assert "VERIFY_FAILED mode: cells/add/r1/baseline/ (0755, receipt 0555)" in worse.stderr
    assert "4 difference(s)" in worse.stderr


def test_verify_refuses_an_unsealed_root(tmp_path: Path, cli):
    root = prepare(tmp_path, [demo("add")])
    done = cli("verify", root)
    assert done.returncode == 2
    assert f"VERIFY_REFUSED check=sealed: {root}: no receipt.json: not a sealed root" in done.stderr


def test_seal_writes_the_verdicts_it_is_handed_null_with_its_note_never_invented(tmp_path: Path):
    root = prepare(tmp_path, [demo("add")])
    released = []
    handed = receipt.Judgement(None, "no verdicts: the test hands none", ("plugins/timing.py",))
    sealed = receipt.seal(RunRoot(root), handed, release=lambda: released.append(True),
                          now=datetime(2026, 11, 29, 8, 0, tzinfo=timezone.utc))
    assert released == [True]
    assert sealed["verdicts"] is None
    assert sealed["verdicts_note"] == "no verdicts: the test hands none"
    assert sealed["harness_changed_since_prepare"] == ["plugins/timing.py"]   # the drift the verdicts were judged with
    assert sealed["sealed_utc"] == "2026-11-29T08:00:00Z"
    assert sealed["status_sha256"] is None and sealed["run_identity"] is None
    assert sorted(sealed["files"]) == ["digests.jsonl", "manifest.yaml", "matrix.json", "prepare.json"]
    assert sealed["folders"] == {}
    assert canonical.read_json(root / "receipt.json") == sealed
    assert receipt.verify_root(RunRoot(root)) == []
    with pytest.raises(Refused, match="already sealed"):
        receipt.seal(RunRoot(root), handed)
    root.chmod(0o755)
    (root / "run.lock").write_text("{}")  # left out at seal, but never hidden from verify
    assert [d.line() for d in receipt.verify_root(RunRoot(root))] == [
        "extra: run.lock (not in the receipt; run.lock left beside receipt.json: the seal was interrupted; "
        "`campaign run ROOT` completes it)"]


def test_a_classifier_that_fails_is_sealed_as_null_verdicts_naming_the_failure(tmp_path: Path, monkeypatch):
    """The session judges, the receipt records: a root the classifier cannot read is still sealed,
    its verdicts null and the failure named."""
    root = prepare(tmp_path, [demo("add")])
    manifest = (root / "manifest.yaml").read_text(encoding="utf-8")
    (root / "manifest.yaml").write_text("campaign: [\n", encoding="utf-8")   # the copy the classifier reads
    with pytest.raises(Refused, match=r"journal: manifest.yaml \(changed since prepare: sha256 "):
        session.seal_root(root)      # an edit of the manifest's copy is the journal's to name, before any judging
    (root / "manifest.yaml").write_text(manifest, encoding="utf-8")

    def fails(*args, **kwargs):
        raise InputError("the classifier cannot read this root")
    monkeypatch.setattr(session, "classify_root", fails)
    sealed = session.seal_root(root)
    assert sealed["verdicts"] is None
    assert sealed["verdicts_note"].startswith("campaign.judging.classify.classify_root failed: InputError: ")
    assert receipt.verify_root(RunRoot(root)) == []


# -- strict verify: regular files only, modes, folders, the receipt's own integrity ----------------

def _sealed_root(tmp_path: Path) -> Path:
    import rootbuilder as rb
    root = rb.build(tmp_path, [rb.pointwise()])
    session.seal_root(root)
    root.chmod(0o755)            # the root's own mode is not recorded: tampering below is what is seen
    return root


def _outside_copy(root: Path, rel: str) -> Path:
    copy = root.parent / "outside-copy"
    copy.write_bytes((root / rel).read_bytes())
    return copy


PLANTED = {
    "symlink to identical content": (lambda root: (root / "manifest.yaml").unlink() or
                                     (root / "manifest.yaml").symlink_to(root.parent / "outside-copy"),
                                     "manifest.yaml", "symbolic link to"),
    "FIFO": (lambda root: os.mkfifo(root / "pipe"), "pipe", "a FIFO (never opened)"),
    "symlink to a device": (lambda root: (root / "zero").symlink_to("/dev/zero"), "zero",
                            "symbolic link to /dev/zero (never followed)"),
    "dangling symlink": (lambda root: (root / "dangling").symlink_to(root / "nowhere"), "dangling", "(dangling)"),
    "symlink loop": (lambda root: (root / "loop").symlink_to(root / "loop"), "loop", "(a loop)"),
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_verify_refuses_links_and_fifos_by_name_never_following_them(tmp_path: Path, cli, kind):
    root = _sealed_root(tmp_path)
    _outside_copy(root, "manifest.yaml")
    plant, rel, what = PLANTED[kind]
    plant(root)
    done = cli("verify", root, timeout=60)           # a FIFO or /dev/zero read would never return
    assert done.returncode == 5, done.stdout + done.stderr
    assert f"VERIFY_FAILED refused: {rel} (" in done.stderr and what in done.stderr
    assert "Traceback" not in done.stderr


def test_verify_refuses_a_device_node_by_name(tmp_path: Path, cli):
    root = _sealed_root(tmp_path)
    try:
        os.mknod(root / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD; the symlink-to-/dev/zero case runs everywhere")
    done = cli("verify", root, timeout=60)
    assert done.returncode == 5
    assert "VERIFY_FAILED refused: null (a device (never opened))" in done.stderr


def test_seal_refuses_a_root_holding_a_link_and_writes_nothing(tmp_path: Path):
    import rootbuilder as rb
    root = rb.build(tmp_path, [rb.pointwise()])
    (root / "status-link.tsv").symlink_to(root / "status.tsv")
    with pytest.raises(Refused) as refused:
        session.seal_root(root)
    assert refused.value.check == "files" and "status-link.tsv: symbolic link to" in refused.value.detail
    assert not (root / "receipt.json").exists() and _mode(root) == 0o755


def test_verify_reports_folders_added_or_removed_and_modes_changed(tmp_path: Path, cli):
    root = _sealed_root(tmp_path)
    (root / "added").mkdir()
    (root / "status.tsv").chmod(0o644)               # content unchanged: only the mode says it
    cell = root / "cells" / "add" / "r1" / "baseline"
    ir = cell / "ir"
    cell.chmod(0o755)
    ir.chmod(0o755)
    shutil.rmtree(ir)
    done = cli("verify", root)
    assert done.returncode == 5
    assert "VERIFY_FAILED extra: added/ (folder not in the receipt)" in done.stderr
    assert "VERIFY_FAILED mode: status.tsv (0644, receipt 0444)" in done.stderr
    assert "VERIFY_FAILED mode: cells/add/r1/baseline/ (0755, receipt 0555)" in done.stderr
    assert "VERIFY_FAILED missing: cells/add/r1/baseline/ir/ (folder)" in done.stderr


def test_verify_catches_an_edited_verdict_in_the_receipt(tmp_path: Path, cli):
    root = _sealed_root(tmp_path)
    rb.rewrite_receipt(root, rb.turn_class("add", "G"))
    done = cli("verify", root)
    assert done.returncode == 5
    assert "VERIFY_FAILED receipt: receipt.json (content_sha256 " in done.stderr
    assert "edited after the seal" in done.stderr


def test_verify_catches_an_entry_dropped_together_with_its_file(tmp_path: Path, cli):
    root = _sealed_root(tmp_path)
    gone = "cells/add/r1/candidate/rows.json"
    rb.rewrite_receipt(root, lambda data: data["files"].pop(gone))
    (root / gone).parent.chmod(0o755)
    (root / gone).unlink()
    (root / gone).parent.chmod(0o555)
    done = cli("verify", root)
    assert done.returncode == 5 and "edited after the seal" in done.stderr


def test_verify_checks_the_receipt_against_its_schema(tmp_path: Path, cli):
    root = _sealed_root(tmp_path)
    rb.rewrite_receipt(root, lambda data: data["files"]["status.tsv"].update({"size": -1}), redigest=True)
    done = cli("verify", root)
    assert done.returncode == 5
    assert "VERIFY_FAILED receipt: receipt.json (does not match its schema: 2 -> files -> status.tsv -> size" \
        in done.stderr


def test_a_receipt_that_is_a_link_is_refused(tmp_path: Path, cli):
    root = _sealed_root(tmp_path)
    (root / "receipt.json").rename(root.parent / "receipt-outside.json")
    (root / "receipt.json").symlink_to(root.parent / "receipt-outside.json")
    done = cli("verify", root)
    assert done.returncode == 5 and "VERIFY_FAILED refused: receipt.json (symbolic link to" in done.stderr


def test_a_version_1_receipt_is_refused_unless_asked_then_verifies_its_digests_and_names_what_it_cannot_check(tmp_path: Path, cli):
    root = _sealed_root(tmp_path)

    rb.rewrite_receipt(root, rb.as_version_1)
    (root / "status.tsv").chmod(0o644)
    refused = cli("verify", root)
    assert refused.returncode == 5 and refused.stdout == ""
    assert refused.stderr == ("VERIFY_FAILED receipt: receipt.json (schema_version 1 is older than 2: it records no "
                              "file and folder modes (none recorded), empty folders added or removed (no folder list "
                              "recorded), edits of the receipt itself (no content_sha256 recorded); a receipt downgraded "
                              "to it needs no digest of its own; `--allow-schema 1` verifies it with the checks it "
                              "supports)\n")
    done = cli("verify", root, "--allow-schema", "1")
    assert done.returncode == 0, done.stderr
    assert "note: receipt.json is schema_version 1" in done.stdout and "file and folder modes" in done.stdout
    assert "warning: status.tsv is writable again" in done.stderr
    (root / "status.tsv").write_text("edited\n")
    edited = cli("verify", root, "--allow-schema", "1")
    assert edited.returncode == 5 and "VERIFY_FAILED changed: status.tsv" in edited.stderr


def _receipt_validator():
    import jsonschema
    from conftest import PROJECT_ROOT
    return jsonschema.Draft202012Validator(canonical.read_json(PROJECT_ROOT / "schemas" / "receipt.schema.json"))


def test_the_receipt_schema_accepts_what_the_seal_writes(tmp_path: Path):
    validator = _receipt_validator()
    fresh = canonical.read_json(_sealed_root(tmp_path) / "receipt.json")
    validator.validate(fresh)
    ReceiptFile.model_validate(fresh)
    fresh["unknown"] = 1
    assert list(validator.iter_errors(fresh))


@pytest.mark.slow
def test_the_receipt_schema_accepts_the_committed_receipts():
    # 28 MB of receipts through jsonschema's pure Python (8 CPU-s idle): the fast suite checks each of these
    # files against the same schema and model in tests/contract/test_records.py
    # (test_a_committed_receipt_dumps_back_byte_for_byte, every receipts/**/receipt.json not derived)
    from conftest import PROJECT_ROOT
    validator = _receipt_validator()
    committed = sorted((PROJECT_ROOT / "receipts").glob("*/receipt.json"))
    assert committed
    for data in [canonical.read_json(path) for path in committed]:
        validator.validate(data)
        ReceiptFile.model_validate(data)


READ_SWAPPED = """
import os, sys
from pathlib import Path
from campaign.sealing import rootfiles
folder = Path(sys.argv[1])
os.mkfifo(folder / "fifo")
(folder / "link").symlink_to(folder / "target")
(folder / "target").write_text("content")
for name in ("fifo", "link"):
    try:
        rootfiles.sha256_regular(folder / name)
    except rootfiles.NotRegular as exc:
        print(name, exc.strerror)
"""


def test_reading_a_file_swapped_for_a_fifo_or_a_link_is_refused_unopened(tmp_path: Path):
    # what a swap between the listing and the read would hand the hasher: refused, never followed or waited on
    done = subprocess.run([sys.executable, "-c", READ_SWAPPED, str(tmp_path)], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["fifo a FIFO (never opened)",
                                        f"link symbolic link to {tmp_path / 'target'} (never followed)"]
