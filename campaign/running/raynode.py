"""The node side of a Ray task (`campaign.running.rayexec`): one workload's group, run where Ray put it.

The head sends what a runner reads from a root -- its top-level files, ``autotune_from/``, the
workload's settled cell folders and status rows -- as one tar through the object store.
Here they are unpacked into a staging root on the node's own disk, the node's code is
checked against the prepared digests (a node with other code would measure other code),
the node's own bytecode store seeds the workers' prefix (`campaign.running.bytecode.reused`),
and `campaign.running.cards.run_group` runs the group exactly as on one host: the same
worker subprocess per cell, resume, adaptive rounds, a telemetry sampler on the card Ray
assigned (on a compile-only backend no card: the task asked a CPU, and its rows name none). What comes back is a tar of the new cell folders, the new status rows, and the
card's telemetry samples and sampler errors (each sample's device named ``<id>@<node>``:
two nodes' card 0 are two devices); the head unpacks the folders into its root, refusing
any path outside ``cells/``, appends the samples to its telemetry.tsv, then the rows, and
seals once. No shared filesystem is needed.

Tars hold regular files and folders only: a link, a device or a path that climbs out is
refused by name (`unpack`), so a node can never write outside the head's ``cells/``.
"""
from __future__ import annotations

import dataclasses
import functools
import io
import os
import shutil
import socket
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Optional

from campaign.backends import get_backend
from campaign.backends.plan import plugin_plan
from campaign.contract import status
from campaign.contract.artifacts import CELLS_DIR, INTERRUPTED_SUFFIX, first_free
from campaign.contract.errors import RUN_REFUSED, Refused
from campaign.contract.manifest import Manifest
from campaign.contract.plans import Matrix
from campaign.contract.rootrecords import Prepare
from campaign.contract.runroot import RunRoot
from campaign.contract.telemetryfile import COLUMNS
from campaign.planning.cardplan import Card
from campaign.running import bytecode, runchecks, workerlaunch
from campaign.running.cards import run_group
from campaign.running.cellenv import pinned_env
from campaign.running.telemetry import Sampler, make_source, visible_devices

PREFIX = RUN_REFUSED
CPU_TASK_CORES = 1          # what a compile-only task asks its node for (`rayexec`), and all its worker's threads get


def pack(base: Path, names: Iterable[str]) -> bytes:
    """A tar of ``base/<name>`` for each name (files and folders, recursively), paths relative to base."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in names:
            tar.add(base / name, arcname=name, recursive=True)
    return buffer.getvalue()


def unpack(data: bytes, into: Path, allowed: Callable[[tuple[str, ...]], bool], source: str) -> list[str]:
    """Write the tar's folders and regular files under ``into``; the top-level names written.

    Every member is checked before anything is written: a relative path without ``..``
    that ``allowed`` accepts, and a plain file or folder. Files are created exclusively,
    so nothing already in ``into`` is overwritten.
    """
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        members = tar.getmembers()
        for member in members:
            parts = PurePosixPath(member.name).parts
            if (member.name.startswith("/") or not parts or any(p in ("..", ".", "") for p in parts)
                    or not allowed(parts)):
                raise Refused(PREFIX, "ray_cells", f"{source}: {member.name!r} is outside what it may write "
                              f"(cells/ of its own tasks); nothing of it was unpacked")
            if not (member.isfile() or member.isdir()):
                raise Refused(PREFIX, "ray_cells", f"{source}: {member.name!r} is not a regular file or folder; "
                              "nothing of it was unpacked")
        for member in sorted(members, key=lambda m: m.name):
            target = into.joinpath(*PurePosixPath(member.name).parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, open(target, "xb") as out:
                shutil.copyfileobj(src, out)
            os.chmod(target, member.mode & 0o755)
    return sorted({PurePosixPath(m.name).parts[0] for m in members})


def own_cells(parts: tuple[str, ...], task_ids) -> bool:
    """Whether a tar member is a workload's own: ``cells/``, a folder above one of its task folders,
    a task folder (set aside or not) or something inside one."""
    if not parts or parts[0] != CELLS_DIR:
        return False
    rel = "/".join(parts[1:])
    return rel == "" or any(task_id.startswith(rel + "/") or rel == task_id or rel.startswith(task_id + "/")
                            or rel.startswith(task_id + INTERRUPTED_SUFFIX) for task_id in task_ids)


def place(folder: Path, cells: Path) -> None:
    """Move a node's cell folder into its place under the root's cells/ (``cells``: the folder that
    holds it); a set-aside one takes the head's first free name."""
    cells.mkdir(parents=True, exist_ok=True)
    base = folder.name.split(INTERRUPTED_SUFFIX)[0]
    if INTERRUPTED_SUFFIX not in folder.name:
        if (cells / folder.name).exists():
            raise Refused(PREFIX, "ray_cells", f"{cells / folder.name} exists on the head: a node's cell "
                          "folder never replaces one")
        shutil.move(str(folder), str(cells / folder.name))
        return

    def take(target: Path) -> None:
        if target.exists():
            raise FileExistsError(target)
        shutil.move(str(folder), str(target))
    first_free(lambda n: cells / f"{base}{INTERRUPTED_SUFFIX}{n}", take)


def task_folders(root: RunRoot, task_ids: Iterable[str]) -> list[str]:
    """The cell folders of ``task_ids`` under ``root``, set-aside ones too, as root-relative paths."""
    found: list[str] = []
    for task_id in task_ids:
        folder = root.cell(task_id)
        if folder.parent.is_dir():
            found += [f"{CELLS_DIR}/{task_id}{p.name[len(folder.name):]}" for p in folder.parent.iterdir()
                      if p.is_dir() and (p.name == folder.name or p.name.startswith(folder.name + INTERRUPTED_SUFFIX))]
    return sorted(found)


def card_here(backend) -> Optional[Card]:
    """The card Ray assigned this task: the first visible device (one per task; `_check_node` has
    seen one). None on a compile-only backend: its task asked a CPU, and its rows name no card, as
    a one-card run's on one host."""
    if not backend.capabilities.executes:
        return None
    device = backend.enumerate_devices()[0]
    return Card(slot=0, index=device.index, uuid=device.uuid, name=device.name)


def _check_node(prepare: Prepare, manifest: Manifest, backend) -> None:
    """The session's checks that depend on the machine, taken again on this node."""
    here = socket.gethostname()
    different = runchecks.prepared_code_problems(prepare)
    if different is not None:
        raise RuntimeError(f"node {here}: {different[1]} (every node runs the code the root was prepared with, "
                           "at the same path)")
    devices = backend.enumerate_devices() if backend.capabilities.executes else []
    problems = runchecks.device_problems(manifest.device, devices)
    if problems:
        raise RuntimeError(f"node {here}: device: {'; '.join(problems)}")


class NodeSource:
    """The card's telemetry source, its samples' device named with the node: the head's
    telemetry.tsv holds every node's cards, and device ids repeat from node to node."""

    def __init__(self, source, node: str):
        self.source, self.node = source, node

    def read(self, t: float) -> list:
        return [dataclasses.replace(s, device=f"{s.device}@{self.node}") for s in self.source.read(t)]


def _samples(tsv: Path) -> str:
    """The sampler's table without its header line ('' when it never started)."""
    if not tsv.is_file():
        return ""
    return "".join(tsv.read_text(encoding="utf-8").splitlines(keepends=True)[1:])


class _Notes:
    """The node's progress events: nothing is drawn there; notes go back to the head."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def started(self, tasks, rows, pace=None) -> None:
        pass

    def cell_started(self, task) -> None:
        pass

    def cell_ended(self, task, row, settled: bool = True) -> None:
        pass

    def note(self, text: str) -> None:
        self.notes.append(text)


def run_on_node(job: dict[str, Any]) -> dict[str, Any]:
    """One Ray task: run ``job['workload']``'s unsettled tasks; return new cell folders and rows."""
    staging = Path(tempfile.mkdtemp(prefix="campaign-ray-"))
    try:
        root, scratch = RunRoot(staging / "root"), staging / "scratch"
        root.path.mkdir()
        scratch.mkdir()
        unpack(job["root"], root.path, lambda parts: True, "the head")
        sent_rows = [status.StatusRow(**row) for row in job["rows"]]
        for row in sent_rows:
            status.append(root.status_file, row)
        sent_cells = set(task_folders(root, job["task_ids"]))
        prepare, manifest, matrix = root.prepare, root.manifest, root.matrix
        backend = get_backend(matrix.backend)
        _check_node(prepare, manifest, backend)
        variable = backend.visibility_variable
        card = card_here(backend)
        devices = visible_devices(os.environ.get(variable) if variable else None)
        sampler = Sampler(root, lambda: NodeSource(make_source(backend.capabilities.telemetry, devices,
                                                               not backend.capabilities.executes),
                                                   socket.gethostname()), job["telemetry_interval"])
        events = _Notes()
        if not sampler.start():
            events.note(sampler.reason if card is None else f"{card.uuid}: {sampler.reason}")
        setup = _setup(root, prepare, matrix, manifest, backend, scratch, job["grace_s"])
        try:   # the node's own bytecode store, as a session's on one host: torch is not compiled per task
            with bytecode.reused(workerlaunch.pycache_dir(setup), Path(prepare.project_root), prepare.harness):
                outcome = run_group(setup, [job["workload"]], card, events, sampler)
        finally:
            sampler.stop()
        rows, _ = root.status()
        new_cells = [path for path in task_folders(root, job["task_ids"]) if path not in sent_cells]
        return {"state": outcome.state, "detail": outcome.detail, "node": socket.gethostname(),
                "card": None if card is None else card.uuid, "notes": events.notes,
                "rows": [dataclasses.asdict(row) for row in rows[len(sent_rows):]],
                "cells": pack(root.path, new_cells), "telemetry": _samples(sampler.tsv),
                "telemetry_err": sampler.err.read_text(encoding="utf-8") if sampler.err.is_file() else ""}
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _setup(root: RunRoot, prepare: Prepare, matrix: Matrix, manifest: Manifest, backend, scratch: Path, grace_s: float):
    from campaign.running.runner import RunSetup

    # parent_env is this worker's: Ray sets the visibility variable to the card it assigned,
    # and the cell env inherits it (the card's `visible` stays None, so nothing overrides it).
    return RunSetup(root=root, project_root=Path(prepare.project_root), matrix=matrix, manifest=manifest,
                    harness_digest=prepare.harness_digest, plugins=plugin_plan(backend),
                    harness_drift=functools.partial(runchecks.harness_drift, prepare),
                    pinned_env=pinned_env(manifest), parent_env=dict(os.environ), scratch=scratch,
                    python=sys.executable, grace_s=grace_s, lock=None,
                    visibility_variable=backend.visibility_variable,
                    # a compile-only task asked its node for one CPU (`rayexec`): its worker's threads stay on one
                    cell_cores=None if backend.capabilities.executes else CPU_TASK_CORES)


def append_telemetry(tsv: Path, err: Path, workload: str, node: str, result: dict[str, Any]) -> None:
    """On the head: a node's samples of its card appended to the root's ``tsv`` (telemetry.tsv: the header
    first if it has none), its sampler's errors to ``err`` (telemetry.err), each named with the node."""
    lines = [line for line in result["telemetry"].splitlines() if line]
    for line in lines:
        fields = line.split("\t")
        try:
            if len(fields) != len(COLUMNS):
                raise ValueError(f"{len(fields)} fields for {len(COLUMNS)} columns")
            float(fields[1])
        except ValueError as exc:
            raise Refused(PREFIX, "ray_telemetry", f"the Ray task of {workload} on {node} returned a line "
                          f"that is not a telemetry sample ({exc}): {line[:200]!r}; none was written") from None
    if lines:
        with open(tsv, "a", encoding="utf-8") as out:
            if out.tell() == 0:
                out.write("\t".join(COLUMNS) + "\n")
            out.write("".join(line + "\n" for line in lines))
    errors = [line.partition("\t") for line in result["telemetry_err"].splitlines() if line]
    if errors:
        with open(err, "a", encoding="utf-8") as out:
            out.write("".join(f"{stamp}\t{node}: {text}\n" for stamp, _, text in errors))
