"""`campaign screen --ray` on a CPU-only Ray cluster of several nodes, simulated on this host.

The cluster is `ray.cluster_utils.Cluster`, one for the module: a head with no CPU (it runs no
task: the screen's driver seals there) and three nodes of one CPU each, each its own raylet whose
workers' TMPDIR is a folder of its own, so a cell's worker process says by its path which node
runs it. No node declares a GPU: the cpu backend compiles only, so each task asks one CPU.

The screen is the demo's add (the canary), softmax and matmul; the node running matmul is
removed while matmul's first IR-pass cell runs. The root it leaves is the one the resume
completes (on the nodes left), and that root's screen.tsv is compared with a one-process screen
of the same manifest, started once for the module in the background.
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, run_cli

from campaign.contract import status
from campaign.contract.errors import Refused
from campaign.judging import screentable
from campaign.running import runchecks

DEMO = (PROJECT_ROOT / "manifests" / "demo-cpu.yaml").read_text(encoding="utf-8")
WORKLOADS = ("add", "softmax", "matmul")
VICTIM = "matmul"           # IR_CHANGED: its lost rows span the IR pass and round 1
NODES = 3
# what differs between two screens of the same code: the seconds each cell took
SECONDS = tuple(c for c in screentable.COLUMNS if c.startswith("elapsed_")) + ("weight_s",)


def _manifest(folder: Path, backend: str = "cpu") -> Path:
    """The demo manifest with only `WORKLOADS` (each line kept as the demo has it)."""
    head, _, tail = DEMO.partition("workloads:\n")
    kept = [line for line in tail.splitlines() if any(f"{{name: {w}," in line for w in WORKLOADS)]
    if backend != "cpu":
        head = head.replace("backend: cpu", f"backend: {backend}\n  name: NVIDIA H200")
    path = folder / f"demo-{backend}.yaml"
    path.write_text(head + "workloads:\n" + "\n".join(kept) + "\n", encoding="utf-8")
    return path


@contextlib.contextmanager
def _environ(**values: str):
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def cpu_cluster(tmp_path_factory):
    """(the cluster, its address, each node's TMPDIR by the node)."""
    from ray.cluster_utils import Cluster

    folders = tmp_path_factory.mktemp("cpunodes")
    short = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))       # Ray's socket paths must stay short
    # Ray's own files (its session folder, the address file) go under RAY_TMPDIR, read as each
    # node starts: set only while they start, so nothing else of this process sees it
    with _environ(RAY_TMPDIR=str(short), RAY_USAGE_STATS_ENABLED="0"):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        try:
            nodes = {}
            for n in range(NODES):
                folder = folders / f"node{n}"
                folder.mkdir()
                nodes[cluster.add_node(num_cpus=1, env_vars={"TMPDIR": str(folder)})] = folder
            cluster.wait_for_nodes()
        except BaseException:
            cluster.shutdown()
            raise
    try:
        yield cluster, cluster.address, nodes
    finally:
        with _environ(RAY_TMPDIR=str(short)):
            cluster.shutdown()
        shutil.rmtree(short, ignore_errors=True)


def _screen(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "campaign", "screen", *map(str, args)], cwd=PROJECT_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _table(root: Path) -> list[dict[str, str]]:
    return screentable.parse((root / "screen.tsv").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The screen.tsv of the one-process screen, started once for the module and waited for on first
    use, so it runs beside the cluster's screen rather than before it."""
    base = tmp_path_factory.mktemp("reference")
    proc = _screen(_manifest(base), "--runs-dir", base / "runs", "--grace", "1")
    table: list = []

    def wait() -> list[dict[str, str]]:
        if not table:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, out + err
            table.extend(_table(Path(out.strip().splitlines()[-1]).parent))
        return table
    yield wait
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def _running(nodes: dict, workload: str, run: subprocess.Popen, deadline: float):
    """The node whose TMPDIR holds a running cell worker of ``workload`` (its argv names its task file)."""
    while time.monotonic() < deadline:
        assert run.poll() is None, run.communicate()
        for proc in Path("/proc").iterdir():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if not any(a.startswith(b"campaign.worker=") for a in argv):
                continue
            line = b" ".join(argv)
            for node, folder in nodes.items():
                if str(folder).encode() + b"/" in line and f"/cells/{workload}/".encode() in line:
                    return node
        time.sleep(0.2)
    raise AssertionError(f"no cell of {workload} started on the cluster")


@pytest.fixture(scope="module")
def lost_node(cpu_cluster, reference, tmp_path_factory):
    """A screen whose node running matmul was removed (its raylet and everything of it killed) while
    matmul's IR pass ran: (root, exit code, output, the rows it left, the node's folder)."""
    cluster, address, nodes = cpu_cluster
    base = tmp_path_factory.mktemp("lost")
    run = _screen(_manifest(base), "--runs-dir", base / "runs", "--grace", "1", "--ray", address)
    victim = _running(nodes, VICTIM, run, time.monotonic() + 300)
    cluster.remove_node(victim, allow_graceful=False)
    removed = time.monotonic()
    out, err = run.communicate(timeout=300)
    print(f"\nfrom the node's removal to the screen's end: {time.monotonic() - removed:.1f} s")
    root = Path(out.splitlines()[0].rpartition(" -> ")[2])
    return root, run.returncode, out + err, status.read(root / "status.tsv")[0], nodes.pop(victim)


@pytest.mark.slow
def test_a_node_lost_mid_screen_leaves_named_rows(lost_node):
    root, returncode, output, rows, _ = lost_node
    assert returncode == 1, output
    assert "RUN_FAILED check=lost: 1 workload(s) lost on Ray: matmul: " in output
    assert f"`campaign screen --resume {root}` (with or without --ray) runs them again" in output
    lost = [r for r in rows if r.rc_name == status.CARD_FAILED]
    assert [r.task_id for r in lost] == ["matmul/r0/baseline", "matmul/r0/candidate", "matmul/r1/baseline",
                                         "matmul/r1/control", "matmul/r1/candidate"]
    assert all(r.note.startswith("lost: node lost: NodeDiedError") for r in lost), [r.note for r in lost]
    # the other workloads finished on the nodes left; nothing of matmul's reached the head
    settled = status.settled(rows)
    assert {t for t in settled if not t.startswith(VICTIM)} == {
        f"{w}/r{n}/{c}" for w in ("add", "softmax") for n, cells in ((0, ("baseline", "candidate")),
                                                                   (1, ("baseline", "control", "candidate")))
        for c in cells}
    assert not (root / "cells" / VICTIM).exists()
    assert not (root / "receipt.json").exists() and not (root / "screen.tsv").exists()
    # a compile-only backend's rows name no card, as on one host: no device column
    assert (root / "status.tsv").read_text(encoding="utf-8").startswith(status.header(False))


@pytest.mark.slow
def test_a_resumed_screen_seals_each_cell_once_and_the_one_process_table(cpu_cluster, lost_node, reference):
    _, address, nodes = cpu_cluster
    root, _, _, lost, victim = lost_node
    done = run_cli("screen", "--resume", root, "--grace", "1", "--ray", address, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert run_cli("verify", root).returncode == 0
    rows, _ = status.read(root / "status.tsv")
    assert rows[:len(lost)] == lost
    again = rows[len(lost):]
    # exactly the lost tasks ran again, each once, and each settled
    assert sorted(r.task_id for r in again) == sorted(r.task_id for r in lost if r.rc_name == status.CARD_FAILED)
    # round 1 never runs offline (IR_PASS_DECIDES): settled as skipped, here as on one host
    assert all(r.rc_name == (status.SKIPPED if r.round == 1 else "ok") for r in again), \
        [(r.task_id, r.rc_name, r.note) for r in again]
    finished = [r.task_id for r in rows if r.rc_name in ("ok", status.SKIPPED)]
    assert len(finished) == len(set(finished)) == 5 * len(WORKLOADS)
    # one folder per cell that ran: none twice, none set aside
    folders = sorted(str(p.relative_to(root / "cells")) for p in (root / "cells").glob("*/*/*") if p.is_dir())
    assert folders == sorted(r.task_id for r in rows if r.rc_name == "ok")
    # the screen's table is the one-process screen's, but for the seconds the cells took
    ours, theirs = _table(root), reference()
    assert [{k: v for k, v in r.items() if k not in SECONDS} for r in ours] == [
        {k: v for k, v in r.items() if k not in SECONDS} for r in theirs]
    assert {r["workload"]: r["verdict"] for r in ours} == {"add": "NO_IR_DIFF", "softmax": "NO_IR_DIFF",
                                                          "matmul": "IR_CHANGED"}
    # every node's staging root was removed as its task ended
    assert not [p for folder in nodes.values() for p in folder.glob("campaign-ray-*")]
    assert not victim.exists() or not any(victim.glob("campaign-ray-*/root/cells/matmul/r1"))


@pytest.mark.slow
def test_a_cluster_without_gpu_refuses_a_backend_that_executes(cpu_cluster, tmp_path):
    """The refusal of a GPU-less cluster stays for backends that execute; the cpu backend's tasks
    ask a CPU each (the two tests above)."""
    from campaign.contract.runroot import RunRoot
    from campaign.running.rayexec import RayExecutor
    from campaign.running.runner import RunSetup

    done = run_cli("prepare", _manifest(tmp_path, "cuda"), "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    root = RunRoot(Path(done.stdout.strip().splitlines()[-1]))
    setup = RunSetup(root=root, project_root=PROJECT_ROOT, matrix=root.matrix, manifest=root.manifest,
                     harness_digest=root.prepare.harness_digest, plugins=(),
                     harness_drift=functools.partial(runchecks.harness_drift, root.prepare), pinned_env={},
                     parent_env={}, scratch=tmp_path, python=sys.executable)
    saved = dict(os.environ)
    try:
        with pytest.raises(Refused, match="declares no GPU: every task asks num_gpus=1"):
            RayExecutor(setup, None, cpu_cluster[1], 1.0).run()
    finally:   # ray.init sets variables of its own in this process
        os.environ.clear()
        os.environ.update(saved)
    assert not (root.path / "status.tsv").exists()


def test_rescore_takes_no_ray(tmp_path):
    done = run_cli("screen", "--rescore", tmp_path, "--ray", "auto")
    assert done.returncode == 2 and "--ray applies to a screen that runs cells" in done.stderr
