"""Check a manifest as prepare does, and freeze it into a run root.

`check` runs every check, the pinned source root's and the harness digests' included (`campaign validate` stops
there: every file a cell would read is read once, as prepare reads it); `freeze` makes the root:
the manifest byte for byte, matrix.json and prepare.json (digests of the manifest,
the inventory and every harness file, taken before anything runs). A refusal
raises before anything is written; a failed write leaves no root behind.
"""
from __future__ import annotations

import dataclasses
import platform
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from campaign import __version__
from campaign.contract import canonical, faults, journal, yamlio, yamlwrite
from campaign.contract.artifacts import MANIFEST_FILE, MATRIX_FILE, PREPARE_FILE, SCHEMA_VERSION, first_free
from campaign.contract.errors import PREPARE_REFUSED, Refused
from campaign.contract.manifest import Manifest
from campaign.contract.plans import Matrix
from campaign.contract.rootrecords import InstalledCode, Prepare, Shard
from campaign.contract.runroot import RunRoot
from campaign.planning import harness, installedcode, inventory, pinning, shards
from campaign.planning.matrix import expand
from campaign.planning.resolve import Resolved, resolve
from campaign.sealing import rootfiles, verification


@dataclass(frozen=True)
class Checked:
    manifest_path: Path
    manifest: Manifest
    resolved: dict[str, Resolved]
    matrix: Matrix
    digests: dict[str, str]              # harness file -> sha256: what prepare records, read once by `check`
    pinned: dict[str, Path] = dataclasses.field(default_factory=dict)   # workload -> its recording to replay

    @property
    def notes(self) -> tuple[str, ...]:
        """What was not checked statically (a node id's parameters), for validate and prepare to say."""
        return tuple(note for found in self.resolved.values() for note in found.notes)


class SourceSeal:
    """The sealing stage's answers about a pinned source root (`campaign.planning.pinning.SourceSeal`)."""

    def receipt_digest(self, receipt: Path) -> str:
        return rootfiles.sha256_regular(receipt)[0]

    def differences(self, source: RunRoot) -> list[str]:
        return [d.line() for d in verification.check(source).differences]


def check(manifest_path: Path, project_root: Path = harness.PROJECT_ROOT) -> Checked:
    """Every check prepare runs; raises CampaignError, writes nothing."""
    manifest = yamlio.validate(Manifest, manifest_path)
    _, document = yamlio.load(manifest_path)
    known = inventory.load(project_root / "ops")
    resolved = resolve(manifest, known, project_root, str(manifest_path), document)
    matrix = expand(manifest, resolved)
    pinned = pinning.recordings(manifest, manifest_path, project_root, SourceSeal())
    # the targets' files, conftest.py chain and pytest configuration are harness files too
    digests = harness.recorded_digests(project_root, resolved_targets(resolved))
    return Checked(manifest_path, manifest, resolved, matrix, digests, pinned)


def resolved_targets(resolved: dict[str, Resolved]) -> dict[str, dict[str, Any]]:
    """prepare.json's ``resolved_targets``: what each workload's cells read, as recorded."""
    return {
        name: {
            "benchmark": found.targets.benchmark,
            "correctness": found.targets.correctness,
            "correctness_node_ids": list(found.targets.correctness_node_ids or ()),
            "correctness_k": found.targets.correctness_k,
            "dtypes": list(found.dtypes),
            "shapes": list(found.shapes) if found.shapes is not None else None,
            "family": found.family,
            # only when set: a root without one keeps the bytes it had
            **({"shape_file": found.targets.shape_file} if found.targets.shape_file else {}),
            **({"rootdir": found.targets.rootdir, "data": list(found.targets.data)} if found.targets.rootdir else {}),
        }
        for name, found in sorted(resolved.items())
    }


def claim_root(runs_dir: Path, campaign: str, now: datetime) -> Path:
    """Create a new, unique root atomically: two prepares in one second get two roots."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    base = f"{campaign}-{now.strftime('%Y%m%dT%H%M%SZ')}"
    return first_free(lambda n: runs_dir / (base if n == 1 else f"{base}-{n}"), Path.mkdir)


def prepare_record(checked: Checked, project_root: Path, now: datetime, mode: str = "campaign",
                   shard: Optional[ShardText] = None) -> dict[str, Any]:
    manifest_sha256 = (canonical.sha256_file(checked.manifest_path) if shard is None
                       else canonical.sha256_bytes(shard.text.encode("utf-8")))
    return Prepare.model_validate({
        "schema_version": SCHEMA_VERSION,
        "campaign": checked.manifest.campaign,
        "mode": mode,                    # "campaign" | "screen" (one round, `campaign screen`)
        "created_utc": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "project_root": str(project_root),
        "manifest_source": str(checked.manifest_path),
        "manifest_sha256": manifest_sha256,
        "inventory_sha256": canonical.sha256_file(project_root / "ops" / "inventory.csv"),
        "harness": checked.digests,
        "harness_digest": harness.combined_digest(checked.digests),
        "tool_version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "tasks": len(checked.matrix.tasks),
        "resolved_targets": resolved_targets(checked.resolved),
        "installed": installed_record().dump(),
        "journal": journal.CHAINED,      # digests.jsonl's first line is written right after this file
        **({"shard": shard.record.dump()} if shard is not None else {}),
    }).dump()


def installed_record() -> InstalledCode:
    """The installed packages checked against their RECORD, and the start-up code, as a cell will run them."""
    try:
        return installedcode.record(installedcode.verified_dir())
    except ValueError as exc:
        raise Refused(PREPARE_REFUSED, "installed", f"{exc}: the installed package differs from its own "
                      "RECORD; reinstall it (pip install --force-reinstall) and prepare again") from None


def freeze(checked: Checked, runs_dir: Path, project_root: Path = harness.PROJECT_ROOT, mode: str = "campaign",
           shard: Optional[ShardText] = None, now: Optional[datetime] = None) -> Path:
    """A campaign root is named ``<campaign>-<stamp>``, a shard's ``<campaign>-shard<k>of<n>-<stamp>``,
    any other mode ``<campaign>-<mode>-<stamp>``. A shard's root holds its own manifest text; the shards
    of one set share ``now``, so one stamp names them."""
    now = now or datetime.now(timezone.utc)
    record = prepare_record(checked, project_root, now, mode, shard)
    name = checked.manifest.campaign if mode == "campaign" else f"{checked.manifest.campaign}-{mode}"
    name += f"-shard{shard.record.index}of{shard.record.of}" if shard is not None else ""
    again = f"`campaign {'prepare' if mode == 'campaign' else mode} {checked.manifest_path}` makes a new root"
    try:
        root = claim_root(runs_dir, name, now)
    except OSError as exc:     # a read-only or full runs dir: named, as a run's write faults are
        raise faults.write_failed(exc, again, PREPARE_REFUSED, "no root was made") from None
    try:
        with faults.naming(root):
            if shard is None:
                shutil.copyfile(checked.manifest_path, root / MANIFEST_FILE)
            else:
                canonical.write_new(root / MANIFEST_FILE, shard.text)
            canonical.write_json_new(root / MATRIX_FILE, checked.matrix.model_dump(mode="json"))
            canonical.write_json_new(root / PREPARE_FILE, record)
            made = RunRoot(root)
            pinning.pin(checked.pinned, made)
            journal.open_root(made, (MANIFEST_FILE, MATRIX_FILE))
    except OSError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise faults.write_failed(exc, again, PREPARE_REFUSED, "the root begun is removed") from None
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return root


@dataclass(frozen=True)
class ShardText:
    """A shard's record and its manifest: the whole one's text, its workloads narrowed to the shard's."""

    record: Shard
    text: str


def narrowed(checked: Checked, names: Sequence[str], project_root: Path = harness.PROJECT_ROOT) -> Checked:
    """``checked`` as if its manifest listed only ``names``: their resolved targets, matrix, recordings and
    harness digests. The digests are the whole manifest's as `check` read them once, less the files only
    other workloads' targets read: `run` digests the files its own prepare.json's targets name, so a
    shard that kept another shard's files would read them as removed and refuse to run."""
    manifest = checked.manifest.model_copy(
        update={"workloads": tuple(w for w in checked.manifest.workloads if w.name in names)})
    resolved = {name: found for name, found in checked.resolved.items() if name in names}
    targets = resolved_targets(resolved)
    read = {harness.harness_name(project_root, path) for path in harness.harness_files(
        project_root, harness.record_targets(targets), harness.record_own(targets))}
    return dataclasses.replace(checked, manifest=manifest, resolved=resolved, matrix=expand(manifest, resolved),
                               pinned={name: path for name, path in checked.pinned.items() if name in names},
                               digests={name: digest for name, digest in checked.digests.items() if name in read})


def freeze_shards(checked: Checked, runs_dir: Path, split: shards.Split,
                  project_root: Path = harness.PROJECT_ROOT, mode: str = "campaign",
                  shaped: Callable[[Checked], Checked] = lambda part: part) -> list[Path]:
    """One root a shard, each a prepared root of its own workloads; all or none (a failed shard
    removes the roots made before it). ``mode`` and ``shaped`` (each shard's own check, as its mode's
    matrix needs it: a screen's IR pass) as `freeze` takes them for a whole root."""
    whole = canonical.sha256_file(checked.manifest_path)
    now = datetime.now(timezone.utc)
    roots: list[Path] = []
    try:
        for index, names in enumerate(split.workloads, start=1):
            _, document = yamlio.load(checked.manifest_path)
            text = yamlwrite.kept(document, "workloads", frozenset(names).__contains__, "name")
            part = narrowed(checked, names, project_root)
            if Manifest.model_validate(yamlio.load_text(text, f"shard {index}")[0]) != part.manifest:
                raise AssertionError(f"shard {index}'s manifest text does not read back as its workloads")
            roots.append(freeze(shaped(part), runs_dir, project_root, mode=mode,
                                shard=ShardText(split.shard(index, whole), text), now=now))
    except BaseException:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
        raise
    return roots