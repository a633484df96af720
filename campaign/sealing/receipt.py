"""Sealing a finished root and verifying a sealed one: functions any command can call.

receipt.json (canonical JSON, `campaign.contract.receiptmodel.Receipt`) records the
SHA-256, size and mode of every file under the root except itself, every folder
with its mode, the digests of the manifest and prepare.json, the harness digests
taken at prepare (and any harness file that changed since), the run identity,
the verdicts it is handed (`Judgement`: the session flow runs the classifier,
`campaign.flows.session`) -- ``null`` with the note that says why when there are
none: verdicts are never invented here -- and the SHA-256 of its own content.

The seal is crash-safe. In order: the receipt goes to receipt.json.partial, is
fsync'd and renamed into place; files become 0444 and folders 0555; run.lock is
removed; the root itself becomes 0555. A crash before the rename leaves no
receipt (a resume seals again); after it -- or a mode that could not be set --
run.lock is still there, and `complete` (called by `campaign run` under the
lock) finishes that seal.
Verifying is `campaign.sealing.verification`.
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from campaign import __version__
from campaign.contract import canonical, journal, status
from campaign.contract.artifacts import IDENTITY_FILE, LOCK_FILE, RECEIPT_FILE, cell_dir_name
from campaign.contract.errors import EXIT_VERIFY, RUN_REFUSED, SEAL_REFUSED, Refused
from campaign.contract.receiptmodel import RECEIPT_VERSION, SELF_DIGEST, Receipt, content_digest
from campaign.contract.regular import TooLarge
from campaign.contract.runroot import RunRoot
from campaign.judging import caliber
from campaign.planning import harness
from campaign.sealing import rootfiles, verification
from campaign.sealing.rootfiles import SEALED_FILE_MODE, SEALED_FOLDER_MODE, mode_text
from campaign.sealing.verification import UNRECORDED, UNVERIFIED, Difference, Verification, check, require_verified, verify_root, writable_entries  # noqa: F401 (re-exported)

PARTIAL_FILE = RECEIPT_FILE + ".partial"
PREFIX = SEAL_REFUSED


def seal_interrupted(root: RunRoot) -> bool:
    """A receipt with run.lock still beside it: the seal stopped before its last steps."""
    return root.sealed and os.path.lexists(root.file(LOCK_FILE))


def missing_cell_folders(root: RunRoot) -> list[str]:
    """Task ids whose last status row says finished but whose cell folder is gone.

    A skipped task (adaptive rounds) never had a folder; every other finished row
    is evidence the verdicts read, so its folder must exist for the seal to claim it.
    """
    return sorted(task_id for task_id in status.with_evidence(root.status()[0]) if not root.cell(task_id).is_dir())


def run_identities(root: RunRoot) -> tuple[Optional[dict], list[dict]]:
    """The first cell's identity (matrix order) and, when cells differ in caliber, each distinct
    caliber (`campaign.judging.caliber.flatten`) with its tasks. Per-cell fields (task id, switch env,
    autotune mode) are not caliber and do not make identities distinct."""
    first: Optional[dict] = None
    distinct: dict[str, dict] = {}
    for task in sorted(root.matrix.tasks, key=lambda t: t.order):
        path = root.cell(task.id) / IDENTITY_FILE
        if not path.is_file():
            continue
        try:
            identity = canonical.read_json(path)
        except (OSError, ValueError) as exc:
            identity = f"unreadable: {exc}"
        first = identity if first is None else first
        flat = caliber.flatten(identity) if isinstance(identity, dict) else {"unreadable": str(identity)}
        entry = distinct.setdefault(canonical.dumps(flat), {"caliber": flat, "tasks": []})
        entry["tasks"].append(task.id)
    entries = list(distinct.values())
    return first, (entries if len(entries) > 1 else [])


@dataclass(frozen=True)
class Judgement:
    """What the seal records beside the evidence, decided before it by the caller."""

    verdicts: Optional[dict[str, Any]]          # None: no verdicts, and ``note`` says why
    note: Optional[str]
    harness_drift: tuple[str, ...]              # `harness_drift`: the files the verdicts were judged with changed


def harness_drift(root: RunRoot) -> list[str]:
    """Harness files changed since prepare (digests taken now, against prepare.json's)."""
    prepare = root.prepare
    return harness.changed_files(prepare.harness, harness.prepared_digests(Path(prepare.project_root), prepare))


def _scan(root: RunRoot) -> rootfiles.Tree:
    tree = rootfiles.scan(root, UNRECORDED)
    if tree.refused:
        raise Refused(PREFIX, "files", "a sealed root holds regular files and folders only: "
                      + "; ".join(f"{rel}: {what}" for rel, what in tree.refused.items()))
    return tree


def build_receipt(root: RunRoot, judged: Judgement, now: datetime) -> dict[str, Any]:
    tree = _scan(root)
    prepare, matrix = root.prepare, root.matrix
    identity, distinct = run_identities(root)
    files = {}
    for rel, path in tree.files.items():
        digest, size = rootfiles.sha256_regular(path)
        files[rel] = {"sha256": digest, "size": size, "mode": mode_text(SEALED_FILE_MODE)}
    data = {
        "schema_version": RECEIPT_VERSION,
        "campaign": matrix.campaign,
        "sealed_utc": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tool_version": __version__,
        "manifest_sha256": canonical.sha256_file(root.manifest_file),
        "prepare_sha256": canonical.sha256_file(root.prepare_file),
        "status_sha256": canonical.sha256_file(root.status_file) if root.status_file.is_file() else None,
        "harness": dict(prepare.harness),
        "harness_digest": prepare.harness_digest,
        "harness_changed_since_prepare": list(judged.harness_drift),
        "run_identity": identity,
        "distinct_run_identities": distinct,
        "verdicts": judged.verdicts,
        "verdicts_note": judged.note,
        "files": files,
        "folders": {rel: mode_text(SEALED_FOLDER_MODE) for rel in tree.folders},
    }
    data[SELF_DIGEST] = content_digest(data)
    Receipt.model_validate(data)  # never write a receipt that verify would reject
    return data


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_whole(path: Path, text: str) -> None:
    """A crash leaves no file at ``path`` or the whole text, never a torn one."""
    partial = path.with_name(PARTIAL_FILE)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SEALED_FILE_MODE)
    try:
        data = memoryview(text.encode("utf-8"))
        while data:   # a write may be short (a file size limit, a signal)
            data = data[os.write(fd, data):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(partial, path)
    _fsync_folder(path.parent)


def _finish(root: RunRoot, release: Callable[[], None]) -> None:
    """Modes, then the lock, then the root: while run.lock exists, `complete` can redo every step. A
    mode that cannot be set (a read-only remount, a file of another owner) leaves run.lock beside the
    receipt -- the root reads as a seal interrupted, which `campaign run` finishes once the cause is
    fixed -- and is refused naming the file, never left as a root sealed half read-only."""
    try:
        tree = rootfiles.scan(root, frozenset({RECEIPT_FILE, LOCK_FILE}))
        for path in tree.files.values():
            os.chmod(path, SEALED_FILE_MODE)
        for path in reversed(tree.folders.values()):
            os.chmod(path, SEALED_FOLDER_MODE)
    except OSError as exc:
        code = errno.errorcode.get(exc.errno, str(exc.errno))
        raise Refused(PREFIX, "modes", f"{exc.filename}: {exc.strerror} ({code}): receipt.json is written but the "
                      f"root could not be made read-only; {LOCK_FILE} is kept, so the seal reads as interrupted: "
                      f"`campaign run {root}` finishes it once the cause is fixed") from None
    release()
    _fsync_folder(root.path)
    os.chmod(root.path, SEALED_FOLDER_MODE)


def require_sealable(root: RunRoot) -> None:
    """Every refusal of `seal` that needs no verdicts: raised before anything judges the root."""
    if root.sealed:
        raise Refused(PREFIX, "sealed", f"{root.receipt_file} exists: the root is already sealed")
    missing = missing_cell_folders(root)
    if missing:
        raise Refused(PREFIX, "cell_folder", f"{root}: status.tsv says finished but the cell folder is missing: "
                      + ", ".join(cell_dir_name(task_id) for task_id in missing) + "; nothing was sealed")
    _scan(root)   # a FIFO or a link is refused before a reader of the root opens it
    edited = verification.journal_differences(root)
    if edited:
        raise Refused(PREFIX, "journal", f"{root}: the journal does not hold this root ({len(edited)}): "
                      + "; ".join(d.line() for d in edited[:10]) + f"; the digests taken as each cell ended are in "
                      f"{journal.JOURNAL_FILE}; nothing was sealed", EXIT_VERIFY)


def seal(root: RunRoot, judged: Judgement, release: Callable[[], None] = lambda: None,
         now: Optional[datetime] = None) -> dict[str, Any]:
    """Write receipt.json with the verdicts ``judged`` holds, make the root read-only, call
    ``release`` (drop the run lock)."""
    require_sealable(root)
    # Left by a seal that stopped before its rename; the caller holds the lock, so it is nobody's.
    root.file(PARTIAL_FILE).unlink(missing_ok=True)
    data = build_receipt(root, judged, now or datetime.now(timezone.utc))
    try:
        _write_whole(root.receipt_file, canonical.dumps(data))
    except OSError as exc:   # disk full, a size limit: no receipt.json was made, so nothing is sealed
        root.file(PARTIAL_FILE).unlink(missing_ok=True)
        raise Refused(PREFIX, "write", f"{root.receipt_file}: {exc.strerror or exc}: nothing was sealed; "
                      f"`campaign run {root}` seals it once the cause is fixed") from None
    _finish(root, release)
    return data


def complete(root: RunRoot, release: Callable[[], None]) -> Optional[dict[str, Any]]:
    """Finish a seal that a crash interrupted; the caller holds the run lock.

    A receipt that is not JSON was never finished (an empty file from an older,
    in-place seal): it is removed and None is returned, so the caller seals again.
    A whole receipt is finished only when the root still matches it -- file
    modes aside, which are what finishing sets.
    """
    path = root.receipt_file
    try:
        data = canonical.read_json(path)
    except TooLarge as exc:
        raise Refused(RUN_REFUSED, "seal_interrupted", f"{exc}: not a receipt this tool wrote", EXIT_VERIFY) from None
    except ValueError:
        path.unlink()
        root.file(PARTIAL_FILE).unlink(missing_ok=True)
        return None
    except rootfiles.NotRegular as exc:
        raise Refused(RUN_REFUSED, "seal_interrupted", f"{path}: {exc.strerror}", EXIT_VERIFY) from None
    differences = [d for d in check(root, UNRECORDED).differences if d.kind != "mode"]
    if differences:
        shown = "; ".join(d.line() for d in differences[:5])
        raise Refused(RUN_REFUSED, "seal_interrupted",
                      f"{root}: the interrupted seal's receipt.json does not match the root "
                      f"({len(differences)} difference(s): {shown}); the seal is not finished", EXIT_VERIFY)
    _finish(root, release)
    return data
