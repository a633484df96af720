"""What a root's journal (`campaign.contract.journal`) says about it: every difference by name, and
the one repair a resume may make.

`differences` is read by the seal, by `campaign run` before it runs anything, and by verify; its
status rows come from the caller (`campaign.contract.runroot.RunRoot.status`, their one reader).
On a root whose prepare.json claims a chained journal it names, besides the cell files changed,
removed or added since their cell ended: the journal missing, a line that is not an entry, the
first line not prepare's, each line whose ``prev`` is not the digest of the line before (a line
deleted, moved or edited), a prepared file changed, and status.tsv's rows against the journal's
(a finished task without its line is a row the journal lacks).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Mapping, Optional, Sequence

from campaign.contract import canonical, faults, journal, status
from campaign.contract.artifacts import STATUS_FILE
from campaign.contract.runroot import RunRoot

JOURNAL_FILE = journal.JOURNAL_FILE


def _chain(root: RunRoot, found: Sequence[tuple[bytes, Optional[dict]]]) -> list[tuple[str, str]]:
    out = []
    if not found or "prepared" not in (found[0][1] or {}):
        out.append((JOURNAL_FILE, "line 1: not prepare's first line (the journal was cut or replaced)"))
    previous = canonical.sha256_file(root.prepare_file)
    for number, (raw, data) in enumerate(found, 1):
        if not raw.endswith(b"\n"):
            out.append((JOURNAL_FILE, f"line {number}: torn (a write that never finished); `campaign run` "
                                      "drops it and runs its cell again"))
        elif data is None or data.get("prev") != previous:
            out.append((JOURNAL_FILE, f"line {number}: the chain breaks here (prev "
                                      f"{str((data or {}).get('prev'))[:12]}, the line before hashes to "
                                      f"{previous[:12]}): a line was deleted, moved or edited"))
        previous = hashlib.sha256(raw).hexdigest()
    return out


def _prepared(root: RunRoot, found: Sequence[tuple[bytes, Optional[dict]]],
              known: Mapping[str, tuple[str, int]]) -> list[tuple[str, str]]:
    files = (found[0][1] or {}).get("prepared") if found else None
    out = []
    for rel, (sha, size) in sorted((files or {}).items()):
        path = root / rel
        now = (known[rel] if rel in known else journal._sha256(path) if os.path.isfile(path)
               and not os.path.islink(path) else None)
        if now is None:
            out.append((rel, "removed since prepare"))
        elif now != (sha, size):
            out.append((rel, f"changed since prepare: sha256 {now[0][:12]} size {now[1]}, journalled "
                             f"{sha[:12]} size {size}"))
    return out


def _rows(found: Sequence[tuple[bytes, Optional[dict]]], rows: Sequence[status.StatusRow]) -> list[tuple[str, str]]:
    journalled = [data["row"] for _, data in found if data and "task" in data and "row" in data]
    written = list(rows)
    for number, (was, now) in enumerate(zip(journalled, written), 1):
        if not journal.same_row(was, now):
            return [(STATUS_FILE, f"row {number} ({now.task_id}) is not the row journalled "
                                  f"({str(was).split(chr(9))[0]}): a row or a line was removed or edited")]
    if len(written) > len(journalled):
        missing = ", ".join(row.task_id for row in rows[len(journalled):][:5])
        return [(STATUS_FILE, f"{len(written) - len(journalled)} row(s) without a journal line (tasks "
                                     f"{missing}): finished tasks the journal does not hold")]
    if len(journalled) > len(written):
        return [(STATUS_FILE, f"{len(journalled) - len(written)} journalled row(s) missing from "
                                     "status.tsv: rows were removed")]
    return []


def _files(root: RunRoot, tasks: set[str], entries: Mapping[str, journal.Digests],
           known: Mapping[str, tuple[str, int]]) -> list[tuple[str, str]]:
    found = []
    for task_id in sorted(tasks & set(entries)):
        try:
            ended, now = entries[task_id], journal.folder_digests(root, task_id, known)
        except OSError as exc:    # a failing disk: the file is named, the rest of the root still checked
            found.append((Path(exc.filename or root.path).relative_to(root.path).as_posix(), f"cannot be read: {exc.strerror}"))
            continue
        for rel in sorted(set(ended) | set(now)):
            if rel not in now:
                found.append((rel, "removed since its cell ended"))
            elif rel not in ended:
                found.append((rel, "added since its cell ended"))
            elif now[rel] != ended[rel]:
                found.append((rel, f"changed since its cell ended: sha256 {now[rel][0][:12]} size {now[rel][1]}, "
                                   f"journalled {ended[rel][0][:12]} size {ended[rel][1]}"))
    return found


def differences(root: RunRoot, tasks: set[str], known: Mapping[str, tuple[str, int]] = journal.NONE_KNOWN,
                rows: Optional[Sequence[status.StatusRow]] = None) -> list[tuple[str, str]]:
    """(path, what) for each file of ``tasks``' cell folders changed, removed or added since its cell
    ended, and each line of the journal that does not parse. With ``rows`` (status.tsv's, in order:
    the root claims a chained journal) also the chain, the prepared files and the rows.
    ``known``: as `journal.folder_digests`."""
    entries, problems = journal.read(root)
    found = [(JOURNAL_FILE, problem) for problem in problems]
    if rows is not None:
        lines, unread = journal.lines(root)
        if lines is None:
            return [(JOURNAL_FILE, "missing (" + ("; ".join(unread) or "no such file")
                     + "): prepare.json says this root's journal is chained")]
        found += _chain(root, lines) + _prepared(root, lines, known) + _rows(lines, rows)
    return found + _files(root, tasks, entries, known)


def repair(root: RunRoot, rows: Sequence[status.StatusRow]) -> list[str]:
    """Drop what a killed runner or a full disk leaves at the journal's end -- a torn last line, and a
    whole last line whose row status.tsv never got -- and say so; the task has no row and runs again.
    Anything else stays for `differences` to name."""
    lines, _ = journal.lines(root)
    if not lines:
        return []
    keep, said = len(lines), []
    if journal.torn_tail(lines):
        keep -= 1
        said.append(f"{JOURNAL_FILE}: a torn last line dropped (its write never finished)")
    journalled = [data.get("row") for _, data in lines[:keep] if data and "task" in data]
    if keep and (lines[keep - 1][1] or {}).get("task") is not None and len(journalled) == len(rows) + 1 and \
            all(journal.same_row(was, row) for was, row in zip(journalled, rows)):
        keep -= 1
        said.append(f"{JOURNAL_FILE}: the last line's row never reached status.tsv; dropped, task "
                    f"{lines[keep][1]['task']} runs again")
    if keep < len(lines):
        path = root.file(JOURNAL_FILE)
        with faults.naming(path):
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
            try:
                os.ftruncate(fd, sum(len(raw) for raw, _ in lines[:keep]))
                os.fsync(fd)
            finally:
                os.close(fd)
    return said
