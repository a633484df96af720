"""What `run` checks before it starts anything: pure functions over recorded and present facts.

Each returns the problems it found (empty: the check passes); the command turns
the first failing check into ``RUN_REFUSED check=<name>: <detail>``. Discovery
(digests of the files on disk, installed versions, devices) happens in the
command and is passed in, so each check is tested on plain values.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Optional

from campaign.contract.artifacts import PREPARE_FILE, RECEIPT_FILE
from campaign.backends.base import DeviceInfo, same_uuid
from campaign.contract.canonical import read_json
from campaign.planning.harness import changed_files
from campaign.contract.manifest import Device, Pin, Sources


def harness_problems(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """Harness files added, removed or changed since prepare, each named."""
    problems = []
    for name in changed_files(recorded, current):
        if name not in current:
            problems.append(f"{name} (removed since prepare)")
        elif name not in recorded:
            problems.append(f"{name} (added since prepare)")
        else:
            problems.append(f"{name} (changed since prepare)")
    return problems


def distribution_names(sources: Sources) -> dict[str, tuple[str, ...]]:
    """Pinned package -> distribution names to look it up by, in order."""
    triton = ("flagtree", "triton") if sources.triton_flavor == "flagtree" else ("triton",)
    return {"triton": triton, "torch": ("torch",), "flag_gems": ("flag_gems",)}


def installed_versions(sources: Sources) -> dict[str, Optional[str]]:
    """Installed version of each pinned package, read from metadata (nothing is imported)."""
    found: dict[str, Optional[str]] = {}
    for package, names in distribution_names(sources).items():
        found[package] = None
        for name in names:
            try:
                found[package] = importlib.metadata.version(name)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    return found


def version_matches(pin: str, installed: str) -> bool:
    """Equal, or equal in the public version where one side carries no local build label.

    The runner reads package metadata and the worker the imported module, and the two
    can disagree on the label alone: on the GPU host torch's metadata says 2.11.0 while
    ``torch.__version__`` says 2.11.0+cu130. Two different labels never match.
    """
    if pin == installed:
        return True
    if "+" in pin and "+" in installed:
        return False
    return pin.split("+", 1)[0] == installed.split("+", 1)[0]


def version_problems(sources: Sources, installed: dict[str, Optional[str]]) -> list[str]:
    pins: dict[str, Optional[Pin]] = {"triton": sources.triton, "torch": sources.torch,
                                      "flag_gems": sources.flag_gems}
    problems = []
    for package, pin in pins.items():
        if pin is None or pin.version is None:
            continue
        have = installed.get(package)
        if have is None:
            problems.append(f"{package}: manifest pins {pin.version}, not installed")
        elif not version_matches(pin.version, have):
            problems.append(f"{package}: manifest pins {pin.version}, installed {have}")
    return problems


def device_problems(device: Device, present: list[DeviceInfo]) -> list[str]:
    """The first visible device (the one every cell runs on) against the manifest's."""
    if device.backend == "cpu":
        return []  # nothing to enumerate: the target is declared, compiled for offline
    if not present:
        return [f"no {device.backend} device is visible"]
    first = present[0]
    problems = []
    if device.uuid is not None and not same_uuid(first.uuid, device.uuid):
        problems.append(f"uuid {first.uuid} is not the manifest's {device.uuid}")
    if device.name is not None and first.name != device.name:
        problems.append(f"name {first.name!r} is not the manifest's {device.name!r}")
    if first.target != device.target:
        problems.append(f"target {first.target} is not the manifest's {device.target}")
    return [f"device {first.index}: {problem}" for problem in problems]


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
