"""Verifying a sealed root against its receipt.json: every difference, each by name.

The receipt is trusted only after it is read as a regular file, parses, matches
`campaign.contract.receiptmodel.ReceiptFile` and -- from version 2 -- hashes to its own
``content_sha256``. The root is then walked with `campaign.sealing.rootfiles.scan`: a
file changed, missing or added, a symbolic link, FIFO or device anywhere (never
followed or opened), and -- from version 2 -- a mode changed or a folder added or
removed, is a `Difference`. A version-1 receipt cannot support the last checks;
`Verification.notes` says which were left out. On a root whose journal is chained
(`campaign.contract.journalcheck`) its chain, its rows and the tasks a sealed root settled are
checked too.

`require_verified` is the one gate of every command that derives anything from a sealed root
(report, attest, compare, reaccount, a screen's rescore): it refuses, exit 5 with verify's own
words, what `campaign verify` refuses -- a receipt of an older schema included, unless
``--allow-schema N`` asks for it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Collection, Mapping, Optional, Union

from pydantic import ValidationError

from campaign.contract import canonical, journal, journalcheck, status
from campaign.contract.artifacts import LOCK_FILE, RECEIPT_FILE
from campaign.contract.errors import EXIT_INPUT, EXIT_VERIFY, VERIFY_REFUSED, Refused
from campaign.contract.receiptmodel import RECEIPT_VERSION, Receipt, ReceiptFile, ReceiptV1, content_digest
from campaign.contract.runroot import RunRoot
from campaign.sealing import rootfiles

# Not recorded at seal: the receipt itself and the live run lock (removed right after).
# Verify leaves out only the receipt: a lock found in a sealed root is an extra file.
UNRECORDED = frozenset({RECEIPT_FILE, LOCK_FILE})
UNVERIFIED = frozenset({RECEIPT_FILE})
INTERRUPTED_HINT = "run.lock left beside receipt.json: the seal was interrupted; `campaign run ROOT` completes it"


@dataclass(frozen=True)
class Difference:
    kind: str            # "changed" | "missing" | "extra" | "mode" | "refused" | "receipt" | "journal"
    path: str            # relative to the root; a folder ends in "/"
    detail: str = ""

    def line(self) -> str:
        return f"{self.kind}: {self.path}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class Verification:
    receipt: Optional[Union[ReceiptV1, Receipt]]     # None: the receipt itself could not be read
    differences: tuple[Difference, ...]

    @property
    def notes(self) -> tuple[str, ...]:
        if self.receipt is None or not self.receipt.unsupported():
            return ()
        return (f"receipt.json is schema_version {self.receipt.schema_version}, sealed before these were "
                "recorded, so they are not checked: " + "; ".join(self.receipt.unsupported())
                + "; every file digest is checked",)


def _schema_problem(exc: ValidationError) -> str:
    shown = [" -> ".join(str(part) for part in error["loc"]) + ": " + error["msg"] for error in exc.errors()[:3]]
    return "does not match its schema: " + "; ".join(shown)


def read_receipt(root: RunRoot) -> tuple[Optional[Union[ReceiptV1, Receipt]], list[Difference]]:
    path = root.receipt_file
    if not root.sealed:
        raise Refused(VERIFY_REFUSED, "receipt", f"{path}: no receipt: the root is not sealed")
    hint = f"; {INTERRUPTED_HINT}" if os.path.lexists(root.file(LOCK_FILE)) else ""
    try:
        data = canonical.read_json(path)
    except rootfiles.NotRegular as exc:
        return None, [Difference("refused", RECEIPT_FILE, exc.strerror)]
    except OSError as exc:      # a failing disk: the receipt cannot be read, so nothing can be verified
        return None, [Difference("receipt", RECEIPT_FILE, f"cannot be read: {exc.strerror or exc}{hint}")]
    except ValueError as exc:   # too large, too deep, not UTF-8, not JSON: named by `canonical.read_json`
        return None, [Difference("receipt", RECEIPT_FILE, f"{str(exc).removeprefix(f'{path}: ')}{hint}")]
    if not isinstance(data, dict):
        return None, [Difference("receipt", RECEIPT_FILE, f"not a receipt: a JSON {type(data).__name__}{hint}")]
    try:
        model = ReceiptFile.model_validate(data).root
    except ValidationError as exc:
        return None, [Difference("receipt", RECEIPT_FILE, _schema_problem(exc))]
    if isinstance(model, Receipt):
        actual = content_digest(data)
        if actual != model.content_sha256:
            return model, [Difference("receipt", RECEIPT_FILE, f"content_sha256 {model.content_sha256[:12]}, its "
                                      f"content hashes to {actual[:12]}: edited after the seal")]
    return model, []


def _compare_files(model, tree: rootfiles.Tree) -> tuple[list[Difference], dict[str, tuple[str, int]]]:
    """The differences, and each file's (sha256, size) as read here: the journal's check reuses them."""
    out, digests = [], {}
    for rel in sorted(set(model.files) | set(tree.files)):
        if rel in tree.refused:
            continue
        if rel not in tree.files:
            out.append(Difference("missing", rel))
            continue
        if rel not in model.files:
            detail = INTERRUPTED_HINT if rel == LOCK_FILE else ""
            out.append(Difference("extra", rel, "not in the receipt" + (f"; {detail}" if detail else "")))
            continue
        entry, path = model.files[rel], tree.files[rel]
        try:
            digest, size = rootfiles.sha256_regular(path)
        except rootfiles.NotRegular as exc:   # swapped since the listing
            out.append(Difference("refused", rel, exc.strerror))
            continue
        except OSError as exc:                # a failing disk: that file cannot be verified, named
            out.append(Difference("refused", rel, f"cannot be read: {exc.strerror or exc}"))
            continue
        digests[rel] = (digest, size)
        if digest != entry.sha256 or size != entry.size:
            out.append(Difference("changed", rel, f"sha256 {digest[:12]} size {size}, "
                                                  f"receipt {entry.sha256[:12]} size {entry.size}"))
        if isinstance(model, Receipt):
            mode = rootfiles.mode_text(os.lstat(path).st_mode)
            if mode != entry.mode:
                out.append(Difference("mode", rel, f"{mode}, receipt {entry.mode}"))
    return out, digests


def _compare_folders(model: Receipt, tree: rootfiles.Tree) -> list[Difference]:
    out = []
    for rel in sorted(set(model.folders) | set(tree.folders)):
        if rel in tree.refused:
            continue
        if rel not in tree.folders:
            out.append(Difference("missing", rel + "/", "folder"))
        elif rel not in model.folders:
            out.append(Difference("extra", rel + "/", "folder not in the receipt"))
        else:
            mode = rootfiles.mode_text(os.lstat(tree.folders[rel]).st_mode)
            if mode != model.folders[rel]:
                out.append(Difference("mode", rel + "/", f"{mode}, receipt {model.folders[rel]}"))
    return out


def journal_differences(root: RunRoot, known: Mapping[str, tuple[str, int]] = journal.NONE_KNOWN) -> list[Difference]:
    """Each finished cell's files against the digests journalled as it ended (`campaign.contract.journal`);
    ``known``: the files' digests already taken (each file is read once)."""
    rows, _ = root.status()
    chained = root.prepare.journal == journal.CHAINED
    return [Difference("journal", rel, what) for rel, what in
            journalcheck.differences(root, status.with_evidence(rows), known, rows if chained else None)]


def unsettled(root: RunRoot) -> list[Difference]:
    """A sealed root that ran finished its matrix: on a chained root with status rows, each task without a
    row that settles it is named (its line and its row thinned out together leave the chain whole and the
    task unsettled). A root sealed before any cell ran (a test's, never a run's) has no rows to hold."""
    rows = root.status()[0] if root.prepare.journal == journal.CHAINED else []
    if not rows:
        return []
    settled = status.settled(rows)
    return [Difference("journal", journal.JOURNAL_FILE, f"task {task.id}: no row settles it, yet the root is sealed "
                       "(a line and its status row removed)")
            for task in root.matrix.tasks if task.id not in settled]


def journal_on_resume(root: RunRoot, prefix: str) -> list[str]:
    """Before a run measures anything in a root whose journal is chained: what a killed runner or a full
    disk left at its end dropped (`campaign.contract.journalcheck.repair`, said in the lines returned),
    then the journal itself checked (its chain, the prepared files, status.tsv's rows); any difference is
    refused (exit 5), nothing run."""
    if root.prepare.journal != journal.CHAINED:
        return []
    rows = root.status()[0]
    said = journalcheck.repair(root, rows)
    # the journal's own integrity; each finished cell's files are the seal's to compare, after the run
    found = [Difference("journal", rel, what) for rel, what in journalcheck.differences(root, set(), rows=rows)]
    if found:
        raise Refused(prefix, "journal", f"{root}: the journal does not hold this root ({len(found)}): "
                      + "; ".join(d.line() for d in found[:10]) + "; nothing was run", EXIT_VERIFY)
    return said


def check(root: RunRoot, leave_out: frozenset[str] = UNVERIFIED) -> Verification:
    model, problems = read_receipt(root)
    if model is None:
        return Verification(None, tuple(problems))
    tree = rootfiles.scan(root, leave_out)
    found = [Difference("refused", rel, what) for rel, what in tree.refused.items()]
    compared, digests = _compare_files(model, tree)
    found += compared
    if not tree.refused:     # never opens what the scan refused (a FIFO for status.tsv)
        # a path the receipt already disagrees with is named once; the journal adds what a receipt
        # rewritten over edited evidence (its own digest recomputed) agrees with
        named = {d.path for d in found}
        found += [d for d in journal_differences(root, digests) + unsettled(root) if d.path not in named]
    if isinstance(model, Receipt):
        found += _compare_folders(model, tree)
    return Verification(model, tuple(problems + sorted(found, key=lambda d: (d.path.rstrip("/"), d.kind))))


def verify_root(root: RunRoot) -> list[Difference]:
    """Every difference between a sealed root and its receipt; empty when it verifies."""
    return list(check(root).differences)


def require_sealed(root: RunRoot, prefix: str) -> None:
    """A folder holding a receipt; anything else is bad input (exit 2), named, before anything is read."""
    if not root.path.is_dir():
        raise Refused(prefix, "sealed", f"{root}: no such directory", EXIT_INPUT)
    if not root.sealed:
        raise Refused(prefix, "sealed", f"{root}: no {RECEIPT_FILE}: not a sealed root "
                      "(`campaign run` seals a root when its matrix is done)", EXIT_INPUT)


def older_schema(receipt, allowed: Collection[int] = ()) -> Optional[str]:
    """Why a receipt of an older schema is refused (None: current, or its version is in ``allowed``):
    a receipt downgraded to version 1 needs no digest of its own, so it is read only when asked for."""
    version = receipt.schema_version
    if version >= RECEIPT_VERSION or version in allowed:
        return None
    return (f"receipt: receipt.json (schema_version {version} is older than {RECEIPT_VERSION}: it records no "
            + ", ".join(receipt.unsupported()) + "; a receipt downgraded to it needs no digest of its own; "
            f"`--allow-schema {version}` verifies it with the checks it supports)")


def require_verified(root: RunRoot, prefix: str, allow_schema: Collection[int] = ()) -> Verification:
    """The one gate before anything is derived from a sealed root (report, attest, compare, reaccount,
    a rescore): refused (exit 5) where `campaign verify` fails -- a difference, or a receipt of an older
    schema not asked for with ``--allow-schema N`` -- naming the first differences."""
    verification = check(root)
    refused = older_schema(verification.receipt, allow_schema) if verification.receipt is not None else None
    if refused is not None:
        raise Refused(prefix, "verify", f"{root} does not verify (1 difference(s): {refused})", EXIT_VERIFY)
    if verification.differences:
        shown = "; ".join(d.line() for d in verification.differences[:5])
        raise Refused(prefix, "verify", f"{root} does not verify ({len(verification.differences)} difference(s): "
                      f"{shown})", EXIT_VERIFY)
    return verification


def writable_entries(root: RunRoot, verification: Verification) -> list[str]:
    """Entries writable again, a warning: the root itself (its mode is not recorded) and, under a
    receipt without modes, everything; a version-2 receipt reports the rest as mode differences."""
    paths = {".": root.path}
    if not isinstance(verification.receipt, Receipt):
        tree = rootfiles.scan(root, UNVERIFIED)
        paths.update({**tree.folders, **tree.files})
    return sorted(rel for rel, path in paths.items() if os.lstat(path).st_mode & 0o222)
