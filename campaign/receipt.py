"""Sealing a finished root and verifying a sealed one: functions any command can call.

receipt.json (canonical JSON) records the SHA-256 and size of every file under
the root except itself, the digests of the manifest and prepare.json, the
harness digests taken at prepare (and any harness file that changed since),
the run identity, and the verdicts from `campaign.classify.classify_root` --
or ``null`` with a note when no classifier is importable: verdicts are never
invented here. After the receipt is written, files become 0444 and folders
0555. `verify_root` re-hashes and names every changed, missing and extra file.
"""
from __future__ import annotations

import importlib
import os
import stat
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from campaign import __version__, caliber, canonical, harness
from campaign.artifacts import (CELLS_DIR, IDENTITY_FILE, MANIFEST_FILE, MATRIX_FILE, PREPARE_FILE,
                                RECEIPT_FILE, SCHEMA_VERSION, STATUS_FILE, Matrix)
from campaign.errors import EXIT_VERIFY, Refused
from campaign.lock import LOCK_FILE

# Not recorded at seal: the receipt itself and the live run lock (removed right after).
# Verify leaves out only the receipt: a lock found in a sealed root is an extra file.
UNRECORDED = frozenset({RECEIPT_FILE, LOCK_FILE})
UNVERIFIED = frozenset({RECEIPT_FILE})


@dataclass(frozen=True)
class Difference:
    kind: str                            # "changed" | "missing" | "extra"
    path: str
    detail: str = ""

    def line(self) -> str:
        return f"{self.kind}: {self.path}" + (f" ({self.detail})" if self.detail else "")


def is_sealed(root: Path) -> bool:
    return (Path(root) / RECEIPT_FILE).exists()


def walk_files(root: Path, leave_out: frozenset[str] = UNRECORDED) -> dict[str, Path]:
    """Relative POSIX path -> path of every file under root, sorted, ``leave_out`` names left out."""
    root = Path(root)
    found: dict[str, Path] = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if rel not in leave_out:
                found[rel] = path
    return found


def file_digests(root: Path) -> dict[str, dict[str, Any]]:
    return {rel: {"sha256": canonical.sha256_file(path), "size": path.stat().st_size}
            for rel, path in walk_files(root).items()}


def run_identities(root: Path, matrix: Matrix) -> tuple[Optional[dict], list[dict]]:
    """The first cell's identity (matrix order) and, when cells differ in caliber, each distinct
    caliber (`campaign.caliber.flatten`) with its tasks. Per-cell fields (task id, switch env,
    autotune mode) are not caliber and do not make identities distinct."""
    first: Optional[dict] = None
    distinct: dict[str, dict] = {}
    for task in sorted(matrix.tasks, key=lambda t: t.order):
        path = Path(root) / CELLS_DIR / task.id / IDENTITY_FILE
        if not path.is_file():
            continue
        identity = canonical.read_json(path)
        first = identity if first is None else first
        flat = caliber.flatten(identity) if isinstance(identity, dict) else {"unreadable": str(identity)}
        entry = distinct.setdefault(canonical.dumps(flat), {"caliber": flat, "tasks": []})
        entry["tasks"].append(task.id)
    entries = list(distinct.values())
    return first, (entries if len(entries) > 1 else [])


def classify(root: Path) -> tuple[Optional[dict], Optional[str]]:
    """Verdicts from the classifier hook, or (None, why there are none)."""
    try:
        module = importlib.import_module("campaign.classify")
    except ModuleNotFoundError as exc:
        if exc.name == "campaign.classify":
            return None, "no classifier installed (campaign.classify is not importable): verdicts not derived"
        raise
    hook = getattr(module, "classify_root", None)
    if hook is None:
        return None, "campaign.classify has no classify_root(root): verdicts not derived"
    try:
        return hook(Path(root)), None
    except Exception as exc:  # the seal records the failure; the evidence is still sealed
        return None, f"campaign.classify.classify_root failed: {type(exc).__name__}: {exc}"


def build_receipt(root: Path, now: datetime) -> dict[str, Any]:
    root = Path(root)
    prepare = canonical.read_json(root / PREPARE_FILE)
    matrix = Matrix.model_validate(canonical.read_json(root / MATRIX_FILE))
    identity, distinct = run_identities(root, matrix)
    verdicts, verdicts_note = classify(root)
    recorded = prepare.get("harness", {})
    drift = harness.changed_files(recorded, harness.harness_digests(Path(prepare["project_root"])))
    return {
        "schema_version": SCHEMA_VERSION,
        "campaign": matrix.campaign,
        "sealed_utc": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tool_version": __version__,
        "manifest_sha256": canonical.sha256_file(root / MANIFEST_FILE),
        "prepare_sha256": canonical.sha256_file(root / PREPARE_FILE),
        "status_sha256": canonical.sha256_file(root / STATUS_FILE) if (root / STATUS_FILE).is_file() else None,
        "harness": recorded,
        "harness_digest": prepare.get("harness_digest"),
        "harness_changed_since_prepare": drift,
        "run_identity": identity,
        "distinct_run_identities": distinct,
        "verdicts": verdicts,
        "verdicts_note": verdicts_note,
        "files": file_digests(root),
    }


def make_read_only(root: Path) -> None:
    root = Path(root)
    for folder, dirs, files in os.walk(root, topdown=False):
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                os.chmod(path, 0o444)
        for name in dirs:
            path = Path(folder) / name
            if not path.is_symlink():
                os.chmod(path, 0o555)
    os.chmod(root, 0o555)


def seal(root: Path, release: Callable[[], None] = lambda: None,
         now: Optional[datetime] = None) -> dict[str, Any]:
    """Write receipt.json, call ``release`` (drop the run lock), make the root read-only."""
    root = Path(root)
    if is_sealed(root):
        raise Refused("SEAL_REFUSED", "sealed", f"{root / RECEIPT_FILE} exists: the root is already sealed")
    receipt = build_receipt(root, now or datetime.now(timezone.utc))
    canonical.write_json_new(root / RECEIPT_FILE, receipt)
    release()
    make_read_only(root)
    return receipt


def load_receipt(root: Path) -> dict[str, Any]:
    path = Path(root) / RECEIPT_FILE
    if not path.is_file():
        raise Refused("VERIFY_REFUSED", "receipt", f"{path}: no receipt: the root is not sealed")
    try:
        receipt = canonical.read_json(path)
    except ValueError as exc:
        raise Refused("VERIFY_REFUSED", "receipt", f"{path}: not JSON: {exc}") from None
    if not isinstance(receipt, dict) or not isinstance(receipt.get("files"), dict):
        raise Refused("VERIFY_REFUSED", "receipt", f"{path}: no files table")
    return receipt


def verify_root(root: Path) -> list[Difference]:
    """Every difference between a sealed root and its receipt; empty when it verifies."""
    root = Path(root)
    recorded: dict[str, dict] = load_receipt(root)["files"]
    present = walk_files(root, UNVERIFIED)
    differences = []
    for rel in sorted(set(recorded) | set(present)):
        if rel not in present:
            differences.append(Difference("missing", rel))
        elif rel not in recorded:
            differences.append(Difference("extra", rel, "not in the receipt"))
        else:
            path, entry = present[rel], recorded[rel]
            size, digest = path.stat().st_size, canonical.sha256_file(path)
            if digest != entry.get("sha256") or size != entry.get("size"):
                differences.append(Difference(
                    "changed", rel, f"sha256 {digest[:12]} size {size}, "
                                    f"receipt {str(entry.get('sha256'))[:12]} size {entry.get('size')}"))
    return differences


def require_verified(root: Path, prefix: str) -> None:
    """Refuse (exit 5) to derive anything from a root that does not verify, naming the first differences."""
    differences = verify_root(root)
    if differences:
        shown = "; ".join(d.line() for d in differences[:5])
        raise Refused(prefix, "verify", f"{root} does not verify ({len(differences)} difference(s): {shown})",
                      EXIT_VERIFY)


def writable_entries(root: Path) -> list[str]:
    """Paths under a sealed root that are writable again (reported, not a digest failure)."""
    out = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            if not path.is_symlink() and path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
                out.append(path.relative_to(root).as_posix())
    return sorted(out)
