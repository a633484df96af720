"""Finding the prepared, unsealed run roots under a folder, from their prepare.json (what a root was
prepared for is `campaign.contract.runroot.RunRoot.mode`)."""
from __future__ import annotations

from pathlib import Path

from campaign.contract.errors import InputError
from campaign.contract.runroot import RunRoot


def prepared_roots(runs_dir: Path) -> list[Path]:
    """Prepared, unsealed campaign roots under runs_dir, newest first (prepare time, then name).

    A root another command prepared for itself (``mode`` other than campaign: a screen) is left out;
    one whose prepare.json cannot be read is kept (as a campaign prepared at an unknown time), so
    `campaign run` names what is wrong with it rather than passing it over."""
    if not runs_dir.is_dir():
        return []
    found = []
    for folder in runs_dir.iterdir():
        root = RunRoot(folder)
        if not root.prepared or root.sealed:
            continue
        try:
            mode, created = root.prepare.mode, root.prepare.created_utc
        except InputError:
            mode, created = "campaign", ""
        if mode == "campaign":
            found.append((created, root.name, folder))
    return [folder for _, _, folder in sorted(found, reverse=True)]
