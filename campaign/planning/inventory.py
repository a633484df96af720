"""ops/inventory.csv and ops/dismiss.csv: the workloads the project knows, and those it set aside.

inventory.csv columns: op, provider, family, benchmark, correctness, dtypes
(space-separated). dismiss.csv columns: op, provider, reason -- an entry
without a reason is refused, so every exclusion stays visible in review.
dismiss_upstream.csv columns: item, marks, reason -- a FlagGems checkout's benchmark
item (``benchmark/file.py::function``, relative to the checkout) known to be broken, for
the op marks listed (space-separated; empty: every mark of the item). The file is optional:
a project without FlagGems checkouts needs none.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from campaign.contract.errors import InputError

INVENTORY_COLUMNS = ("op", "provider", "family", "benchmark", "correctness", "dtypes")
DISMISS_COLUMNS = ("op", "provider", "reason")
UPSTREAM_DISMISS_COLUMNS = ("item", "marks", "reason")
UPSTREAM_DISMISS_FILE = "dismiss_upstream.csv"


@dataclass(frozen=True)
class Entry:
    op: str
    provider: str
    family: str
    benchmark: str
    correctness: str
    dtypes: tuple[str, ...]


@dataclass(frozen=True)
class Inventory:
    entries: dict[tuple[str, str], Entry]
    dismissed: dict[tuple[str, str], str]       # (op, provider) -> reason
    upstream_dismissed: dict[tuple[str, str], str] = field(default_factory=dict)   # (item, mark or "") -> reason

    def get(self, op: str, provider: str) -> Entry | None:
        return self.entries.get((op, provider))

    def upstream_reason(self, item: str, mark: str) -> str | None:
        """Why a checkout's benchmark item is dismissed for ``mark``, or None."""
        return self.upstream_dismissed.get((item, mark)) or self.upstream_dismissed.get((item, ""))


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    try:
        handle = open(path, encoding="utf-8", newline="")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    with handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != columns:
            raise InputError(f"{path}:1: columns {reader.fieldnames} are not {list(columns)}")
        return [(reader.line_num, {k: (v or "").strip() for k, v in row.items()}) for row in reader]


def load(ops_dir: Path) -> Inventory:  # noqa: C901 (one CSV's columns, each validated where it is read)
    problems: list[str] = []
    entries: dict[tuple[str, str], Entry] = {}
    inventory_path = Path(ops_dir) / "inventory.csv"
    for line, row in _rows(inventory_path, INVENTORY_COLUMNS):
        key = (row["op"], row["provider"])
        missing = [c for c in INVENTORY_COLUMNS if not row[c]]
        if missing:
            problems.append(f"{inventory_path}:{line}: {', '.join(missing)} empty")
        elif key in entries:
            problems.append(f"{inventory_path}:{line}: {key[0]} ({key[1]}) is listed twice")
        else:
            entries[key] = Entry(row["op"], row["provider"], row["family"], row["benchmark"],
                                 row["correctness"], tuple(row["dtypes"].split()))
    dismissed: dict[tuple[str, str], str] = {}
    dismiss_path = Path(ops_dir) / "dismiss.csv"
    for line, row in _rows(dismiss_path, DISMISS_COLUMNS):
        if len(row["reason"]) < 8:
            problems.append(f"{dismiss_path}:{line}: {row['op']} is dismissed without a reason")
        else:
            dismissed[(row["op"], row["provider"])] = row["reason"]
    upstream: dict[tuple[str, str], str] = {}
    upstream_path = Path(ops_dir) / UPSTREAM_DISMISS_FILE
    for line, row in (_rows(upstream_path, UPSTREAM_DISMISS_COLUMNS) if upstream_path.is_file() else []):
        if len(row["reason"]) < 8:
            problems.append(f"{upstream_path}:{line}: {row['item']} is dismissed without a reason")
        elif "::" not in row["item"]:
            problems.append(f"{upstream_path}:{line}: item {row['item']!r} is not file.py::function")
        else:
            for mark in row["marks"].split() or [""]:
                upstream[(row["item"], mark)] = row["reason"]
    if problems:
        raise InputError(problems)
    return Inventory(entries, dismissed, upstream)
