"""The harness: every project file whose bytes can change what a cell measures.

Digests are taken at prepare, before anything runs (a changed input recorded
after the fact is recorded silently), and compared again before `run` starts.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from campaign.canonical import sha256_file

PROJECT_ROOT = Path(__file__).resolve().parent.parent
HARNESS_DIRS = ("campaign", "worker", "plugins", "reaccount", "ops")
HARNESS_SUFFIXES = {".py", ".csv", ".yaml", ".yml", ".json", ".toml"}
HARNESS_FILES = ("pyproject.toml",)


def harness_files(project_root: Path = PROJECT_ROOT) -> list[Path]:
    files = [project_root / name for name in HARNESS_FILES if (project_root / name).is_file()]
    for folder in HARNESS_DIRS:
        base = project_root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.suffix in HARNESS_SUFFIXES and "__pycache__" not in path.parts:
                files.append(path)
    return files


def harness_digests(project_root: Path = PROJECT_ROOT) -> dict[str, str]:
    """Relative path -> SHA-256 of every harness file."""
    return {path.relative_to(project_root).as_posix(): sha256_file(path) for path in harness_files(project_root)}


def combined_digest(digests: dict[str, str]) -> str:
    lines = "".join(f"{name}\t{digest}\n" for name, digest in sorted(digests.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def changed_files(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """Names added, removed or changed between two digest maps, sorted."""
    names = set(recorded) | set(current)
    return sorted(name for name in names if recorded.get(name) != current.get(name))
