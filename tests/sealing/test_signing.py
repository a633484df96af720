"""Signed provenance (`campaign.sealing.signing`): `campaign attest ROOT --sign KEY` writes a DSSE
envelope of the in-toto Statement beside a sealed root; `campaign verify ROOT --key PUB` and
`campaign report ROOT --key PUB` check it. A real sealed CPU root, real ed25519 keys; each
forgery of a sealed verdict that a checksum cannot catch -- receipt.json rewritten with its
content_sha256 recomputed, downgraded to schema 1, a file removed, resealed over edited
evidence -- is named by the signature, and a key that did not sign is refused."""
from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
import rootbuilder as rb
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from campaign.contract import canonical
from campaign.flows import session

ROWS = "cells/add/r1/candidate/rows.json"


def _keys(folder: Path, name: str) -> tuple[Path, Path]:
    """A fresh ed25519 key pair as PEM files: PKCS8 private, SubjectPublicKeyInfo public."""
    key = ed25519.Ed25519PrivateKey.generate()
    private, public = folder / f"{name}.pem", folder / f"{name}.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


@pytest.fixture
def signed(tmp_path: Path, cli) -> tuple[Path, Path, Path]:
    """A sealed root of one workload, signed: (root, its envelope, the public key)."""
    root = rb.build(tmp_path, [rb.pointwise()])
    session.seal_root(root)
    private, public = _keys(tmp_path, "signer")
    done = cli("attest", root, "--sign", private)
    assert done.returncode == 0, done.stderr
    envelope = root.with_name(root.name + ".dsse.json")
    assert "signed (keyid " in done.stderr and str(envelope) in done.stderr
    return root, envelope, public


def _writable(root: Path) -> None:
    for folder, _, names in os.walk(root):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(Path(folder) / name, 0o644)


def test_a_signed_root_verifies_and_the_envelope_is_dsse_over_the_statement(signed, tmp_path: Path, cli):
    root, envelope, public = signed
    data = canonical.read_json(envelope)
    assert data["payloadType"] == "application/vnd.in-toto+json" and len(data["signatures"]) == 1
    payload = base64.b64decode(data["payload"])
    # the DSSE pre-authentication encoding, spelt out here from the specification
    pae = b"DSSEv1 28 application/vnd.in-toto+json %d %s" % (len(payload), payload)
    key = serialization.load_pem_public_key(public.read_bytes())
    key.verify(base64.b64decode(data["signatures"][0]["sig"]), pae)     # raises when it does not verify
    statement = json.loads(payload)
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects["receipt.json"] == canonical.sha256_file(root / "receipt.json")
    assert statement["predicate"]["receipt"]["sha256"] == subjects["receipt.json"]

    done = cli("verify", root, "--key", public)
    assert done.returncode == 0, done.stderr
    assert "the signed envelope binds receipt.json and its files as they are" in done.stdout
    report = cli("report", root, "--key", public)
    assert report.returncode == 0, report.stderr
    assert "add" in report.stdout
    elsewhere = tmp_path / "kept" / "root.dsse.json"
    elsewhere.parent.mkdir()
    envelope.rename(elsewhere)
    assert cli("verify", root, "--key", public, "--envelope", elsewhere).returncode == 0


def test_a_key_that_did_not_sign_is_refused(signed, tmp_path: Path, cli):
    root, envelope, _ = signed
    _, stranger = _keys(tmp_path, "stranger")
    done = cli("verify", root, "--key", stranger)
    assert done.returncode == 5
    assert f"VERIFY_FAILED signature: {envelope} (no signature verifies under this public key (keyid " in done.stderr
    report = cli("report", root, "--key", stranger)
    assert report.returncode == 5 and report.stdout == ""
    assert "REPORT_REFUSED check=signature: signature: " in report.stderr


def test_an_envelope_whose_payload_was_swapped_is_refused(signed, tmp_path: Path, cli):
    root, envelope, public = signed
    data = canonical.read_json(envelope)
    statement = json.loads(base64.b64decode(data["payload"]))
    statement["predicate"]["verdict_counts"] = {"G": 1}
    data["payload"] = base64.b64encode(canonical.dumps(statement).encode()).decode()
    envelope.write_text(canonical.dumps(data))
    done = cli("verify", root, "--key", public)
    assert done.returncode == 5 and "no signature verifies under this public key" in done.stderr


def _verdict_turned_g(root: Path) -> None:
    rb.rewrite_receipt(root, rb.turn_class("add", "G"), redigest=True)


def _status_edited(root: Path) -> None:
    rb.edit_sealed(root / "status.tsv", (root / "status.tsv").read_text() + "# edited\n")
    digest = canonical.sha256_file(root / "status.tsv")

    def to_match(data: dict) -> None:
        data["files"]["status.tsv"].update(sha256=digest, size=(root / "status.tsv").stat().st_size)
        data["status_sha256"] = digest
    rb.rewrite_receipt(root, to_match, redigest=True)


def _downgraded(root: Path) -> None:
    rb.rewrite_receipt(root, rb.as_version_1)


def _file_removed(root: Path) -> None:
    folder = (root / ROWS).parent
    folder.chmod(0o755)
    (root / ROWS).unlink()
    folder.chmod(0o555)
    rb.rewrite_receipt(root, lambda data: data["files"].pop(ROWS), redigest=True)


def _resealed_over_edited_evidence(root: Path) -> None:
    _writable(root)
    rows = canonical.read_json(root / ROWS)
    rows["rows"] = rows["rows"][:1]
    (root / ROWS).write_text(canonical.dumps(rows))
    (root / "receipt.json").unlink()
    session.seal_root(root)                   # the reseal succeeds: nothing but the signature remembers


FORGERIES = {
    "verdict turned G, content_sha256 recomputed": (_verdict_turned_g, ["subject receipt.json: sha256 signed ",
                                                                        "predicate receipt: signed "]),
    "status.tsv edited, receipt rewritten to match": (_status_edited, ["subject status.tsv: sha256 signed ",
                                                                       "predicate status_sha256: signed "]),
    "receipt downgraded to schema 1": (_downgraded, ["subject receipt.json: sha256 signed ",
                                                     "predicate receipt: signed "]),
    "a file removed with its receipt entry": (_file_removed, [f"subject {ROWS}: signed (sha256 ",
                                                              "subject receipt.json: sha256 signed "]),
    "receipt deleted and resealed over edited evidence": (_resealed_over_edited_evidence,
                                                          [f"subject {ROWS}: sha256 signed ",
                                                           "subject receipt.json: sha256 signed "]),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_every_forgery_a_checksum_lets_through_is_named_by_the_signature(name: str, signed, cli):
    root, envelope, public = signed
    forge, named = FORGERIES[name]
    forge(root)
    allow = ["--allow-schema", "1"] if "schema 1" in name else []
    plain = cli("verify", root, *allow)
    done = cli("verify", root, *allow, "--key", public)
    assert done.returncode == 5, done.stdout + done.stderr
    failed = [line for line in done.stderr.splitlines() if line.startswith(f"VERIFY_FAILED signature: {envelope} (")]
    for words in named:
        assert any(words in line for line in failed), (words, done.stderr)
    if name.startswith("receipt deleted"):
        assert plain.returncode == 0, plain.stderr      # the reseal made the root consistent with itself
        assert failed and all(line.startswith("VERIFY_FAILED signature") for line in done.stderr.splitlines()[:-1])


def test_a_missing_envelope_or_a_wrong_key_file_is_bad_input(tmp_path: Path, cli):
    root = rb.build(tmp_path, [rb.pointwise()])
    session.seal_root(root)
    private, public = _keys(tmp_path, "signer")
    absent = cli("verify", root, "--key", public)
    assert absent.returncode == 2
    assert (f"VERIFY_REFUSED check=envelope: {root}.dsse.json: no signed envelope here: `campaign attest ROOT "
            "--sign KEY` writes one") in absent.stderr
    assert cli("report", root, "--key", public).returncode == 2
    alone = cli("verify", root, "--envelope", tmp_path / "x.json")
    assert alone.returncode == 2 and "given without --key PUB" in alone.stderr
    wrong = cli("attest", root, "--sign", public)
    assert wrong.returncode == 2
    assert f"ATTEST_REFUSED check=key: {public}: not an unencrypted PEM private key" in wrong.stderr
    assert "openssl genpkey -algorithm ed25519" in wrong.stderr
    assert not Path(f"{root}.dsse.json").exists()
    assert cli("attest", root, "--sign", private).returncode == 0
    again = cli("attest", root, "--sign", private)
    assert again.returncode == 2 and "exists: a statement never overwrites a file" in again.stderr
    private_as_public = cli("verify", root, "--key", private)
    assert private_as_public.returncode == 2 and "VERIFY_REFUSED check=key:" in private_as_public.stderr


def test_run_signs_at_the_seal_and_the_envelope_fails_after_an_edit(sealed_add: Path, tmp_path: Path, cli):
    # the signature is made as the seal ends, not later by whoever holds the root: a root made unsealed
    # again (writable, its receipt deleted: nothing in it changed) is resealed and signed by `run --sign`
    from runroots import copy_root, run
    root = copy_root(sealed_add, tmp_path)
    _writable(root)
    (root / "receipt.json").unlink()
    private, public = _keys(tmp_path, "runner")
    bad = run(root, "--sign", public)
    assert bad.returncode == 2 and "RUN_REFUSED check=key:" in bad.stderr   # refused before anything runs
    assert not (root / "receipt.json").exists()
    done = run(root, "--sign", private)
    assert done.returncode == 0, done.stdout + done.stderr
    envelope = Path(f"{root}.dsse.json")
    assert f"signed {root}: statement in {envelope} (keyid " in done.stdout
    assert cli("verify", root, "--key", public).returncode == 0
    rows = root / ROWS
    rb.edit_sealed(rows, rows.read_text(encoding="utf-8").replace('"float16"', '"float32"'))
    rb.rewrite_receipt(root, lambda data: data["files"][ROWS].update(
        sha256=canonical.sha256_file(rows), size=rows.stat().st_size), redigest=True)   # consistent with itself
    edited = cli("verify", root, "--key", public)
    assert edited.returncode == 5
    assert f"VERIFY_FAILED signature: {envelope} (subject {ROWS}: sha256 signed " in edited.stderr
