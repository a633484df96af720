"""The parent's reading of what a worker left in a cell folder: its one result file, a log's last line."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from campaign.contract import canonical
from campaign.contract.cellfiles import CellResult


def read_result(path: Path) -> tuple[Optional[CellResult], str]:
    """The worker's one result file, or why there is none; a missing file is a row, never a crash."""
    if not path.is_file():
        return None, "no result.json"
    try:
        return CellResult.model_validate(canonical.read_json(path)), ""
    except (ValueError, OSError) as exc:
        return None, f"result.json unreadable: {str(exc).splitlines()[0][:200]}"


def tail(path: Path, limit: int = 240) -> str:
    try:
        lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return f"{path.name} unreadable"
    return f"{path.name}: {lines[-1][-limit:]}" if lines else f"{path.name} empty"
