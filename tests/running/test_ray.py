"""`campaign run --ray` on a real local Ray cluster (CPU only, no GPU declared), the compile-only demo:
each task asks one CPU (`tests/running/test_ray_screen.py`: a screen over several such nodes, one lost).

One cluster for the module (`ray start --head --block` in its own process group, ended by
that group at the end); the fixture that kills a cluster starts its own, and the root it
leaves is the one the Ray comparison resumes (its cells all run on Ray then), so no cell runs
twice for the two claims. Workers' TMPDIR is a folder of this test, so a node's staging roots
-- and the worker processes a test kills -- are found there and nowhere else. The one-process
run every Ray root is compared with runs once for the module, in the background.
"""
from __future__ import annotations

import contextlib
import functools
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
import ray.exceptions as rex  # imported here: importing Ray sets RAY_CLIENT_MODE, before any test's env is taken
from conftest import PROJECT_ROOT, run_cli

from campaign.contract import status, telemetryfile
from campaign.contract.errors import Refused
from campaign.contract.runroot import RunRoot
from campaign.running import bytecode, raynode, raywatch, runchecks
from campaign.running.raynode import place

# the `ray` script beside this python runs this module; a virtualenv without the script has the module
RAY = (sys.executable, "-m", "ray.scripts.scripts")
DEMO = (PROJECT_ROOT / "manifests" / "demo-cpu.yaml").read_text(encoding="utf-8")
MATMUL = ("matmul/r1/baseline", "matmul/r1/control", "matmul/r1/candidate")
KEPT = ("json", "__init__.py")          # a module every worker imports, left out of the nodes' store


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def _cluster(nodes: Path, cpus: int, cache: Path):
    """A local cluster of ``cpus`` CPUs and no GPU, its workers' TMPDIR ``nodes`` and user cache folder
    ``cache`` (where a node keeps its bytecode store): (address, process)."""
    port = _free_port()
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))     # Ray's socket paths must stay short
    env = dict(os.environ, TMPDIR=str(nodes), XDG_CACHE_HOME=str(cache), RAY_USAGE_STATS_ENABLED="0",
               PYTHONUNBUFFERED="1")      # its log line that says it is up is read while it runs
    log = open(temp / "start.log", "wb")
    proc = subprocess.Popen([*RAY, "start", "--head", "--block", f"--port={port}", f"--num-cpus={cpus}",
                             "--num-gpus=0", "--include-dashboard=false", "--node-ip-address=127.0.0.1",
                             f"--temp-dir={temp}", "--disable-usage-stats"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        # `ray start` says it is up before it blocks; waiting on that line costs nothing, where each
        # `ray status` asked is a Python importing Ray (one is asked after it, normally answered at once).
        deadline = time.monotonic() + 60
        while b"will now block forever" not in (temp / "start.log").read_bytes():
            assert proc.poll() is None and time.monotonic() < deadline, (temp / "start.log").read_text()
            time.sleep(0.5)
        while subprocess.run([*RAY, "status", f"--address={address}"], capture_output=True,
                             timeout=60).returncode != 0:
            assert proc.poll() is None and time.monotonic() < deadline, (temp / "start.log").read_text()
            time.sleep(1)
        yield address, proc
    finally:
        if proc.poll() is None:
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


@pytest.fixture(scope="module")
def node_cache(tmp_path_factory) -> Path:
    """The nodes' user cache folder, one for the module's clusters (they stand for one machine).
    Its bytecode store starts as this machine's, less the json package's file (linked: a store's
    files are never rewritten), so the nodes' workers compile that one alone and a node keeping
    it is seen."""
    cache = tmp_path_factory.mktemp("nodecache")
    here = bytecode.store_dir()
    for pyc in here.rglob("*.pyc") if here.is_dir() else ():
        if bytecode.source_of(here, pyc).parts[-2:] != KEPT:
            target = cache / "campaign" / here.name / pyc.relative_to(here)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(pyc, target)
            except OSError:
                shutil.copyfile(pyc, target)
    return cache


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, node_cache):
    nodes = tmp_path_factory.mktemp("raynodes")
    with _cluster(nodes, 2, node_cache) as (address, _proc):
        yield address, nodes


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


def _run(root: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "campaign", "run", str(root), *args], cwd=PROJECT_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The verdicts of the one-process run of the add+matmul demo, started once for the module and
    waited for on first use (a call), so it runs beside the Ray runs rather than before them."""
    base = tmp_path_factory.mktemp("reference")
    root = _prepare(_demo(base, ["add", "matmul"]), base / "runs")
    proc = _run(root)
    verdicts: dict = {}

    def wait() -> dict:
        if not verdicts:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, out + err
            verdicts.update(_verdicts(root))
            assert verdicts["matmul"][2] is True and verdicts["add"][2] is False   # a moved and an unmoved IR
        return verdicts
    yield wait
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def _ray_worker_of_a_cell(nodes: Path, run: subprocess.Popen, deadline: float) -> int:
    """The Ray worker process running a cell of this cluster (the parent of its campaign.worker)."""
    while time.monotonic() < deadline:
        assert run.poll() is None, run.communicate()
        for proc in Path("/proc").iterdir():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                # the worker's boot names the package it runs: campaign.worker=<folder> (`workerlaunch.argv`)
                if any(a.startswith(b"campaign.worker=") for a in argv) and str(nodes).encode() in b" ".join(argv):
                    ppid = next(line for line in (proc / "status").read_text().splitlines()
                                if line.startswith("PPid:"))
                    return int(ppid.split()[1])
            except (OSError, StopIteration):
                continue
        time.sleep(0.2)
    raise AssertionError("no cell started on the cluster")


@pytest.fixture(scope="module")
def dead_cluster(tmp_path_factory, reference, node_cache):
    """A root of the add+matmul demo whose cluster (one CPU, its own) was killed while the canary's
    cell ran: (root, the run's exit code, its stdout and stderr, seconds from the kill to the run's
    end, the rows it left). The Ray comparison resumes this root on the module's cluster.
    ``reference`` is asked for only to start the one-process run first: this fixture mostly
    waits (a cluster starting, a dead one probed), and that run fills the wait."""
    base = tmp_path_factory.mktemp("dead")
    nodes = base / "nodes"
    nodes.mkdir()
    root = _prepare(_demo(base, ["add", "matmul"]), base / "runs")
    with _cluster(nodes, 1, node_cache) as (address, head):
        run = _run(root, "--ray", address)
        _ray_worker_of_a_cell(nodes, run, time.monotonic() + 120)
        os.killpg(head.pid, signal.SIGKILL)              # the whole cluster, at once
        began = time.monotonic()
        out, err = run.communicate(timeout=120)
    return root, run.returncode, out + err, time.monotonic() - began, status.read(root / "status.tsv")[0]


@pytest.mark.slow
def test_a_dead_cluster_leaves_named_rows(dead_cluster):
    """The cluster dies under the canary: the running task is a lost node; the next one, submitted
    to a cluster that no longer answers, is named by the head's own probe, long before Ray would
    end the head (60 s without its GCS)."""
    root, returncode, output, seconds, rows = dead_cluster
    assert returncode == 1, output
    assert seconds < raywatch.UNREACHABLE_S + 30, "the head waited on a dead cluster"
    assert "RUN_FAILED check=lost" in output and "add: node lost" in output and "matmul: cluster unreachable" in output
    assert [r.task_id for r in rows] == ["add/r1/baseline", "add/r1/control", "add/r1/candidate", *MATMUL]
    assert all(r.rc_name == status.CARD_FAILED for r in rows)
    assert all(r.note.startswith("lost: node lost: NodeDiedError") for r in rows[:3]), [r.note for r in rows]
    assert all(r.note.startswith("lost: cluster unreachable: the GCS at ") and "refused every connection for 1"
               in r.note for r in rows[3:]), [r.note for r in rows]


@pytest.mark.slow
def test_ray_run_seals_the_same_verdicts_as_one_process(cluster, reference, dead_cluster, node_cache):
    """The dead cluster's root, resumed with --ray on a live one: every cell runs on Ray (none
    reached the head before), the root seals, verifies and gives the one-process verdicts."""
    address, nodes = cluster
    remote, _, _, _, lost = dead_cluster
    staged = set(nodes.glob("campaign-ray-*"))      # a killed task's (another test's) stays behind
    done = run_cli("run", remote, "--ray", address)
    assert done.returncode == 0, done.stdout + done.stderr
    assert run_cli("verify", remote).returncode == 0
    assert _verdicts(remote) == reference()
    rows, _ = status.read(remote / "status.tsv")
    assert rows[:len(lost)] == lost and len(rows) == len(lost) + 6
    ran = rows[len(lost):]
    assert all(r.rc_name == "ok" for r in ran)
    # a compile-only task asked a CPU, not a card: its rows name none, as a one-card run's on one host
    assert all(r.device is None for r in rows)
    # each task tried to sample on its node and brought its record back, named with the node;
    # the head, which ran no cell, sampled nothing of its own
    errors = (remote / "telemetry.err").read_text(encoding="utf-8").splitlines()
    assert len(errors) == 2 and all("no telemetry on this backend (compile-only)" in line
                                    for line in errors), errors
    assert [line.split("\t")[1].split(": ")[0] for line in errors] == [socket.gethostname()] * 2
    assert not (remote / "telemetry.tsv").exists()      # the cpu backend has no source: no sample invented
    assert set(nodes.glob("campaign-ray-*")) == staged, "a node kept its staging root"
    # the nodes' workers read and filled the node's own bytecode store, as a session's do on one host
    store = node_cache / "campaign" / f"bytecode-{sys.implementation.cache_tag}"
    kept = {bytecode.source_of(store, pyc).parts[-2:] for pyc in store.rglob("*.pyc")}
    assert KEPT in kept, "no task kept its workers' bytecode in the node's store"


@pytest.mark.slow
def test_lost_ray_task_is_a_named_row_and_resumes(cluster, reference, tmp_path):
    address, nodes = cluster
    root = _prepare(_demo(tmp_path, ["matmul"]), tmp_path / "runs")
    run = _run(root, "--ray", address)
    os.kill(_ray_worker_of_a_cell(nodes, run, time.monotonic() + 120), signal.SIGKILL)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 1, out + err
    assert "RUN_FAILED check=lost" in err and "matmul: worker crashed" in err
    rows, _ = status.read(root / "status.tsv")
    lost = [r for r in rows if r.rc_name == status.CARD_FAILED]
    assert {r.task_id for r in lost} == set(MATMUL)
    assert all(r.note.startswith("lost: worker crashed: WorkerCrashedError") for r in lost), [r.note for r in lost]
    assert not (root / "receipt.json").exists()
    done = run_cli("run", root)     # resumed here, on one process
    assert done.returncode == 0, done.stderr
    assert run_cli("verify", root).returncode == 0
    assert _verdicts(root)["matmul"] == reference()["matmul"]


def _listening(port: int = 0) -> socket.socket:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen()
    return listener


def test_the_probe_names_a_gcs_that_stopped_answering():
    listener = _listening()
    port = listener.getsockname()[1]
    now = [0.0]
    probe = raywatch.GcsProbe(f"127.0.0.1:{port}", unreachable_s=10, every_s=1, clock=lambda: now[0])
    assert probe.down() is None                      # it answers
    listener.close()
    for now[0] in (1.0, 5.0):
        assert probe.down() is None                  # refused, but not for long enough
    listener = _listening(port)
    now[0] = 6.0
    assert probe.down() is None                      # it answers again: the refusals so far are forgiven
    listener.close()
    for now[0] in (7.0, 12.0, 16.5):
        assert probe.down() is None
    now[0] = 17.0
    assert "refused every connection for 10 s (ConnectionRefusedError" in probe.down()


def test_ray_errors_are_named_by_what_happened():
    lost = ("ab" * 20, None, "head")
    assert raywatch.kind(rex.NodeDiedError("n1")) == "node lost"
    assert raywatch.kind(rex.WorkerCrashedError()) == "worker crashed"
    assert raywatch.kind(rex.OwnerDiedError(*lost)) == "result lost"
    assert raywatch.kind(rex.ObjectLostError(*lost)) == "result lost"
    assert raywatch.kind(rex.GetTimeoutError("t")) == "no answer"
    assert raywatch.kind(rex.RaySystemError("s")) == "Ray system error"
    assert raywatch.lost_note(rex.WorkerCrashedError()).startswith("lost: worker crashed: WorkerCrashedError: ")


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
        place(incoming / "add", cells)
    (incoming / "add.interrupted-1").mkdir()
    (cells / "add.interrupted-1").mkdir()
    place(incoming / "add.interrupted-1", cells)       # a set-aside folder takes the head's next free name
    assert (cells / "add.interrupted-2").is_dir()


def _prepared(tmp_path: Path, timeout_s: int = 600, canary: bool = True, workloads: tuple = ("add",)):

    manifest = _demo(tmp_path, list(workloads))
    text = manifest.read_text().replace("timeout_s: 600", f"timeout_s: {timeout_s}")
    # a canary that times out stops its group at once; the deadline test needs the whole group out
    manifest.write_text(text if canary else text.replace(", canary: true", ""))
    root = RunRoot(_prepare(manifest, tmp_path / "runs"))
    return root.path, root.prepare, root.matrix, root.manifest


def test_a_node_with_other_code_refuses_the_group(tmp_path):
    from campaign.backends import get_backend

    root, prepare, matrix, manifest = _prepared(tmp_path)
    raynode._check_node(prepare, manifest, get_backend("cpu"))     # this checkout: the same code
    name = sorted(prepare.harness)[0]
    prepare = prepare.model_copy(update={"harness": {**prepare.harness, name: "0" * 64}})
    with pytest.raises(RuntimeError, match=f"code changed since prepare: {name}"):
        raynode._check_node(prepare, manifest, get_backend("cpu"))


class _Events:
    def __init__(self):
        self.ended, self.notes, self.at = [], [], {}

    def started(self, tasks, rows, pace=None):
        pass

    def cell_ended(self, task, row, settled=True):
        self.ended.append(row.task_id)
        self.at[row.task_id] = time.monotonic()

    def note(self, text):
        self.notes.append(text)


def test_rows_come_back_only_with_their_own_cell_folders(tmp_path):
    from campaign.running.rayexec import RayExecutor
    from campaign.running.runner import RunSetup

    root, prepare, matrix, manifest = _prepared(tmp_path)
    setup = RunSetup(root=root, project_root=PROJECT_ROOT, matrix=matrix, manifest=manifest,
                     harness_digest=prepare.harness_digest, plugins=(),
                     harness_drift=functools.partial(runchecks.harness_drift, prepare), pinned_env={}, parent_env={},
                     scratch=tmp_path, python=sys.executable)
    events = _Events()
    executor = RayExecutor(setup, events, "unused", 1.0)
    row = {**status.StatusRow(task_id="add/r1/baseline", round=1, workload="add", cell="baseline", rc=0,
                              rc_name="ok").__dict__}
    result = {"node": "n1", "card": None, "notes": [], "rows": [row], "state": "completed",
              "detail": "", "cells": _tar([]), "telemetry": "", "telemetry_err": ""}
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


def _executor(tmp_path: Path, address: str = "unused", timeout_s: int = 600, canary: bool = True,
              workloads: tuple = ("add",)):
    from campaign.running.rayexec import RayExecutor
    from campaign.running.runner import RunSetup

    root, prepare, matrix, manifest = _prepared(tmp_path, timeout_s, canary, workloads)
    setup = RunSetup(root=root, project_root=PROJECT_ROOT, matrix=matrix, manifest=manifest,
                     harness_digest=prepare.harness_digest, plugins=(),
                     harness_drift=functools.partial(runchecks.harness_drift, prepare), pinned_env={}, parent_env={},
                     scratch=tmp_path, python=sys.executable, grace_s=0.1)
    return RayExecutor(setup, _Events(), address, 1.0)


@pytest.mark.slow
def test_a_ray_task_past_its_cells_bounds_is_cancelled_and_named(cluster, tmp_path):
    """Each cell may take 1 s and 0.1 s of grace, and the node's setup is counted as -2 s: a task's
    budget is 1.3 s, which no task answers within (each of its three cells starts a Python worker
    that imports torch, over 1 s alone, and the node's setup is ~10 s more here). With no setup at
    all (3.3 s) a warm Ray worker on an idle machine once answered in time, and only two workloads
    were reported lost. So the head stops waiting and says so. Three workloads on two CPUs: the
    third is submitted only when a CPU is free, so its 1.3 s count from then -- a task out is a
    task running."""
    from campaign.contract.errors import CampaignError

    executor = _executor(tmp_path, cluster[0], timeout_s=1, canary=False, workloads=("add", "softmax", "row_sum"))
    executor.setup_s = -2.0
    began = time.monotonic()
    saved = dict(os.environ)
    try:
        with pytest.raises(CampaignError, match="RUN_FAILED check=lost: 3 workload"):
            executor.run()
    finally:   # ray.init sets variables of its own in this process (PYTHONBREAKPOINT)
        os.environ.clear()
        os.environ.update(saved)
    assert time.monotonic() - began < 40
    rows, _ = status.read(executor.setup.root / "status.tsv")
    assert sorted(r.task_id for r in rows) == sorted(f"{w}/r1/{c}" for w in ("add", "softmax", "row_sum")
                                                     for c in ("baseline", "control", "candidate"))
    at = executor.events.at
    # the first CPU to come free takes row_sum: its 1.3 s count from the earlier of the two ends (on a
    # loaded machine the other CPU's task was measured ending 0.5 s later; max() then failed)
    assert at["row_sum/r1/baseline"] - min(at["add/r1/baseline"], at["softmax/r1/baseline"]) >= 1.3
    assert all(r.rc_name == status.CARD_FAILED and r.note.startswith(
        "lost: no answer: its Ray task gave nothing back within 1 s") for r in rows), [r.note for r in rows]


GMI = PROJECT_ROOT / "tests" / "fixtures" / "telemetry" / "mthreads-gmi-q-json.json"


def test_a_nodes_card_samples_reach_the_roots_telemetry(tmp_path):
    """A node's sampler (recorded mthreads-gmi output standing for its card) names its devices with
    the node; the head appends those samples to the root's telemetry.tsv, where evidence reads them."""
    from campaign.running.telemetry import GmiSource, Sampler

    def recorded(argv, **_):
        return subprocess.CompletedProcess(argv, 0, stdout=GMI.read_text(), stderr="")

    staging = tmp_path / "node"
    staging.mkdir()
    ticks = iter([10.0, 20.0])
    sampler = Sampler(RunRoot(staging), lambda: raynode.NodeSource(GmiSource(["0"], run=recorded), "n1"), 3600,
                      clock=lambda: next(ticks))
    assert sampler.start()
    sampler.mark()
    sampler.mark()
    sampler.stop()
    (tmp_path / "head").mkdir()
    executor = _executor(tmp_path / "head")
    root = executor.setup.root
    result = {"node": "n1", "card": "0@n1", "notes": [], "rows": [], "state": "completed", "detail": "",
              "cells": _tar([]), "telemetry": raynode._samples(sampler.tsv),
              "telemetry_err": "2026-11-30T00:00:00Z\tsample failed: RuntimeError: gone\n"}
    executor._merge("add", result, [])
    executor._merge("add", {**result, "telemetry_err": ""}, [])       # a second task: no second header
    assert (root / "telemetry.tsv").read_text().count("time_utc\t") == 1      # one header, the table's first line
    samples = telemetryfile.read_samples(root / "telemetry.tsv")
    assert [(s.t, s.device) for s in samples] == [(10.0, "0@n1"), (10.0, "1@n1"), (20.0, "0@n1"), (20.0, "1@n1")] * 2
    assert samples[0].sm_clock_mhz == 1888.0
    assert (root / "telemetry.err").read_text() == "2026-11-30T00:00:00Z\tn1 (0@n1): sample failed: RuntimeError: gone\n"
    with pytest.raises(Refused, match="not a telemetry sample .8 fields for 9 columns"):
        executor._merge("add", {**result, "telemetry": "1\t2\t3\t4\t5\t6\t7\t8\n"}, [])
    assert len(telemetryfile.read_samples(root / "telemetry.tsv")) == 8      # nothing of it was written


@pytest.mark.slow
def test_a_head_stopped_before_its_first_wave_submits_nothing(cluster, tmp_path):
    """The head's waves settle through the one loop (`campaign.running.scheduler.settle`, placement
    `campaign.running.raywave.RayWave`): a stop that came first is the run's outcome, nothing submitted,
    no row written, the reason kept."""
    executor = _executor(tmp_path, cluster[0], workloads=("add", "softmax"))
    executor.interrupt("SIGTERM")
    saved = dict(os.environ)
    try:
        outcome = executor.run()
    finally:   # ray.init sets variables of its own in this process (PYTHONBREAKPOINT)
        os.environ.clear()
        os.environ.update(saved)
    assert (outcome.state, outcome.detail) == ("interrupted", "SIGTERM")
    assert executor.submitted == set() and not (executor.setup.root / "status.tsv").exists()
