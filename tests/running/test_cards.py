"""Several cards of one host: pure card selection and placement, the lock's per-card entries,
status.tsv's device column, the caliber across cards; and real 2-card runs on the compile-only
backend's declared virtual cards (the CLI as a subprocess; discovery replaced only where a card
must fail its check)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import rootbuilder as rb
import runroots as rr

from campaign import cli
from campaign.backends.base import DeviceInfo
from campaign.contract import status
from campaign.contract.errors import InputError
from campaign.contract.manifest import Device
from campaign.contract.runroot import RunRoot
from campaign.flows import cardrun
from campaign.judging import caliber
from campaign.planning import cardplan
from campaign.planning.partition import Weight
from campaign.running.lock import RunLock, _is_worker_group

# add has no weight_s: it weighs the mean of the others (40, said "equal"); LPT puts matmul (50) on
# card 0, add (40) on card 1, then softmax (30) on card 1, the lighter: 50 vs 70 against a floor of 60.
# No canary here, so add and softmax share a process a side (the canary's card runs are PLACED's)
WORKLOADS = [rr.demo("add"), "  - {name: matmul, op: matmul, weight_s: 50}\n",
             "  - {name: softmax, op: softmax, weight_s: 30}\n"]
GOLDEN = {"schema_version": 1, "weights_from": None, "critical_path_s": 70.0, "floor_s": 60.0,
          "sources": ["equal", "weight_s"],
          "cards": [{"slot": 0, "index": 0, "uuid": "cpu-virtual-0", "workloads": ["matmul"], "predicted_s": 50.0},
                    {"slot": 1, "index": 1, "uuid": "cpu-virtual-1", "workloads": ["add", "softmax"],
                     "predicted_s": 70.0}],
          "weights": {"add": {"seconds": 40.0, "source": "equal"}, "matmul": {"seconds": 50.0, "source": "weight_s"},
                      "softmax": {"seconds": 30.0, "source": "weight_s"}}}
# The same names and weights, so the same placement, over benchmarks that compile nothing: the tests of
# failing cards and killed runners are about where cells run and resume, not about what they compile,
# and a cell that skips compiling and timing costs about half (verdicts are compared on WORKLOADS)
PLACED = [rr.fault("add", "test_bench_noop", canary=True),
          f'  - {{name: matmul, op: add, benchmark: "{rr.FAULTS}::test_bench_noop", weight_s: 50}}\n',
          f'  - {{name: softmax, op: add, benchmark: "{rr.FAULTS}::test_bench_noop", weight_s: 30}}\n']


def _prepare(tmp_path: Path, cards: int, where: str = "two", campaign: str = "cards",
             workloads: list[str] = WORKLOADS) -> Path:
    (tmp_path / where).mkdir(exist_ok=True)
    path = rr.manifest(tmp_path / where, workloads, rounds=1, campaign=campaign)
    if cards > 1:
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace('  target: "cuda:90"\n', f'  target: "cuda:90"\n  count: {cards}\n'), encoding="utf-8")
    done = rr.run_cli("prepare", path, "--runs-dir", tmp_path / where / "runs")
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def _verdicts(root: Path) -> dict:
    workloads = json.loads((root / "receipt.json").read_text(encoding="utf-8"))["verdicts"]["workloads"]
    return {name: (w["class"], w["screen"], w["ir"]["fingerprints"], w["ir"]["changed"], w["reason"])
            for name, w in workloads.items()}


def _devices_of(root: Path) -> dict[str, set]:
    found: dict[str, set] = {}
    for row in rr.rows(root):
        found.setdefault(row.workload, set()).add(row.device)
    return found


# -- pure ----------------------------------------------------------------------------------

def _info(index: int, uuid: str, name: str = "NVIDIA H200", target: str = "cuda:90") -> DeviceInfo:
    return DeviceInfo(index=index, name=name, uuid=uuid, target=target)


def test_select_resolves_indices_uuids_and_count_and_narrows_by_devices():
    found = [_info(0, "GPU-a"), _info(1, "GPU-b"), _info(2, "GPU-c", name="NVIDIA H100")]
    by_count = Device(backend="cuda", name="NVIDIA H200", target="cuda:90", count=2)
    cards, failed = cardplan.select(by_count, found, None, ["6", "7", "5"])
    assert [(c.slot, c.index, c.uuid, c.visible) for c in cards] == [(0, 0, "GPU-a", "6"), (1, 1, "GPU-b", "7")]
    assert failed == []
    by_uuid = Device(backend="cuda", name="NVIDIA H200", target="cuda:90", uuids=("GPU-b", "c"))
    cards, failed = cardplan.select(by_uuid, found, None, None)
    assert [(c.slot, c.index, c.visible) for c in cards] == [(0, 1, "1")]
    assert [(c.slot, c.uuid, why) for c, why in failed] == [(1, "GPU-c", "name 'NVIDIA H100' is not the manifest's "
                                                                 "'NVIDIA H200'")]
    by_index = Device(backend="cuda", name="NVIDIA H200", target="cuda:90", indices=(1, 4))
    cards, failed = cardplan.select(by_index, found, [1], None)
    assert [c.index for c in cards] == [1] and failed == []
    cards, failed = cardplan.select(by_index, found, None, None)
    assert [why for _c, why in failed] == ["index 4 is not visible"]
    with pytest.raises(InputError, match="--devices 0,1: 0 is not among the manifest's cards"):
        cardplan.select(by_index, found, [0, 1], None)


def test_replace_onto_keeps_each_card_its_own_and_moves_only_the_unfinished_of_cards_left_out():
    weights = {n: Weight(s, "weight_s") for n, s in {"a": 50, "b": 30, "c": 20, "d": 10, "e": 5}.items()}
    placement = {0: ("a", "e"), 1: ("b", "c", "d")}
    groups, moved = cardplan.replace_onto(placement, [0], {"c", "d", "e"}, weights)
    assert groups == {0: ("a", "e", "c", "d")} and moved == {"c": 0, "d": 0}
    groups, moved = cardplan.replace_onto({0: ("a",), 1: ("b",), 2: ("c", "d")}, [0, 1], {"a", "c", "d"}, weights)
    # card 1's b is finished: its remaining load is 0, so both go there, and a (unfinished, 50) keeps card 0 busy
    assert groups == {0: ("a",), 1: ("b", "c", "d")} and moved == {"c": 1, "d": 1}


@pytest.mark.parametrize("device, message", [
    ({"count": 2, "indices": [0, 1]}, "count and indices both name the cards"),
    ({"indices": [0, 0]}, "indices must name distinct cards"),
    ({"uuid": "GPU-a", "count": 2}, "uuid names one card and count several"),
])
def test_the_manifest_refuses_cards_named_two_ways(device, message):
    with pytest.raises(ValueError, match=message):
        Device(backend="cuda", name="NVIDIA H200", target="cuda:90", **device)


def test_the_cpu_backend_declares_virtual_cards_only_by_count():
    with pytest.raises(ValueError, match="`count` declares virtual ones"):
        Device(backend="cpu", target="cuda:90", indices=(0, 1))
    assert Device(backend="cpu", target="cuda:90").cards == 1
    assert [d.uuid for d in cardplan.virtual_cards(Device(backend="cpu", target="cuda:90", count=2))] == \
        ["cpu-virtual-0", "cpu-virtual-1"]


def test_status_writes_the_device_column_only_for_cards_and_reads_old_roots(tmp_path):
    one, two = tmp_path / "one.tsv", tmp_path / "two.tsv"
    row = status.StatusRow(task_id="a/r1/baseline", round=1, workload="a", cell="baseline", rc=0, rc_name="ok")
    status.append(one, row)
    assert one.read_text(encoding="utf-8").splitlines()[0] == "\t".join(status.COLUMNS)
    assert status.read(one) == ([row], [])
    status.append(two, status.StatusRow(**{**row.__dict__, "device": "GPU-a"}))
    status.append(two, status.StatusRow(**{**row.__dict__, "rc_name": "interrupted", "device": "GPU-b"}))
    rows, bad = status.read(two)
    assert bad == [] and [r.device for r in rows] == ["GPU-a", "GPU-b"]
    assert two.read_text(encoding="utf-8").splitlines()[0].endswith("\tnote\tdevice")


def test_appends_from_several_threads_never_interleave(tmp_path):
    path = tmp_path / "status.tsv"
    row = status.StatusRow(task_id="a/r1/baseline", round=1, workload="a", cell="baseline", rc=0, rc_name="ok",
                           note="x" * 20000, device="GPU-a")
    threads = [threading.Thread(target=lambda: [status.append(path, row) for _ in range(20)]) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows, bad = status.read(path)
    assert bad == [] and len(rows) == 80


def test_a_card_failed_row_is_history_and_runs_again():
    base = dict(round=1, workload="a", cell="baseline", rc=None)
    rows = [status.StatusRow(task_id="a/r1/baseline", rc_name=status.CARD_FAILED, **base)]
    assert status.settled(rows) == {}


def test_the_lock_keeps_one_running_worker_per_card(tmp_path):
    lock = RunLock(RunRoot(tmp_path), report=lambda text: None)
    lock.acquire()
    lock.running("a/r1/baseline", 111, 0)
    lock.running("b/r1/baseline", 222, 1)
    data = json.loads((tmp_path / "run.lock").read_text(encoding="utf-8"))
    assert data["workers"] == {"0": {"task_id": "a/r1/baseline", "worker_pgid": 111},
                               "1": {"task_id": "b/r1/baseline", "worker_pgid": 222}}
    lock.running(None, None, 0)
    data = json.loads((tmp_path / "run.lock").read_text(encoding="utf-8"))
    assert data["workers"] == {"1": {"task_id": "b/r1/baseline", "worker_pgid": 222}}
    lock.release()


CELLS = ("baseline", "control", "candidate")


def test_cards_of_one_model_are_one_caliber_a_different_model_is_a_mismatch(tmp_path):
    per_card = {f"matmul/r{r}/{c}": {"device_uuid": "GPU-a"} for r in (1, 2, 3, 4) for c in CELLS}
    per_card.update({f"add/r{r}/{c}": {"device_uuid": "GPU-b"} for r in (1, 2, 3, 4) for c in CELLS})
    root = rb.build(tmp_path / "same", [rb.mm(), rb.pointwise("add", "add")], rb.Options(identity=per_card))
    matrix = RunRoot(root).matrix
    assert caliber.compare(matrix.tasks, caliber.load_identities(root, matrix.tasks)).ok
    crossed = {**per_card, "matmul/r2/candidate": {"device_uuid": "GPU-b"}}
    root = rb.build(tmp_path / "crossed", [rb.mm(), rb.pointwise("add", "add")], rb.Options(identity=crossed))
    matrix = RunRoot(root).matrix
    assert any("device_uuid" in line for line in caliber.compare(matrix.tasks, caliber.load_identities(
        root, matrix.tasks)).lines())
    other = {**per_card, **{f"add/r{r}/{c}": {"device_uuid": "GPU-b", "device_name": "NVIDIA H100"}
                            for r in (1, 2, 3, 4) for c in CELLS}}
    root = rb.build(tmp_path / "other", [rb.mm(), rb.pointwise("add", "add")], rb.Options(identity=other))
    done = rr.run_cli("report", root)
    assert done.returncode == 4 and "device_name" in done.stderr, done.stderr


# -- real runs on the compile-only backend's two declared cards --------------------------------

@pytest.mark.slow
def test_two_cards_golden_partition_sealed_verified_reported_and_verdicts_equal_one_card(tmp_path):
    two = _prepare(tmp_path, 2)
    done = rr.run(two)
    assert done.returncode == 0, done.stderr
    assert "partition: add weighed equal (no weight_s, no --weights-from)" in done.stdout
    assert json.loads((two / "partition.json").read_text(encoding="utf-8")) == GOLDEN
    assert _devices_of(two) == {"matmul": {"cpu-virtual-0"}, "softmax": {"cpu-virtual-1"}, "add": {"cpu-virtual-1"}}
    assert "partition.json" in json.loads((two / "receipt.json").read_text(encoding="utf-8"))["files"]
    assert rr.run_cli("verify", two).returncode == 0
    report = rr.run_cli("report", two)
    assert report.returncode == 0, report.stderr
    assert "| 0 | cpu-virtual-0 | matmul | 50.0 |" in report.stdout
    assert "| 1 | cpu-virtual-1 | add, softmax | 70.0 |" in report.stdout
    assert "Critical path" in report.stdout and "max(heaviest workload, total / 2)" in report.stdout
    one = _prepare(tmp_path, 1, "one")   # prepared just before its run: code moves under a long test
    done = rr.run(one)
    assert done.returncode == 0, done.stderr
    assert not (one / "partition.json").exists()
    assert rr.rows(one)[0].device is None and "device" not in (one / "status.tsv").read_text().splitlines()[0]
    assert "Partition over cards" not in rr.run_cli("report", one).stdout
    assert _verdicts(two) == _verdicts(one)
    # the one-card root's own seconds weigh a new partition of the same manifest (device aside)
    third = _prepare(tmp_path, 2, "third")
    setup = rr.run_setup(third)
    groups, failed = cardrun.plan(setup, _cpu(), None, one, {}, threading.Lock())
    data = json.loads((third / "partition.json").read_text(encoding="utf-8"))
    spent = {w: sum(r.elapsed_s for r in rr.rows(one) if r.workload == w) for w in ("add", "matmul", "softmax")}
    assert data["sources"] == ["sealed root"] and str(one) in data["weights_from"]
    assert {n: w["seconds"] for n, w in data["weights"].items()} == {n: round(s, 3) for n, s in spent.items()}
    assert failed == [] and sorted(n for _c, names in groups for n in names) == ["add", "matmul", "softmax"]
    with pytest.raises(InputError, match="not a sealed root"):
        cardrun.root_weights(third, setup)
    with pytest.raises(InputError, match="its manifest is not this root's"):
        cardrun.root_weights(one, rr.run_setup(_prepare(tmp_path, 2, "renamed", campaign="renamed")))


def _cpu():
    from campaign.backends import get_backend
    return get_backend("cpu")


@pytest.mark.slow
def test_a_card_failing_its_check_marks_its_workloads_and_they_resume_on_another_card(tmp_path, monkeypatch, capsys):
    root = _prepare(tmp_path, 2, workloads=PLACED)
    real = cardrun.discover

    def card_1_is_another_target(backend, device):
        found = real(backend, device)
        return [found[0], DeviceInfo(index=1, name=found[1].name, uuid=found[1].uuid, target="cuda:80")]

    monkeypatch.setattr(cardrun, "discover", card_1_is_another_target)
    code = cli.main(["run", str(root), "--grace", "1", "--scratch-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "RUN_FAILED check=card: card 1 (cpu-virtual-1): target cuda:80 is not the manifest's cuda:90" in err and "--devices 0` runs them" in err
    latest = status.latest(rr.rows(root))
    marked = {tid: row for tid, row in latest.items() if row.rc_name == status.CARD_FAILED}
    assert sorted(marked) == ["add/r1/baseline", "add/r1/candidate", "softmax/r1/baseline", "softmax/r1/candidate"]
    assert all(r.device == "cpu-virtual-1" and "target cuda:80" in r.note for r in marked.values())
    assert latest["matmul/r1/candidate"].rc_name == "ok" and not (root / "receipt.json").exists()
    done = rr.run(root, "--devices", "0")
    assert done.returncode == 0, done.stderr
    assert _devices_of(root)["add"] == {"cpu-virtual-1", "cpu-virtual-0"}
    assert {t: r.device for t, r in status.latest(rr.rows(root)).items()} == dict.fromkeys(latest, "cpu-virtual-0")
    moved = json.loads((root / "partition.resume-1.json").read_text(encoding="utf-8"))["moved"]
    assert moved == {"add": {"slot": 0, "uuid": "cpu-virtual-0"}, "softmax": {"slot": 0, "uuid": "cpu-virtual-0"}}
    assert rr.run_cli("verify", root).returncode == 0
    assert "moved on resume to cpu-virtual-0" in rr.run_cli("report", root).stdout


@pytest.mark.slow
def test_a_killed_runner_of_two_cards_resumes_each_card_on_its_own_workloads(tmp_path):
    root = _prepare(tmp_path, 2, workloads=PLACED)
    proc = rr.start_run(root)
    lock = root / "run.lock"
    deadline = time.monotonic() + 120
    workers: dict = {}
    while time.monotonic() < deadline and len(workers) < 2:
        try:
            workers = json.loads(lock.read_text(encoding="utf-8")).get("workers") or {}
        except (OSError, ValueError):
            workers = {}
        time.sleep(0.05)
    assert len(workers) == 2, workers            # both cards busy at once, each in the lock
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    before = (root / "status.tsv").read_text(encoding="utf-8") if (root / "status.tsv").exists() else ""
    done = rr.run(root)
    assert done.returncode == 0, done.stderr
    assert f"RUN_LOCK stale lock taken over: pid {proc.pid}" in done.stderr
    assert (root / "status.tsv").read_text(encoding="utf-8").startswith(before)
    for entry in workers.values():                # each cell the kill stopped was kept aside and run again
        cell = root / "cells" / Path(*entry["task_id"].split("/"))
        assert cell.with_name(cell.name + ".interrupted-1").is_dir()
    assert _devices_of(root) == {"matmul": {"cpu-virtual-0"}, "softmax": {"cpu-virtual-1"}, "add": {"cpu-virtual-1"}}
    assert rr.run_cli("verify", root).returncode == 0


def test_only_a_campaign_worker_leads_a_group_a_takeover_ends_and_a_zombie_is_none():
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "campaign.worker"],
                              start_new_session=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    zombie = subprocess.Popen([sys.executable, "-c", "pass", "campaign.worker"])   # exits, not reaped yet
    try:
        # read at once: the kernel fills a fresh process's cmdline a moment after Popen returns
        assert _is_worker_group(worker.pid) and not _is_worker_group(other.pid)
        while Path(f"/proc/{zombie.pid}/stat").read_text().split(") ")[1][0] != "Z":
            time.sleep(0.01)
        started = time.monotonic()
        assert not _is_worker_group(zombie.pid), "a zombie's cmdline is empty: no worker to end"
        assert time.monotonic() - started < 2
    finally:
        for proc in (worker, other):
            proc.kill()
            proc.wait()
        zombie.wait()


def test_a_takeover_ends_the_orphaned_worker_of_every_card(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphans = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "campaign.worker"],
                                start_new_session=True) for _ in range(2)]
    try:
        (tmp_path / "run.lock").write_text(json.dumps({
            "pid": dead.pid, "host": socket.gethostname(), "started_utc": "2026-11-30T00:00:00Z",
            "worker_pgid": None, "task_id": None,
            "workers": {"0": {"task_id": "a/r1/baseline", "worker_pgid": orphans[0].pid},
                        "1": {"task_id": "b/r1/baseline", "worker_pgid": orphans[1].pid}}}), encoding="utf-8")
        said: list[str] = []
        lock = RunLock(RunRoot(tmp_path), report=said.append, grace_s=1)
        lock.acquire()
        assert [orphan.wait(timeout=10) for orphan in orphans] == [-signal.SIGTERM, -signal.SIGTERM]
        assert [line.split(" of ")[1].split(" with ")[0] for line in said if "ended the orphaned" in line] == \
            ["a/r1/baseline", "b/r1/baseline"]
        lock.release()
    finally:
        for orphan in orphans:
            if orphan.poll() is None:
                orphan.kill()


def test_a_group_sees_only_its_card_and_its_workloads(tmp_path):
    from campaign.running.cards import group_setup
    setup = rr.run_setup(_prepare(tmp_path, 2))
    setup = type(setup)(**{**setup.__dict__, "pinned_env": {"NO_COLOR": "1"}, "visibility_variable": "CUDA_VISIBLE_DEVICES"})
    card = cardplan.Card(slot=1, index=1, uuid="GPU-b", visible="7")
    narrowed = group_setup(setup, ["add"], card)
    assert narrowed.pinned_env == {"NO_COLOR": "1", "CUDA_VISIBLE_DEVICES": "7"} and setup.pinned_env == {"NO_COLOR": "1"}
    assert narrowed.workloads == {"add"} and narrowed.card is card


def test_devices_on_a_one_card_root_is_bad_usage_and_leaves_no_lock(tmp_path):
    root = _prepare(tmp_path, 1)
    done = rr.run(root, "--devices", "0")
    assert done.returncode == 2 and "manifest names one card" in done.stderr, done.stderr
    assert not (root / "run.lock").exists() and not (root / "status.tsv").exists()
    bad = rr.run_cli("run", root, "--devices", "0,0")
    assert bad.returncode == 2 and "expected distinct card indices" in bad.stderr
