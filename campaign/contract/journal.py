"""digests.jsonl: the root's journal, one chained line per record, from prepare to the seal.

A root prepared since the journal was chained says so in prepare.json (``journal: "chained"``,
digested with the rest of prepare.json). Its first line is written by prepare:
``{"prepared": {REL_PATH: [SHA256, SIZE], ...}, "prev": SHA256}``, the root's files as prepare
left them (the manifest's copy, matrix.json; prepare.json is the anchor), ``prev`` the SHA-256 of
prepare.json. The runner then writes one line per status row, just before the row (`record`):
``{"task": TASK_ID, "files": {REL_PATH: [SHA256, SIZE], ...}, "row": ROW, "prev": SHA256}``:
every regular file of the task's cell folder (none for a task without one), the row as status.tsv
gets it, and the SHA-256 of the line before, so a line deleted, moved or edited breaks the chain
at the next. `campaign.contract.journalcheck.differences` names each break, each status row
without its line (or a line whose row status.tsv lacks), each prepared file changed, and each
finished cell's files that are not what its last line recorded; the seal
(`campaign.sealing.receipt.require_sealable`), `campaign run` before it runs anything (the
journal's own integrity) and verify read them. A chained root without digests.jsonl is a
finding, never an old root.

The chain is a checksum, not a signature: whoever rewrites every line from the first can rewrite
it too (`campaign run --sign` makes the signature at the seal). A killed runner or a full disk
leaves at most the last line torn, or a whole last line whose row never reached status.tsv:
`journalcheck.repair` drops exactly that on resume, and the task, without a row, runs again -- nothing is
rebuilt from the files a line describes. A root prepared before lines were chained holds unchained
cell lines (or no journal): its cells are checked against their last lines, and the receipt.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Optional, Sequence

from campaign.contract import canonical, faults, regular, status
from campaign.contract.runroot import RunRoot

JOURNAL_FILE = "digests.jsonl"
CHAINED = "chained"             # prepare.json's ``journal``: what a root prepared now claims
_APPEND = threading.Lock()      # the cards' runners and IR-pass lanes end cells at once
NONE_KNOWN: Mapping[str, tuple[str, int]] = MappingProxyType({})
Digests = dict[str, tuple[str, int]]


def _sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle, faults.naming(path):   # an EIO names the file it was reading
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def folder_digests(root: RunRoot, task_id: str, known: Mapping[str, tuple[str, int]] = NONE_KNOWN) -> Digests:
    """Every regular file under the task's cell folder (links never followed) -> (sha256, size). A
    path in ``known`` was digested by the caller a moment before (verify, against the receipt): its
    digest is taken from there, not read again."""
    found = {}
    for folder, _, names in os.walk(root.cell(task_id), followlinks=False):
        for name in names:
            path = Path(folder) / name
            if stat.S_ISREG(os.lstat(path).st_mode):
                rel = path.relative_to(root.path).as_posix()
                found[rel] = known[rel] if rel in known else _sha256(path)
    return dict(sorted(found.items()))


def row_text(row: status.StatusRow) -> str:
    """A status row as the journal holds it: every column, the card's included, without the newline."""
    return status.format_row(row, True).rstrip("\n")


def same_row(journalled: object, row: status.StatusRow) -> bool:
    """Whether status.tsv's ``row`` is the row journalled; a ledger without the card column (its first row
    named none) cannot hold a later row's card, so only the columns it has are compared."""
    if not isinstance(journalled, str):
        return False
    if row.device is None:
        return journalled.rsplit("\t", 1)[0] == row_text(row).rsplit("\t", 1)[0]
    return journalled == row_text(row)


def _line(data: dict) -> bytes:
    return (json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def _last_line_digest(fd: int, size: int, anchor: Path) -> str:
    """SHA-256 of the file's last line (its newline included), read backwards; of ``anchor`` when empty."""
    if size == 0:
        return canonical.sha256_file(anchor)
    tail, start = b"", size
    while start > 0 and tail[:-1].rfind(b"\n") < 0:
        step = min(1 << 16, start)
        start -= step
        tail = os.pread(fd, step, start) + tail
    cut = tail[:-1].rfind(b"\n")
    return hashlib.sha256(tail[cut + 1:]).hexdigest()


def _append(root: RunRoot, data: dict) -> None:
    """One chained line, one write, fsync'd; the caller holds `_APPEND`."""
    path = root.file(JOURNAL_FILE)
    with faults.naming(path):
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            data = {**data, "prev": _last_line_digest(fd, os.fstat(fd).st_size, root.prepare_file)}
            os.write(fd, _line(data))
            os.fsync(fd)
        finally:
            os.close(fd)


def open_root(root: RunRoot, files: Sequence[str]) -> None:
    """prepare's first line: ``files`` (relative to the root) as prepare left them, anchored to prepare.json."""
    with _APPEND:
        _append(root, {"prepared": {rel: list(_sha256(root / rel)) for rel in sorted(files)}})


def record(root: RunRoot, task_id: str, row: status.StatusRow, status_path: Path) -> None:
    """The task's cell folder as it is now and its status row, journalled, then the row appended to
    status.tsv: under one lock, so the journal's rows are status.tsv's, in its order."""
    files = folder_digests(root, task_id) if root.cell(task_id).is_dir() else {}
    with _APPEND:
        _append(root, {"task": task_id, "files": {rel: list(entry) for rel, entry in files.items()},
                       "row": row_text(row)})
        status.append(status_path, row)


def lines(root: RunRoot) -> tuple[Optional[list[tuple[bytes, Optional[dict]]]], list[str]]:
    """Every line (its bytes with the newline, parsed or None) and read problems; None: no journal."""
    path = root.file(JOURNAL_FILE)
    if not os.path.lexists(path):
        return None, []
    try:
        data = regular.read_regular(path, canonical.JSON_CAP)
    except regular.NotRegular as exc:
        return None, [f"not a regular file: {exc.strerror}"]
    except regular.TooLarge as exc:
        return None, [str(exc)]
    found = []
    for raw in data.splitlines(keepends=True):
        try:
            parsed = canonical.parse_json(raw)
        except ValueError:
            parsed = None
        found.append((raw, parsed if isinstance(parsed, dict) else None))
    return found, []


def _entry(data: Optional[dict]) -> Optional[tuple[str, Digests]]:
    try:
        return data["task"], {rel: (sha, size) for rel, (sha, size) in data["files"].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def read(root: RunRoot) -> tuple[dict[str, Digests], list[str]]:
    """(the last entry of each task, problems); ({}, []) when the root has no journal."""
    found, problems = lines(root)
    entries = {}
    for number, (raw, data) in enumerate(found or [], 1):
        entry = _entry(data)
        if entry is not None:
            entries[entry[0]] = entry[1]
        elif "prepared" not in (data or {}) and (number < len(found) or raw.endswith(b"\n")):
            problems.append(f"line {number}: not a journal entry")   # not the torn last line of a killed runner
    return entries, problems


def torn_tail(found: Sequence[tuple[bytes, Optional[dict]]]) -> bool:
    return bool(found) and not found[-1][0].endswith(b"\n")
