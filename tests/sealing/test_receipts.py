"""The sealed roots committed under receipts/ verify, and the copies beside them are theirs.

A reviewer reads ``receipts/<root>/status.tsv`` or ``screen.tsv`` without unpacking
anything; this pins that those copies are byte for byte the files the receipt hashes,
and that every committed root still verifies as the CLI verifies it.
"""
from __future__ import annotations

import json
import subprocess
import sys

import committedroots
import pytest
from conftest import PROJECT_ROOT

RECEIPTS = PROJECT_ROOT / "receipts"
SEALED = sorted(p.parent for p in RECEIPTS.glob("*/root.tar.gz"))
COPIES = ("receipt.json", "manifest.yaml", "status.tsv", "telemetry.tsv", "screen.tsv")


def test_receipts_hold_sealed_roots():
    assert len(SEALED) >= 4, f"expected the committed H200 roots under {RECEIPTS}, found {SEALED}"


@pytest.mark.parametrize("folder", SEALED, ids=lambda p: p.name)
def test_a_committed_root_verifies_and_its_copies_are_its_own(folder, committed_roots):
    # every archive unpacked once for the session (`conftest.committed_roots`), the names it held kept
    names = committedroots.names(committed_roots)[folder.name]
    assert names == [folder.name], f"{folder}/root.tar.gz holds {names}, not the root {folder.name}"
    root = committed_roots / committedroots.ROOTS / folder.name
    version = json.loads((root / "receipt.json").read_text(encoding="utf-8"))["schema_version"]
    # an older schema is verified only when asked for: a receipt downgraded to it needs no digest of its own
    asked = ["--allow-schema", "1"] if version == 1 else []
    proc = subprocess.run([sys.executable, "-m", "campaign", "verify", str(root), *asked],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verify against receipt.json" in proc.stdout
    assert "note: content_sha256 is a checksum of receipt.json, not a signature" in proc.stdout
    if version == 1:
        # sealed before modes, folders and the receipt's own digest were recorded: said, not hidden
        assert "note: receipt.json is schema_version 1" in proc.stdout and "not checked" in proc.stdout
        refused = subprocess.run([sys.executable, "-m", "campaign", "verify", str(root)],
                                 capture_output=True, text=True, timeout=300)
        assert refused.returncode == 5 and "VERIFY_FAILED receipt: receipt.json (schema_version 1 is older" in refused.stderr
    else:
        assert "note: receipt.json is schema_version" not in proc.stdout     # a v2 receipt supports every check
    copies = [name for name in COPIES if (folder / name).exists()]
    assert {"receipt.json", "manifest.yaml", "status.tsv"} <= set(copies)
    for name in copies:
        assert (folder / name).read_bytes() == (root / name).read_bytes(), f"{folder / name} is not the root's"
