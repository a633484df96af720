"""What `run` checks before it starts anything: pure functions over recorded and present facts.

Each returns the problems it found (empty: the check passes); the session flow turns
the first failing check into ``RUN_REFUSED check=<name>: <detail>``. Discovery
(digests of the files on disk, installed versions, devices) happens in the
session flow (`campaign.flows.session`) and is passed in, so each check is tested
on plain values; `prepared_code_problems` alone reads this machine's files, the one way run, a Ray
node and a runner after a failed cell (`harness_drift`) take them. The version and device rules are
the worker's too (`campaign.contract.devicerule`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from campaign.backends.base import DeviceInfo
from campaign.contract.devicerule import device_mismatches, version_matches
from campaign.contract.manifest import Device, Pin, Sources
from campaign.contract.platforms import platform
from campaign.contract.rootrecords import Prepare
from campaign.planning import harness
from campaign.planning.harness import changed_files


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


def code_problems(prepared_root: Path, here: Path, recorded: dict[str, str],
                  digests: Callable[[], dict[str, str]]) -> Optional[tuple[str, str]]:
    """Whether this machine runs the code the root was prepared with: (check, detail) of the first
    difference, or None. The project root first, then the harness digests, which ``digests`` takes
    from this machine's files only once the root is the same one (elsewhere they are another tree's).
    The session checks it where it runs, and a Ray node again on its own machine."""
    if Path(prepared_root).resolve() != Path(here).resolve():
        return "project_root", f"prepared from {prepared_root}, this code is at {here}"
    drift = harness_problems(recorded, digests())
    return ("harness", "code changed since prepare: " + ", ".join(drift)) if drift else None


def prepared_code_problems(prepare: Prepare) -> Optional[tuple[str, str]]:
    """`code_problems` of the code this process runs (its project root and that tree's files) against
    the root's ``prepare``."""
    return code_problems(Path(prepare.project_root), harness.PROJECT_ROOT, prepare.harness,
                         lambda: harness.prepared_digests(harness.PROJECT_ROOT, prepare))


def harness_drift(prepare: Prepare) -> Optional[str]:
    """What `prepared_code_problems` found, as run's refusal words it; None: this code is the prepared
    code. About 1.5 s for the FlagGems suite's 515 harness files on a 2-core machine."""
    found = prepared_code_problems(prepare)
    return None if found is None else found[1]


def distribution_names(sources: Sources) -> dict[str, tuple[str, ...]]:
    """Pinned package -> distribution names to look it up by, in order."""
    triton = ("flagtree", "triton") if sources.triton_flavor == "flagtree" else ("triton",)
    return {"triton": triton, "torch": ("torch",), "flag_gems": ("flag_gems",)}


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
    if not platform(device.backend).executes:
        return []  # nothing to enumerate: the target is declared, compiled for offline
    if not present:
        return [f"no {device.backend} device is visible"]
    first = present[0]
    wrong = device_mismatches(device, first.name, first.uuid, first.target)
    worded = {"uuid": f"uuid {first.uuid} is not the manifest's {device.uuid}",
              "name": f"name {first.name!r} is not the manifest's {device.name!r}",
              "target": f"target {first.target} is not the manifest's {device.target}"}
    return [f"device {first.index}: {worded[field]}" for field in ("uuid", "name", "target") if field in wrong]
