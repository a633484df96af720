"""What `run` refuses before anything runs: pure checks, the lock, and the CLI's exit codes.

Code drift is tested twice: `harness_problems` as a pure function, and once through the
CLI by rewriting one recorded digest in an unsealed prepare.json -- the same comparison
seen from the other side, without editing the shared checkout under other tests' feet.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT
from runroots import demo, prepare, run

from campaign.backends.base import DeviceInfo
from campaign.contract import canonical, devicerule
from campaign.contract.errors import Refused
from campaign.contract.manifest import Device, Pin, Sources
from campaign.contract.runroot import RunRoot
from campaign.flows import roots
from campaign.running import runchecks
from campaign.running.lock import LOCK_FILE, RunLock


def test_harness_problems_name_every_file():
    recorded = {"campaign/a.py": "1", "campaign/b.py": "2", "ops/c.csv": "3"}
    current = {"campaign/a.py": "1", "campaign/b.py": "9", "worker/d.py": "4"}
    assert runchecks.harness_problems(recorded, current) == [
        "campaign/b.py (changed since prepare)", "ops/c.csv (removed since prepare)",
        "worker/d.py (added since prepare)"]
    assert runchecks.harness_problems(recorded, dict(recorded)) == []


def test_code_problems_the_root_first_then_the_digests_taken_only_there(tmp_path):
    """One check for the session and a Ray node: "prepared here, same code"."""
    here, elsewhere = tmp_path / "project", tmp_path / "other"
    here.mkdir()
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(here)
    recorded = {"campaign/a.py": "1"}

    def never() -> dict:
        raise AssertionError("another tree's digests are never taken")

    assert runchecks.code_problems(elsewhere, here, recorded, never) == (
        "project_root", f"prepared from {elsewhere}, this code is at {here}")
    assert runchecks.code_problems(tmp_path / "link", here, recorded, lambda: {"campaign/a.py": "2"}) == (
        "harness", "code changed since prepare: campaign/a.py (changed since prepare)")
    assert runchecks.code_problems(here, here, recorded, lambda: dict(recorded)) is None


def test_version_problems():
    sources = Sources(triton=Pin(version="3.6.0"), torch=Pin(version="2.13.0"), flag_gems=Pin(version="5.0.2"))
    installed = {"triton": "3.6.0", "torch": "2.13.0+cpu", "flag_gems": None}
    assert runchecks.version_problems(sources, installed) == ["flag_gems: manifest pins 5.0.2, not installed"]
    assert runchecks.version_problems(sources, {**installed, "triton": "3.5.1", "flag_gems": "5.0.2"}) == [
        "triton: manifest pins 3.6.0, installed 3.5.1"]
    assert not devicerule.version_matches("2.13.0+cu130", "2.13.0+cpu")
    # measured on the GPU host: metadata says 2.11.0, torch.__version__ says 2.11.0+cu130
    assert devicerule.version_matches("2.11.0+cu130", "2.11.0")
    assert devicerule.version_matches("2.11.0", "2.11.0+cu130")
    assert not devicerule.version_matches("2.11.1", "2.11.0+cu130")
    assert runchecks.version_problems(Sources(triton=Pin(commit="abcdef1")), {}) == []


def test_device_problems_with_discovery_mocked():
    h200 = DeviceInfo(index=0, name="NVIDIA H200", uuid="GPU-1", target="cuda:90")
    wanted = Device(backend="cuda", name="NVIDIA H200", uuid="GPU-1", target="cuda:90")
    assert runchecks.device_problems(wanted, [h200]) == []
    assert runchecks.device_problems(wanted, []) == ["no cuda device is visible"]
    other = DeviceInfo(index=0, name="NVIDIA H100", uuid="GPU-2", target="cuda:90")
    assert runchecks.device_problems(wanted, [other, h200]) == [
        "device 0: uuid GPU-2 is not the manifest's GPU-1",
        "device 0: name 'NVIDIA H100' is not the manifest's 'NVIDIA H200'"]
    assert runchecks.device_problems(Device(backend="cpu", target="cuda:90"), []) == []


def test_prepared_roots_newest_first_unsealed_only(tmp_path: Path):
    for name, created in (("a", "2026-01-02T00:00:00Z"), ("b", "2026-01-03T00:00:00Z"), ("c", "2026-01-04T00:00:00Z")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "prepare.json").write_text(json.dumps({"created_utc": created}))
    (tmp_path / "c" / "receipt.json").write_text("{}")
    (tmp_path / "scratch").mkdir()
    assert [p.name for p in roots.prepared_roots(tmp_path)] == ["b", "a"]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_lock_is_exclusive_and_a_stale_one_is_reported_then_taken(tmp_path: Path):
    notes: list[str] = []
    first = RunLock(RunRoot(tmp_path), notes.append)
    first.acquire()
    with pytest.raises(Refused) as refused:
        RunLock(RunRoot(tmp_path), notes.append).acquire()
    assert refused.value.check == "lock" and f"pid {os.getpid()}" in refused.value.detail
    first.release()
    assert not (tmp_path / LOCK_FILE).exists()

    dead = _dead_pid()
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": dead, "host": socket.gethostname(),
                                                   "started_utc": "2026-11-29T00:00:00Z"}))
    with RunLock(RunRoot(tmp_path), notes.append) as taken:
        assert canonical.read_json(tmp_path / LOCK_FILE)["pid"] == os.getpid() == taken.holder.pid
    assert notes == [f"RUN_LOCK stale lock taken over: pid {dead} on {socket.gethostname()} "
                     "since 2026-11-29T00:00:00Z is no longer running"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_lock_from_another_host_is_refused(tmp_path: Path):
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": 1, "host": "elsewhere", "started_utc": "x"}))
    with pytest.raises(Refused, match="cannot be judged stale from here"):
        RunLock(RunRoot(tmp_path), print).acquire()
    assert (tmp_path / LOCK_FILE).exists()


def test_refusals_through_the_cli(tmp_path: Path, cli):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run(empty)
    assert done.returncode == 1 and "RUN_REFUSED check=prepared:" in done.stderr
    done = cli("run", "--runs-dir", tmp_path / "nowhere")
    assert done.returncode == 1 and "RUN_REFUSED check=prepared: no prepared, unsealed root" in done.stderr

    root = prepare(tmp_path, [demo("add")])
    record = canonical.read_json(root / "prepare.json")
    record["harness"]["campaign/running/runner.py"] = "0" * 64  # as if runner.py changed after prepare
    (root / "prepare.json").write_text(canonical.dumps(record))
    done = run(root)
    assert done.returncode == 1
    assert "RUN_REFUSED check=harness: code changed since prepare: campaign/running/runner.py (changed since prepare)" in done.stderr
    assert not (root / "status.tsv").exists() and not (root / LOCK_FILE).exists()


def test_installed_versions_must_match_the_pins(tmp_path: Path):
    root = prepare(tmp_path, [demo("add")], extra_sources='\n  torch: {version: "0.0.1"}')
    done = run(root)
    assert done.returncode == 1
    assert "RUN_REFUSED check=versions: torch: manifest pins 0.0.1, installed 2." in done.stderr
    assert not (root / "cells").exists()


def test_run_and_preflight_apply_one_device_rule():
    """torch reports a bare uuid, NVML and nvidia-smi print it with GPU-: the manifest may use
    either, and run's check and the worker's preflight must agree (they once did not)."""
    from campaign.worker import preflight
    bare = "5f2c0d3e-8a41-4c2b-9d7e-1b6f0a9c3e22"
    seen = DeviceInfo(index=0, name="NVIDIA H200", uuid=bare, target="cuda:90")
    for written in (f"GPU-{bare}", bare, f"gpu-{bare.upper()}"):
        wanted = Device(backend="cuda", name="NVIDIA H200", uuid=written, target="cuda:90")
        assert runchecks.device_problems(wanted, [seen]) == [], written
        assert preflight.check_device(wanted, [seen], "CUDA_VISIBLE_DEVICES=0")[0] is True, written
    wrong = Device(backend="cuda", name="NVIDIA H200", uuid="GPU-00000000-0000-0000-0000-000000000000", target="cuda:90")
    assert runchecks.device_problems(wrong, [seen]) and preflight.check_device(wrong, [seen], "x")[0] is False
    # tools pad names: both sides compare them without surrounding blanks (run once compared them as written)
    padded = DeviceInfo(index=0, name="NVIDIA H200 ", uuid=bare, target="cuda:90")
    assert runchecks.device_problems(wanted, [padded]) == []
    assert preflight.check_device(wanted, [padded], "CUDA_VISIBLE_DEVICES=0")[0] is True
    other = DeviceInfo(index=0, name="NVIDIA H100", uuid=bare, target="cuda:90")
    assert runchecks.device_problems(wanted, [other]) == ["device 0: name 'NVIDIA H100' is not the manifest's 'NVIDIA H200'"]
    assert preflight.check_device(wanted, [other], "x")[0] is False


def test_the_worker_never_imports_parent_only_modules():
    """The child side of a cell (the worker and every plugin it loads) shares the contract,
    planning and backends with the parent, and nothing of running, judging, sealing, reporting,
    the flows or the commands: what a cell does cannot depend on the parent's code paths."""
    import pkgutil

    import campaign.plugins
    plugins = [f"campaign.plugins.{m.name}" for m in pkgutil.iter_modules(campaign.plugins.__path__)]
    code = ("import importlib, sys\n"
            f"for name in {['campaign.worker.__main__', 'campaign.worker.batch', *plugins]!r}:\n"
            "    importlib.import_module(name)\n"
            "print('\\n'.join(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stderr
    parent_only = ("campaign.running", "campaign.judging", "campaign.sealing", "campaign.reporting", "campaign.flows",
                   "campaign.commands")
    leaked = [m for m in done.stdout.split() if m.startswith(parent_only)]
    assert leaked == []
    assert "campaign.contract.devicerule" in done.stdout.split()   # the rules it shares with `run`
