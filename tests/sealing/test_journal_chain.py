"""A journal that cannot be thinned (`campaign.contract.journal`, `campaign.contract.journalcheck`).

Every line of digests.jsonl carries the digest of the line before, the first anchored to prepare.json,
which says the root is journalled; each status row is journalled before it is written. Each way of
thinning the journal of a sealed root -- a line deleted, lines reordered, a line deleted with its
status row, the file deleted -- with receipt.json rewritten to match (its own digest recomputed, as
a forger would) is named by verify; report, attest and compare refuse it through the same gate
(exit 5, the same message), as they refuse a receipt downgraded to schema 1. `campaign run` over a
thinned root with its receipt deleted refuses before it runs anything.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import rootbuilder as rb
from runroots import copy_root, run

from campaign.cli import main
from campaign.contract import canonical, journal, journalcheck, status
from campaign.contract.receiptmodel import content_digest
from campaign.contract.runroot import RunRoot
from campaign.flows import session
from campaign.sealing import verification

JOURNAL = journal.JOURNAL_FILE


def _writable(root: Path) -> None:
    for folder, _, names in os.walk(root):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(Path(folder) / name, 0o644)


def _sealed_modes(root: Path) -> None:
    data = canonical.read_json(root / "receipt.json")
    for rel in data["files"]:
        os.chmod(root / rel, 0o444)
    for rel in data["folders"]:
        os.chmod(root / rel, 0o555)
    os.chmod(root / "receipt.json", 0o444)


def _lines(root: Path) -> list[bytes]:
    return (root / JOURNAL).read_bytes().splitlines(keepends=True)


def _status_lines(root: Path) -> list[str]:
    return (root / "status.tsv").read_text(encoding="utf-8").splitlines(keepends=True)


def _rewrite_receipt(root: Path) -> None:
    """receipt.json made to agree with the root as it now is: every file's digest, its own recomputed."""
    data = canonical.read_json(root / "receipt.json")
    files = {}
    for rel, entry in data["files"].items():
        if (root / rel).is_file():
            files[rel] = {**entry, "sha256": canonical.sha256_file(root / rel), "size": (root / rel).stat().st_size}
    data["files"] = files
    data["status_sha256"] = canonical.sha256_file(root / "status.tsv")
    data["content_sha256"] = content_digest(data)
    (root / "receipt.json").unlink()
    (root / "receipt.json").write_text(canonical.dumps(data), encoding="utf-8")


def _drop_line(k: int, with_row: bool = False):
    def forge(root: Path) -> None:
        lines = _lines(root)
        task = (canonical.parse_json(lines[k]) or {}).get("task")
        (root / JOURNAL).write_bytes(b"".join(lines[:k] + lines[k + 1:]))
        if with_row:      # the task's status row removed with its line, so the rows agree with the journal
            rows = [line for line in _status_lines(root) if not line.startswith(f"{task}\t")]
            (root / "status.tsv").write_text("".join(rows), encoding="utf-8")
    return forge


def _swap(i: int, j: int):
    def forge(root: Path) -> None:
        lines = _lines(root)
        lines[i], lines[j] = lines[j], lines[i]
        (root / JOURNAL).write_bytes(b"".join(lines))
    return forge


def _edit_line(k: int):
    """Evidence of line k's cell edited and line k rewritten to match it: a rewrite, not a thinning."""
    def forge(root: Path) -> None:
        lines = _lines(root)
        data = canonical.parse_json(lines[k])
        rel = next(rel for rel in sorted(data["files"]) if rel.endswith("/rows.json"))
        (root / rel).write_text((root / rel).read_text(encoding="utf-8").replace('"ok"', '"failed"'), encoding="utf-8")
        data["files"][rel] = list(journal._sha256(root / rel))
        lines[k] = (json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n").encode()
        (root / JOURNAL).write_bytes(b"".join(lines))
    return forge


def _delete_journal(root: Path) -> None:
    (root / JOURNAL).unlink()


@pytest.fixture(scope="module")
def chained(tmp_path_factory) -> Path:
    """A sealed built root (one workload, three cells, two rounds) whose journal is chained as a run writes it."""
    root = rb.build(tmp_path_factory.mktemp("chained"), [rb.pointwise()], rb.Options(journal=True, rounds=2))
    session.seal_root(root)
    return root


def _thinnings(lines: int) -> dict:
    forgeries = {f"line {k + 1} deleted": _drop_line(k) for k in range(lines)}
    forgeries.update({f"line {k + 1} deleted with its status row": _drop_line(k, True) for k in range(1, lines)})
    forgeries.update({f"lines {k + 1} and {k + 2} swapped": _swap(k, k + 1) for k in range(lines - 1)})
    forgeries["digests.jsonl deleted"] = _delete_journal
    return forgeries


def test_no_thinning_of_the_journal_verifies_under_a_receipt_rewritten_to_match(chained: Path, tmp_path: Path):
    assert verification.check(RunRoot(chained)).differences == ()
    forgeries = _thinnings(len(_lines(chained)))
    verified = []
    for name, forge in forgeries.items():
        root = copy_root(chained, tmp_path / name.replace(" ", "-"))
        _writable(root)
        forge(root)
        _rewrite_receipt(root)
        _sealed_modes(root)
        found = verification.check(RunRoot(root)).differences
        assert all(d.kind == "journal" for d in found), (name, found)   # the receipt agrees: only the journal can tell
        if not found:
            verified.append(name)
    # 6 cell lines (3 cells, 2 rounds) and prepare's: 7 deletions, 6 with their row, 6 swaps, the file:
    # 20 forgeries, none verifies
    assert len(forgeries) == 20 and verified == [], verified


def test_a_line_rewritten_over_edited_evidence_breaks_the_chain_at_the_next(chained: Path, tmp_path: Path):
    last = len(_lines(chained)) - 1
    verified = []
    for k in range(1, last + 1):
        root = copy_root(chained, tmp_path / f"edited-{k}")
        _writable(root)
        _edit_line(k)(root)
        _rewrite_receipt(root)
        _sealed_modes(root)
        found = verification.check(RunRoot(root)).differences
        if not found:
            verified.append(k)
        else:
            assert [d.detail.split(" (")[0] for d in found] == [f"line {k + 2}: the chain breaks here"], found
    # the last line has no next one: a checksum chain cannot hold its own head against a whole rewrite (the
    # signature made at the seal, `campaign run --sign`, does)
    assert verified == [last]


def test_report_attest_and_compare_refuse_what_verify_refuses_through_one_gate(chained: Path, tmp_path: Path, cli,
                                                                              capsys):
    thinned = copy_root(chained, tmp_path / "thinned")
    _writable(thinned)
    _drop_line(3)(thinned)
    _rewrite_receipt(thinned)
    _sealed_modes(thinned)
    downgraded = copy_root(chained, tmp_path / "downgraded")
    rb.rewrite_receipt(downgraded, rb.as_version_1)
    assert cli("verify", thinned).returncode == 5
    for root, words in ((thinned, "journal: digests.jsonl (line 4: the chain breaks here"),
                        (downgraded, "receipt: receipt.json (schema_version 1 is older than 2")):
        assert main(["verify", str(root)]) == 5 and words in capsys.readouterr().err
        for command, prefix in (("report", "REPORT_REFUSED"), ("attest", "ATTEST_REFUSED"),
                                ("compare", "COMPARE_REFUSED")):
            assert main([command, str(root)]) == 5, command      # in-process: the CLI's own path, no interpreter start
            out, err = capsys.readouterr()
            assert err.startswith(f"{prefix} check=verify: {root} does not verify ("), err
            assert words in err and out == ""
    # asked for, as verify asks for it: the older receipt is read with the checks it supports
    for command in ("verify", "report", "attest"):
        assert main([command, str(downgraded), "--allow-schema", "1"]) == 0, capsys.readouterr().err


def test_repair_drops_only_a_torn_or_rowless_last_line(tmp_path: Path):
    root = rb.build(tmp_path, [rb.pointwise()], rb.Options(journal=True, rounds=1))
    rows, _ = status.read(root / "status.tsv")
    whole = (root / JOURNAL).read_bytes()
    assert journalcheck.repair(RunRoot(root), rows) == [] and (root / JOURNAL).read_bytes() == whole
    # a full disk tore the next line: dropped, nothing else
    (root / JOURNAL).write_bytes(whole + b'{"files":{"cells/add/r1/x')
    said = journalcheck.repair(RunRoot(root), rows)
    assert said == [f"{JOURNAL}: a torn last line dropped (its write never finished)"]
    assert (root / JOURNAL).read_bytes() == whole
    # the last row never reached status.tsv: its line is dropped and the task, rowless, runs again
    said = journalcheck.repair(RunRoot(root), rows[:-1])
    assert said == [f"{JOURNAL}: the last line's row never reached status.tsv; dropped, task {rows[-1].task_id} "
                    "runs again"]
    assert (root / JOURNAL).read_bytes() == b"".join(whole.splitlines(keepends=True)[:-1])
    # two rows short is no crash's doing: nothing dropped, the check names it
    assert journalcheck.repair(RunRoot(root), rows[:-3]) == []
    assert any(what == "2 journalled row(s) missing from status.tsv: rows were removed" for _, what in
               journalcheck.differences(RunRoot(root), set(), rows=rows[:-3]))


# the two attacks; a middle line deleted and lines reordered are refused by the same check
# (`test_no_thinning_...` holds them in-process, without a run each)
@pytest.mark.parametrize("thin", ["last line with edited evidence", "journal"])
def test_a_run_over_a_thinned_root_with_its_receipt_deleted_is_refused(thin: str, sealed_add: Path,
                                                                          tmp_path: Path, cli):
    root = copy_root(sealed_add, tmp_path)
    _writable(root)
    lines = len(_lines(root))
    {"last line with edited evidence": _drop_line(lines - 1), "journal": _delete_journal}[thin](root)
    if thin.startswith("last"):
        rows = root / "cells/add/r1/candidate/rows.json"
        rows.write_text(rows.read_text().replace('"float16"', '"float32"'), encoding="utf-8")
    (root / "receipt.json").unlink()
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    done = run(root)
    assert done.returncode == 5, done.stdout + done.stderr
    assert f"RUN_REFUSED check=journal: {root}: the journal does not hold this root (" in done.stderr
    assert "nothing was run" in done.stderr
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before
    assert cli("verify", root).returncode == 2          # nothing sealed
    shutil.rmtree(root)
