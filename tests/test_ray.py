"""`campaign run --ray` on a real local Ray cluster (CPU, two declared GPUs), the compile-only demo.

One cluster for the module (`ray start --head --block` in its own process group, ended by
that group at the end). Its workers' TMPDIR is a folder of this test, so a node's staging
roots -- and the worker processes a lost-task test kills -- are found there and nowhere else.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from campaign.contract.errors import Refused
from campaign.running import raynode, status
from campaign.running.rayexec import _place
from conftest import PROJECT_ROOT, run_cli

RAY = Path(sys.executable).parent / "ray"
DEMO = (PROJECT_ROOT / "manifests" / "demo-cpu.yaml").read_text(encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    port = _free_port()
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))     # Ray's socket paths must stay short
    nodes = tmp_path_factory.mktemp("raynodes")
    env = dict(os.environ, TMPDIR=str(nodes), RAY_USAGE_STATS_ENABLED="0")
    log = open(temp / "start.log", "wb")
    proc = subprocess.Popen([str(RAY), "start", "--head", "--block", f"--port={port}", "--num-gpus=2",
                             "--num-cpus=2", "--include-dashboard=false", "--node-ip-address=127.0.0.1",
                             f"--temp-dir={temp}", "--disable-usage-stats"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while subprocess.run([str(RAY), "status", f"--address={address}"], capture_output=True,
                             timeout=30).returncode != 0:
            assert proc.poll() is None and time.monotonic() < deadline, (temp / "start.log").read_text()
            time.sleep(1)
        yield address, nodes
    finally:
        proc.send_signal(signal.SIGTERM)   # `ray start --block` stops what it started
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        try:   # a raylet or worker that outlived the head process
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def _demo(tmp_path: Path, workloads: list[str]) -> Path:
    """The demo manifest, one round, only ``workloads`` (each line kept as the demo has it)."""
    head, _, tail = DEMO.partition("workloads:\n")
    kept = [line for line in tail.splitlines() if any(f"{{name: {w}," in line for w in workloads)]
    path = tmp_path / "demo-cpu.yaml"
    path.write_text(head.replace("count: 2", "count: 1") + "workloads:\n" + "\n".join(kept) + "\n",
                    encoding="utf-8")
    return path


def _prepare(manifest: Path, runs: Path) -> Path:
    done = run_cli("prepare", manifest, "--runs-dir", runs)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def _verdicts(root: Path) -> dict:
    verdicts = json.loads((root / "receipt.json").read_text())["verdicts"]["workloads"]
    return {name: (v["class"], v["ir"]["fingerprints"], v["ir"]["changed"]) for name, v in verdicts.items()}


def test_ray_run_seals_the_same_verdicts_as_one_process(cluster, tmp_path):
    address, nodes = cluster
    manifest = _demo(tmp_path, ["add", "matmul"])
    local = _prepare(manifest, tmp_path / "local")
    done = run_cli("run", local)
    assert done.returncode == 0, done.stderr
    remote = _prepare(manifest, tmp_path / "ray")
    done = run_cli("run", remote, "--ray", address)
    assert done.returncode == 0, done.stdout + done.stderr
    assert run_cli("verify", remote).returncode == 0
    assert _verdicts(remote) == _verdicts(local)
    assert _verdicts(remote)["matmul"][2] is True      # the demo's switch moved matmul's IR: a real verdict
    rows, _ = status.read(remote / "status.tsv")
    assert len(rows) == 6 and all(r.rc_name == "ok" for r in rows)
    # every row names the card Ray assigned it, on the node that ran it
    assert all(r.device and r.device.startswith("cpu-virtual-") and "@" in r.device for r in rows)
    assert not list(nodes.glob("campaign-ray-*")), "a node kept its staging root"


def _ray_worker_of_a_cell(nodes: Path, run: subprocess.Popen, deadline: float) -> int:
    """The Ray worker process running a cell of this cluster (the parent of its campaign.worker)."""
    while time.monotonic() < deadline:
        assert run.poll() is None, run.communicate()
        for proc in Path("/proc").iterdir():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                if b"campaign.worker" in argv and str(nodes).encode() in b" ".join(argv):
                    ppid = next(line for line in (proc / "status").read_text().splitlines()
                                if line.startswith("PPid:"))
                    return int(ppid.split()[1])
            except (OSError, StopIteration):
                continue
        time.sleep(0.2)
    raise AssertionError("no cell started on the cluster")


def test_lost_ray_task_is_a_named_row_and_resumes(cluster, tmp_path):
    address, nodes = cluster
    root = _prepare(_demo(tmp_path, ["matmul"]), tmp_path / "runs")
    run = subprocess.Popen([sys.executable, "-m", "campaign", "run", str(root), "--ray", address],
                           cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.kill(_ray_worker_of_a_cell(nodes, run, time.monotonic() + 120), signal.SIGKILL)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 1, out + err
    assert "RUN_FAILED check=lost" in err and "matmul" in err
    rows, _ = status.read(root / "status.tsv")
    lost = [r for r in rows if r.rc_name == status.CARD_FAILED]
    assert {r.task_id for r in lost} == {"matmul/r1/baseline", "matmul/r1/control", "matmul/r1/candidate"}
    assert all(r.note.startswith("lost: WorkerCrashedError") for r in lost), [r.note for r in lost]
    assert not (root / "receipt.json").exists()
    done = run_cli("run", root)     # resumed here, on one process
    assert done.returncode == 0, done.stderr
    assert run_cli("verify", root).returncode == 0
    assert {c: v for c, v in _verdicts(root).items()}["matmul"][2] is True


def _tar(entries: list[tuple[str, bytes | None, bytes]]) -> bytes:
    """(name, content or None for a folder, type) members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content, kind in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            if content is not None:
                info.size = len(content)
            tar.addfile(info, io.BytesIO(content) if content is not None else None)
    return buffer.getvalue()


def _cells_only(parts: tuple[str, ...]) -> bool:
    return len(parts) >= 2 and parts[0] == "cells" and parts[1] == "add"


@pytest.mark.parametrize("name", ["../outside", "status.tsv", "cells/../receipt.json", "cells/other/x",
                                  "/abs/cells/add/x"])
def test_a_node_tar_writes_nothing_outside_its_cells(tmp_path, name):
    data = _tar([("cells/add/result.json", b"{}", tarfile.REGTYPE), (name, b"x", tarfile.REGTYPE)])
    with pytest.raises(Refused) as refused:
        raynode.unpack(data, tmp_path, _cells_only, "node n1")
    assert refused.value.check == "ray_cells" and "node n1" in str(refused.value)
    assert list(tmp_path.iterdir()) == []          # checked before anything is written


def test_a_node_tar_holds_no_links(tmp_path):
    data = _tar([("cells/add/identity.json", None, tarfile.SYMTYPE)])
    with pytest.raises(Refused, match="not a regular file"):
        raynode.unpack(data, tmp_path, _cells_only, "node n1")
    assert list(tmp_path.iterdir()) == []


def test_a_node_folder_never_replaces_one_on_the_head(tmp_path):
    incoming, cells = tmp_path / "in", tmp_path / "cells"
    (incoming / "add").mkdir(parents=True)
    (cells / "add").mkdir(parents=True)
    with pytest.raises(Refused, match="never replaces"):
        _place(incoming / "add", cells)
    (incoming / "add.interrupted-1").mkdir()
    (cells / "add.interrupted-1").mkdir()
    _place(incoming / "add.interrupted-1", cells)       # a set-aside folder takes the head's next free name
    assert (cells / "add.interrupted-2").is_dir()


def _prepared(tmp_path: Path):
    from campaign.contract import canonical, yamlio
    from campaign.contract.manifest import Manifest
    from campaign.contract.plans import Matrix

    root = _prepare(_demo(tmp_path, ["add"]), tmp_path / "runs")
    return (root, canonical.read_json(root / "prepare.json"),
            Matrix.model_validate(canonical.read_json(root / "matrix.json")),
            yamlio.validate(Manifest, root / "manifest.yaml"))


def test_a_node_with_other_code_refuses_the_group(tmp_path):
    from campaign.backends import get_backend

    root, prepare, matrix, manifest = _prepared(tmp_path)
    raynode._check_node(prepare, manifest, get_backend("cpu"))     # this checkout: the same code
    name = sorted(prepare["harness"])[0]
    prepare["harness"][name] = "0" * 64
    with pytest.raises(RuntimeError, match=f"code differs from prepare: {name}"):
        raynode._check_node(prepare, manifest, get_backend("cpu"))


class _Events:
    def __init__(self):
        self.ended, self.notes = [], []

    def started(self, tasks, rows):
        pass

    def cell_ended(self, task, row, settled=True):
        self.ended.append(row.task_id)

    def note(self, text):
        self.notes.append(text)


def test_rows_come_back_only_with_their_own_cell_folders(tmp_path):
    from campaign.running.rayexec import RayExecutor
    from campaign.running.runner import RunSetup

    root, prepare, matrix, manifest = _prepared(tmp_path)
    setup = RunSetup(root=root, project_root=PROJECT_ROOT, matrix=matrix, manifest=manifest,
                     harness_digest=prepare["harness_digest"], plugins=(), pinned_env={}, parent_env={},
                     scratch=tmp_path, python=sys.executable)
    events = _Events()
    executor = RayExecutor(setup, events, "unused", 1.0)
    row = {**status.StatusRow(task_id="add/r1/baseline", round=1, workload="add", cell="baseline", rc=0,
                              rc_name="ok").__dict__}
    result = {"node": "n1", "card": "cpu-virtual-0@n1", "notes": [], "rows": [row], "state": "completed",
              "detail": "", "cells": _tar([])}
    with pytest.raises(Refused, match="without their cell folders: add/r1/baseline"):
        executor._merge("add", result, [])
    foreign = {**row, "task_id": "matmul/r1/baseline", "workload": "matmul"}
    with pytest.raises(Refused, match="not its own: matmul/r1/baseline"):
        executor._merge("add", {**result, "rows": [foreign]}, [])
    assert not (root / "status.tsv").exists() and events.ended == []
    executor._merge("add", {**result, "cells": _tar([("cells/add/r1/baseline/result.json", b"{}",
                                                      tarfile.REGTYPE)])}, [])
    assert (root / "cells/add/r1/baseline/result.json").read_bytes() == b"{}"
    assert [r.task_id for r in status.read(root / "status.tsv")[0]] == ["add/r1/baseline"]
