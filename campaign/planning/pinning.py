"""Configs pinned across roots: ``defaults.autotune_from`` replays what an earlier sealed root
recorded, so a screen and its campaign (or two campaigns) time the same autotune winners.

Two tuning runs pick different winners (H200 mm: 128x128x64 s3 in a screen, 128x64x64 s4
in its campaign; one bmm shape measured +16.7 % with one winner and +1-2 % with the
other), so without this a screen does not predict its campaign, and every campaign pays
its own recording. The manifest names the source root and the SHA-256 of its
receipt.json; that one digest pins every file of the root, because the receipt holds
each file's digest and its own.

`recordings` (called by `campaign.flows.freeze.check`, for validate and prepare alike) refuses, naming the manifest's file,
line and key, unless: the source holds a receipt.json hashing to ``receipt_sha256``; the
root verifies against it (the sealing stage's answers, handed in as a `SourceSeal` by the flow: any
changed, missing or extra file is named, exit 5); and every workload of the new manifest has a finished recording
there. `pin` (prepare's) copies each recording -- the recording cell's autotune.json and, where that cell
ran a correctness session, autotune-correctness.json; a source that was itself pinned
hands on its own copy -- to ``<root>/autotune_from/<workload>/``, sealed with the new root.
Every task then replays ``autotune_from/<workload>`` (`campaign.planning.matrix`; no cell
records, nothing is re-tuned), and each cell records the receipt digest as its
``autotune_from`` caliber field (`campaign.judging.caliber`).
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Optional, Protocol

from campaign.contract import yamlio
from campaign.contract.artifacts import AUTOTUNE_CORRECTNESS_FILE, AUTOTUNE_FILE
from campaign.contract.errors import EXIT_INPUT, EXIT_VERIFY, PREPARE_REFUSED, CampaignError, InputError
from campaign.contract.manifest import Manifest
from campaign.contract.plans import IR_ROUND, Matrix
from campaign.contract.runroot import RunRoot
from campaign.contract.suggest import did_you_mean

PINNED_DIR = "autotune_from"
CHECK = "autotune_from"
LOC = ("defaults", "autotune_from")
RECORDING_FILES = (AUTOTUNE_FILE, AUTOTUNE_CORRECTNESS_FILE)


def pinned_source(workload: str) -> str:
    """The replay source of every task of a pinned workload: a folder of the root, not a task."""
    return f"{PINNED_DIR}/{workload}"


def recording_dir(root: RunRoot, source: str) -> Path:
    """Where a replay source's recording lies: the pinned copy, or the recording task's cell."""
    parts = source.split("/")
    if len(parts) == 2 and parts[0] == PINNED_DIR:
        return root / source
    return root.cell(source)


def source_root(spec, project_root: Path) -> Path:
    path = Path(spec.root)
    return path if path.is_absolute() else Path(project_root) / path


class SourceSeal(Protocol):
    """What pinning asks the sealing stage about a source root. The flow hands one in
    (`campaign.flows.freeze`): planning never imports sealing, which imports planning."""

    def receipt_digest(self, receipt: Path) -> str:
        """The receipt's SHA-256; OSError when it is not a readable regular file."""

    def differences(self, source: RunRoot) -> list[str]:
        """One line per file of the source root that does not verify against its receipt."""


class _Refusal:
    """``PREPARE_REFUSED check=autotune_from: <manifest>:<line>:<col>: defaults -> autotune_from -> <key>: …``."""

    def __init__(self, manifest_path: Path):
        self.manifest_path = manifest_path
        _, self.document = yamlio.load(manifest_path)

    def __call__(self, key: str, detail: str, exit_code: int = EXIT_INPUT) -> CampaignError:
        loc = LOC + (key,)
        line, col = yamlio.position(self.document, loc)
        where = " -> ".join(loc)
        return CampaignError(f"{PREPARE_REFUSED} check={CHECK}: {self.manifest_path}:{line}:{col}: {where}: {detail}",
                             exit_code)


def _verified_source(spec, source: RunRoot, seal: SourceSeal, refuse: _Refusal) -> Matrix:
    receipt = source.receipt_file
    if not source.path.is_dir():
        raise refuse("root", f"{source}: not a folder")
    try:
        digest = seal.receipt_digest(receipt)
    except OSError as exc:
        raise refuse("root", f"{receipt}: no readable receipt ({getattr(exc, 'strerror', exc)}): only a sealed "
                             "root's configs can be pinned")
    if digest != spec.receipt_sha256:
        raise refuse("receipt_sha256", f"{receipt} hashes to {digest}, the manifest pins {spec.receipt_sha256}: "
                                       "not the root the manifest names", EXIT_VERIFY)
    differences = seal.differences(source)
    if differences:
        shown = "; ".join(differences[:5])
        raise refuse("root", f"{source} does not verify against its receipt ({len(differences)} difference(s): "
                             f"{shown})", EXIT_VERIFY)
    try:
        return source.matrix
    except InputError as exc:
        raise refuse("root", str(exc), EXIT_VERIFY) from None


def _recording(source: RunRoot, matrix: Matrix, workload: str, refuse: _Refusal) -> Path:
    tasks = [t for t in matrix.tasks if t.workload == workload]
    if not tasks:
        names = {t.workload for t in matrix.tasks}
        raise refuse("root", f"{source} has no workload {workload!r}{did_you_mean(workload, names)} (it has: "
                             f"{', '.join(sorted(names))}): nothing recorded to replay")
    # a screen root's IR pass (round 0) records only each kernel's first config: its round 1 recorded
    # the winners it timed, and those are what a campaign pinned to it replays
    recorders = [t for t in tasks if t.autotune.mode == "record"]
    preferred = [t for t in recorders if t.round != IR_ROUND] or recorders
    recorder: Optional[str] = preferred[0].id if preferred else None
    folder = source.cell(recorder) if recorder else recording_dir(source, tasks[0].autotune.source or "")
    if not (folder / AUTOTUNE_FILE).is_file():
        raise refuse("root", f"{folder / AUTOTUNE_FILE}: missing: the recording of {workload!r} did not finish "
                             "in the source root")
    return folder


def recordings(manifest: Manifest, manifest_path: Path, project_root: Path, seal: SourceSeal) -> dict[str, Path]:
    """Verify the source root; each workload's recording folder there ({} unpinned). Validate runs this
    as prepare does (`campaign.flows.freeze.check`), so a source that prepare refuses validate refuses."""
    spec = manifest.defaults.autotune_from
    if spec is None:
        return {}
    refuse = _Refusal(Path(manifest_path))
    source = RunRoot(source_root(spec, project_root))
    matrix = _verified_source(spec, source, seal, refuse)
    return {w.name: _recording(source, matrix, w.name, refuse) for w in manifest.workloads}


def pin(folders: dict[str, Path], root: RunRoot) -> None:
    """Copy every workload's recording (`recordings`) into ``root``; no-op unpinned."""
    for workload, folder in sorted(folders.items()):
        target = root / pinned_source(workload)
        target.mkdir(parents=True)
        for name in RECORDING_FILES:
            if (folder / name).is_file():
                shutil.copyfile(folder / name, target / name)
