"""Sealing and verifying: a run seals its root read-only; verify re-hashes and names every
difference (exit 5), a clean root exits 0, an unsealed one is refused (exit 1)."""
from __future__ import annotations

import stat
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from campaign import canonical, receipt
from campaign.errors import Refused
from runroots import demo, prepare, run


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_run_seals_and_verify_names_every_difference(tmp_path: Path, cli):
    root = prepare(tmp_path, [demo("add", canary=True)])
    done = run(root)
    assert done.returncode == 0, done.stderr
    sealed = canonical.read_json(root / "receipt.json")
    assert sealed["manifest_sha256"] == canonical.sha256_file(root / "manifest.yaml")
    assert sealed["prepare_sha256"] == canonical.sha256_file(root / "prepare.json")
    assert sealed["harness"] == canonical.read_json(root / "prepare.json")["harness"]
    assert "receipt.json" not in sealed["files"] and "run.lock" not in sealed["files"]
    result = "cells/add/r1/baseline/result.json"
    assert sealed["files"][result] == {"sha256": canonical.sha256_file(root / result),
                                       "size": (root / result).stat().st_size}
    assert {"status.tsv", "matrix.json", "telemetry.err", "cells/add/r1/candidate/task.json"} <= set(sealed["files"])
    assert sealed["run_identity"]["task_id"] == "add/r1/baseline"
    assert sealed["distinct_run_identities"] == []  # baseline and candidate share one caliber
    assert (sealed["verdicts"] is None) == (sealed["verdicts_note"] is not None)
    assert _mode(root) == 0o555 and _mode(root / "cells" / "add") == 0o555
    assert _mode(root / result) == 0o444 and _mode(root / "receipt.json") == 0o444

    clean = cli("verify", root)
    assert clean.returncode == 0, clean.stderr
    assert f"{len(sealed['files'])} files verify" in clean.stdout

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
    assert "3 difference(s)" in worse.stderr
    assert "is writable again" in worse.stderr


def test_verify_refuses_an_unsealed_root(tmp_path: Path, cli):
    root = prepare(tmp_path, [demo("add")])
    done = cli("verify", root)
    assert done.returncode == 1
    assert "VERIFY_REFUSED check=receipt:" in done.stderr and "not sealed" in done.stderr


def test_seal_without_a_classifier_writes_null_verdicts_never_invented(tmp_path: Path, monkeypatch):
    root = prepare(tmp_path, [demo("add")])
    monkeypatch.setitem(sys.modules, "campaign.classify", None)
    released = []
    sealed = receipt.seal(root, release=lambda: released.append(True),
                          now=datetime(2026, 11, 29, 8, 0, tzinfo=timezone.utc))
    assert released == [True]
    assert sealed["verdicts"] is None
    assert sealed["verdicts_note"].startswith("no classifier installed")
    assert sealed["sealed_utc"] == "2026-11-29T08:00:00Z"
    assert sealed["status_sha256"] is None and sealed["run_identity"] is None
    assert sorted(sealed["files"]) == ["manifest.yaml", "matrix.json", "prepare.json"]
    assert canonical.read_json(root / "receipt.json") == sealed
    assert receipt.verify_root(root) == []
    with pytest.raises(Refused, match="already sealed"):
        receipt.seal(root)
    root.chmod(0o755)
    (root / "run.lock").write_text("{}")  # left out at seal, but never hidden from verify
    assert [d.line() for d in receipt.verify_root(root)] == ["extra: run.lock (not in the receipt)"]
