"""Finding run roots and what they were prepared for, from their prepare.json."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from campaign.contract.artifacts import PREPARE_FILE, RECEIPT_FILE
from campaign.contract.canonical import read_json


def root_mode(root: Path) -> Optional[str]:
    """The command a root was prepared for (prepare.json ``mode``, "campaign" when unnamed);
    None when the folder holds no prepare.json."""
    if not (root / PREPARE_FILE).is_file():
        return None
    return read_json(root / PREPARE_FILE).get("mode", "campaign")


def prepared_roots(runs_dir: Path) -> list[Path]:
    """Prepared, unsealed campaign roots under runs_dir, newest first (prepare time, then name).

    A root another command prepared for itself (``mode`` other than campaign: a screen) is left out."""
    if not runs_dir.is_dir():
        return []
    found = []
    for root in runs_dir.iterdir():
        if (root / PREPARE_FILE).is_file() and not (root / RECEIPT_FILE).exists():
            try:
                record = read_json(root / PREPARE_FILE)
            except ValueError:
                record = {}
            if record.get("mode", "campaign") != "campaign":
                continue
            found.append((str(record.get("created_utc", "")), root.name, root))
    return [root for _, _, root in sorted(found, reverse=True)]
