"""Evidence digested when it is made (`campaign.contract.journal`): each cell's files are journalled
in digests.jsonl as the cell ends; the seal and verify compare the finished cells' folders with it.

A real run on the CPU backend, then what an attacker would do: make the sealed root writable,
edit a cell's file, delete receipt.json and run `campaign run ROOT` to reseal over the edit (refused,
the file named), or rewrite receipt.json to match the edit with its own digest recomputed (verify
names the file through the journal).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from runroots import copy_root, run

from campaign.contract import canonical, journal, journalcheck, status
from campaign.contract.receiptmodel import content_digest
from campaign.contract.runroot import RunRoot

ROWS = "cells/add/r1/candidate/rows.json"


def _writable(root: Path) -> None:
    for folder, _, names in os.walk(root):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(Path(folder) / name, 0o644)


def _row(task_id: str, rc_name: str = "ok") -> status.StatusRow:
    workload, round_, cell = task_id.split("/")
    return status.StatusRow(task_id=task_id, round=int(round_[1:]), workload=workload, cell=cell,
                            rc=None if rc_name == "skipped" else 0, rc_name=rc_name)


def _edit(path: Path) -> None:
    data = canonical.read_json(path)
    data["rows"] = data["rows"][:1]        # a row dropped from the evidence
    path.write_text(canonical.dumps(data), encoding="utf-8")


@pytest.fixture
def sealed(sealed_add: Path, tmp_path: Path) -> Path:
    """A copy of the session's sealed demo run (`conftest.sealed_add`), modes kept, beside its own
    scratch: each test tampers with its own."""
    return copy_root(sealed_add, tmp_path)


def test_every_finished_cell_is_journalled_with_its_files_as_it_ended(sealed: Path):
    root = RunRoot(sealed)
    entries, problems = journal.read(root)
    assert problems == [] and sorted(entries) == ["add/r1/baseline", "add/r1/candidate"]
    for task_id, files in entries.items():
        assert files == journal.folder_digests(root, task_id)
        assert {f"cells/{task_id}/result.json", f"cells/{task_id}/rows.json"} <= set(files)
    assert journal.JOURNAL_FILE in canonical.read_json(sealed / "receipt.json")["files"]


def test_a_reseal_after_a_deleted_receipt_refuses_evidence_edited_after_its_cell_ended(sealed: Path, cli):
    _writable(sealed)
    _edit(sealed / ROWS)
    (sealed / "receipt.json").unlink()
    done = run(sealed)
    assert done.returncode == 5, done.stdout + done.stderr
    assert f"SEAL_REFUSED check=journal: {sealed}: the journal does not hold this root (1): journal: {ROWS} " \
           "(changed since its cell ended: sha256 " in done.stderr
    assert not (sealed / "receipt.json").exists()
    assert cli("verify", sealed).returncode == 2        # nothing was sealed: not a sealed root


def test_verify_names_evidence_under_a_receipt_rewritten_to_match_it(sealed: Path, cli):
    _writable(sealed)
    _edit(sealed / ROWS)
    data = canonical.read_json(sealed / "receipt.json")
    data["files"][ROWS].update(sha256=canonical.sha256_file(sealed / ROWS), size=(sealed / ROWS).stat().st_size)
    data["content_sha256"] = content_digest(data)        # consistent with itself: a checksum, not a signature
    (sealed / "receipt.json").write_text(canonical.dumps(data), encoding="utf-8")
    for rel in data["files"]:
        os.chmod(sealed / rel, 0o444)
    for rel in data["folders"]:
        os.chmod(sealed / rel, 0o555)
    done = cli("verify", sealed)
    assert done.returncode == 5, done.stdout + done.stderr
    failed = [line for line in done.stderr.splitlines() if line.startswith("VERIFY_FAILED")]
    assert len(failed) == 1 and failed[0].startswith(f"VERIFY_FAILED journal: {ROWS} (changed since its cell ended: ")
    assert "1 difference(s)" in done.stderr


def test_the_journal_names_files_changed_removed_and_added_and_a_broken_line(tmp_path: Path):
    root = RunRoot(tmp_path)
    folder = root.cell("w/r1/baseline")
    folder.mkdir(parents=True)
    (folder / "a.json").write_text("a")
    (folder / "b.json").write_text("b")
    (tmp_path / "prepare.json").write_text("{}")        # the chain's anchor
    journal.record(root, "w/r1/baseline", _row("w/r1/baseline"), tmp_path / "status.tsv")
    journal.record(root, "w/r2/baseline", _row("w/r2/baseline", "skipped"), tmp_path / "status.tsv")
    assert journal.read(root)[0]["w/r2/baseline"] == {}    # skipped: no folder, its row journalled all the same
    assert journalcheck.differences(root, {"w/r1/baseline"}) == []
    (folder / "a.json").write_text("A")
    (folder / "b.json").unlink()
    (folder / "c.json").write_text("c")
    assert [(rel, what.split(":")[0]) for rel, what in journalcheck.differences(root, {"w/r1/baseline"})] == [
        ("cells/w/r1/baseline/a.json", "changed since its cell ended"),
        ("cells/w/r1/baseline/b.json", "removed since its cell ended"),
        ("cells/w/r1/baseline/c.json", "added since its cell ended")]
    assert journalcheck.differences(root, {"w/r9/baseline"})[:1] == []     # a task never journalled
    path = tmp_path / journal.JOURNAL_FILE
    path.write_text(path.read_text() + '{"task": "w/r1/can')            # torn by a killed runner: not a finding
    assert journal.read(root)[1] == []
    path.write_text('{"task": 1}\n' + json.dumps({"task": "x", "files": {}}) + "\n")
    assert journal.read(root) == ({"x": {}}, ["line 1: not a journal entry"])


def test_a_digest_already_taken_is_reused_and_every_other_file_read(tmp_path: Path):
    root = RunRoot(tmp_path)
    folder = root.cell("w/r1/baseline")
    folder.mkdir(parents=True)
    (folder / "a.json").write_text("a")
    (folder / "b.json").write_text("b")
    a, b = "cells/w/r1/baseline/a.json", "cells/w/r1/baseline/b.json"
    read = journal.folder_digests(root, "w/r1/baseline")
    taken = {a: ("f" * 64, 1)}          # what a caller read a moment before (here not what is on disk)
    assert journal.folder_digests(root, "w/r1/baseline", taken) == {a: taken[a], b: read[b]}


def test_verify_reads_each_cell_file_once(sealed: Path, monkeypatch):
    # verify digests every file against the receipt, then hands those digests to the journal's check:
    # a sealed root's cell files are never read a second time (they were, once per check)
    from campaign.sealing import verification

    journal_reads = []
    digest = journal._sha256
    monkeypatch.setattr(journal, "_sha256", lambda path: journal_reads.append(path) or digest(path))
    assert verification.check(RunRoot(sealed)).differences == ()
    assert journal_reads == []
    assert journalcheck.differences(RunRoot(sealed), {"add/r1/baseline"}) == [] and journal_reads, "the spy sees the journal's reads"
