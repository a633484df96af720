"""Signed provenance: the in-toto Statement of a sealed root (`campaign.sealing.attest`) in a DSSE
envelope, signed with an ed25519 key, and its check against the root as it is now.

The envelope is DSSE v1 (github.com/secure-systems-lab/dsse): ``payloadType``
``application/vnd.in-toto+json``, ``payload`` the statement's canonical JSON in base64 and
``signatures`` ``[{keyid, sig}]``, each over the pre-authentication encoding (`pae`) of type
and payload. Keys are PEM files (a PKCS8 private key, a SubjectPublicKeyInfo public key, as
``openssl genpkey -algorithm ed25519`` and ``openssl pkey -pubout`` write them), read through
the maintained ``cryptography`` library. A ``keyid`` is the SHA-256 of the raw public key: a
hint that names the key, never trusted in place of the signature.

The check (`problems`) needs no trust in the root: a signature must verify under the
reviewer's public key, and the statement it signs must be the one `attest.build` makes from
the root now -- every subject (the receipt's files and receipt.json itself, by SHA-256) and
every field of the predicate except ``attested_by`` (the tool version that signed). A receipt
rewritten with its checksum recomputed, downgraded, or resealed over edited evidence is a
named difference. The envelope lives beside the root (`envelope_path`), never inside it.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
import stat
from pathlib import Path
from typing import Any

from campaign.contract import canonical
from campaign.contract.errors import EXIT_INPUT, VERIFY_REFUSED, Refused
from campaign.contract.runroot import RunRoot
from campaign.sealing import attest

PAYLOAD_TYPE = "application/vnd.in-toto+json"
SUFFIX = ".dsse.json"
LIBRARY = "cryptography"
UNSIGNED_FIELDS = frozenset({"attested_by"})   # the version of the tool that signed: not a property of the root
KEY_CAP = 64 << 10                             # a PEM key is a few hundred bytes
ENVELOPE_CAP = 256 << 20                       # a statement of a large root, in base64


def _library():
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as exc:
        raise Refused(attest.PREFIX, "library", f"{LIBRARY} is not importable ({exc}): "
                      f"`pip install {LIBRARY}` (a dependency of this project)") from None
    return serialization, ed25519, InvalidSignature


def envelope_path(root: RunRoot) -> Path:
    """Where a root's envelope lives by default: beside it, ``<root>.dsse.json``."""
    folder = Path(os.path.abspath(root.path))
    return folder.with_name(folder.name + SUFFIX)


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: ``DSSEv1 SP LEN(type) SP type SP LEN(body) SP body``."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def _read(path: Path, cap: int, what: str, prefix: str) -> bytes:
    try:
        info = os.stat(path)
    except OSError as exc:
        raise Refused(prefix, what, f"{path}: cannot be read ({exc.strerror}): name an existing {what} file",
                      EXIT_INPUT) from None
    if not stat.S_ISREG(info.st_mode):
        raise Refused(prefix, what, f"{path}: not a regular file: name a {what} file", EXIT_INPUT)
    if info.st_size > cap:
        raise Refused(prefix, what, f"{path}: {info.st_size} bytes, over the {cap}-byte cap for a {what} file",
                      EXIT_INPUT)
    return path.read_bytes()


def load_private(path: Path, prefix: str = attest.PREFIX):
    serialization, ed25519, _ = _library()
    data = _read(Path(path), KEY_CAP, "key", prefix)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise Refused(prefix, "key", f"{path}: not an unencrypted PEM private key ({exc}): "
                      "`openssl genpkey -algorithm ed25519 -out KEY` writes one", EXIT_INPUT) from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise Refused(prefix, "key", f"{path}: a {type(key).__name__}, not ed25519: "
                      "`openssl genpkey -algorithm ed25519 -out KEY` writes one", EXIT_INPUT)
    return key


def load_public(path: Path, prefix: str):
    serialization, ed25519, _ = _library()
    data = _read(Path(path), KEY_CAP, "key", prefix)
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise Refused(prefix, "key", f"{path}: not a PEM public key ({exc}): "
                      "`openssl pkey -in KEY -pubout -out PUB` writes the public half of a key", EXIT_INPUT) from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise Refused(prefix, "key", f"{path}: a {type(key).__name__}, not ed25519", EXIT_INPUT)
    return key


def keyid(public_key) -> str:
    serialization, _, _ = _library()
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return canonical.sha256_bytes(raw)


def sign(statement: dict[str, Any], private_key) -> dict[str, Any]:
    """The DSSE envelope of ``statement`` with one signature by ``private_key``."""
    payload = canonical.dumps(statement).encode("utf-8")
    sig = private_key.sign(pae(PAYLOAD_TYPE, payload))
    return {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode("ascii"),
            "signatures": [{"keyid": keyid(private_key.public_key()), "sig": base64.b64encode(sig).decode("ascii")}]}


def _signed_payload(envelope: Any, public_key) -> tuple[bytes | None, list[str]]:
    """The payload when a signature of the envelope verifies under ``public_key``; else why not."""
    _, _, InvalidSignature = _library()
    if not isinstance(envelope, dict) or not isinstance(envelope.get("signatures"), list):
        return None, ["not a DSSE envelope (payloadType, payload, signatures)"]
    if envelope.get("payloadType") != PAYLOAD_TYPE:
        return None, [f"payloadType {envelope.get('payloadType')!r}, not {PAYLOAD_TYPE!r}"]
    try:
        payload = base64.b64decode(envelope.get("payload", ""), validate=True)
    except (binascii.Error, TypeError, ValueError):
        return None, ["payload is not base64"]
    signed = pae(PAYLOAD_TYPE, payload)
    for entry in envelope["signatures"]:
        try:
            public_key.verify(base64.b64decode(entry["sig"], validate=True), signed)
            return payload, []
        except (InvalidSignature, binascii.Error, KeyError, TypeError, ValueError):
            continue
    ids = sorted(str(entry.get("keyid")) for entry in envelope["signatures"] if isinstance(entry, dict))
    return None, [f"no signature verifies under this public key (keyid {keyid(public_key)}; the envelope's: "
                  f"{', '.join(ids) or 'none'}): the envelope was not signed by its private key, or was altered"]


def _compare(signed: dict[str, Any], now: dict[str, Any]) -> list[str]:
    out = []
    was = {s.get("name"): s.get("digest", {}).get("sha256") for s in signed.get("subject", [])}
    is_ = {s["name"]: s["digest"]["sha256"] for s in now["subject"]}
    for name in sorted(set(was) | set(is_)):
        if name not in is_:
            out.append(f"subject {name}: signed (sha256 {was[name]}), not in the root's receipt now")
        elif name not in was:
            out.append(f"subject {name}: in the root's receipt now (sha256 {is_[name]}), not signed")
        elif was[name] != is_[name]:
            out.append(f"subject {name}: sha256 signed {was[name]}, now {is_[name]}")
    old, new = signed.get("predicate", {}), now["predicate"]
    for field in sorted((set(old) | set(new)) - UNSIGNED_FIELDS):
        if old.get(field) != new.get(field):
            out.append(f"predicate {field}: signed {json.dumps(old.get(field), sort_keys=True)[:200]}, "
                       f"now {json.dumps(new.get(field), sort_keys=True)[:200]}")
    return out


def problems(root: RunRoot, receipt, envelope: Path, public_key) -> list[str]:
    """Every way the envelope fails to vouch for ``root`` as it is now ([] when it does).
    ``receipt`` is the root's receipt as read (None when it could not be read)."""
    try:
        parsed = canonical.parse_json(_read(Path(envelope), ENVELOPE_CAP, "envelope", VERIFY_REFUSED), "envelope")
    except ValueError as exc:
        return [str(exc)]
    payload, why = _signed_payload(parsed, public_key)
    if payload is None:
        return why
    try:
        signed = json.loads(attest_json(payload))
    except ValueError as exc:
        return [f"the signed payload is not this tool's in-toto Statement ({exc})"]
    if receipt is None:
        return ["receipt.json cannot be read, so nothing the signature binds can be checked"]
    return _compare(signed, attest.build(root, receipt))


def require_free(path: Path, prefix: str) -> Path:
    """``path`` when nothing is there: an envelope is never overwritten (exit 2 otherwise)."""
    if path.exists() or path.is_symlink():
        raise Refused(prefix, "envelope", f"{path} exists: an envelope is never overwritten; move it aside",
                      EXIT_INPUT)
    return path


def sign_root(root: RunRoot, private_key) -> Path:
    """The statement of ``root`` -- verified first, as `campaign attest` does -- signed into
    `envelope_path`, a new file; the path."""
    out = require_free(envelope_path(root), attest.PREFIX)
    canonical.write_new(out, canonical.dumps(sign(attest.statement(root), private_key)))
    return out


def require_envelope(path: Path, prefix: str) -> Path:
    """``path`` when it is there; refused (exit 2) naming it and how one is made."""
    if not path.exists() and not path.is_symlink():
        raise Refused(prefix, "envelope", f"{path}: no signed envelope here: `campaign attest ROOT --sign KEY` "
                      "writes one beside the root, or `--envelope FILE` names where it is", EXIT_INPUT)
    return path


def attest_json(payload: bytes) -> str:
    """The signed payload as text, read back and validated as a Statement (ValueError if it is not)."""
    text = payload.decode("utf-8")
    if attest.read(text).pb.predicate_type != attest.PREDICATE_TYPE:
        raise ValueError(f"predicateType is not {attest.PREDICATE_TYPE}")
    return text
