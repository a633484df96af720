"""IR-pass lanes: a screen's untimed round 0 runs several processes at once on one card
(``defaults.ir_pass_lanes``, `campaign.running.batching.lanes`), and no timed cell ever shares
its card with them. The plan and the lock on their own; end to end through the CLI on the
compile-only backend: a screen stopped in the middle of its lanes, then resumed, with a hang in
one lane that gets its own row while the other lane goes on."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, run_cli
from runroots import demo, fault, manifest, wait_until

from campaign.contract import progresslines, status
from campaign.contract.runroot import RunRoot
from campaign.flows import freeze
from campaign.judging import screenroot
from campaign.planning.matrix import expand
from campaign.running import batching
from campaign.running.lock import RunLock, _read


def test_the_runner_chooses_a_lane_per_four_cores_of_a_card_and_none_beside_a_shared_tuner_store():
    assert batching.lanes(None, 16, 1, "isolated")[0] == 4
    assert batching.lanes(None, 32, 2, "isolated")[0] == 4
    assert batching.lanes(None, 64, 1, "isolated")[0] == batching.RUNNER_LANES
    assert batching.lanes(None, 2, 1, "isolated") == (1, "the runner's choice: 2 cores, 1 card(s), one lane per 4 cores")
    assert batching.lanes(3, 2, 1, "isolated") == (3, "the manifest's ir_pass_lanes")
    assert batching.lanes(3, 16, 1, "shared")[0] == 1, "processes at once would write one FlagGems tuner store"


def test_the_manifests_lanes_are_frozen_in_the_matrix(tmp_path: Path):
    """Prepare freezes ``ir_pass_lanes`` into matrix.json: the session reads the plan, not the root's
    manifest copy (`tests/structure/test_read_road.py` holds that it reads no manifest default); unset,
    the key is left out (older roots: same bytes)."""
    for lanes, expected in ((3, {"ir_pass_lanes": 3}), (None, {})):
        (tmp_path / str(lanes)).mkdir()
        checked = freeze.check(manifest(tmp_path / str(lanes), [demo("add"), demo("softmax")], lanes=lanes))
        matrix = expand(checked.manifest, checked.resolved, ir_pass=True)
        assert matrix.ir_pass_lanes == lanes
        assert {k: v for k, v in matrix.model_dump(mode="json").items() if k == "ir_pass_lanes"} == expected


def test_lanes_cut_only_the_ir_pass_into_batches_and_leave_canaries_and_timed_sides_alone(tmp_path: Path):
    path = manifest(tmp_path, [demo("add", canary=True), demo("softmax"), demo("row_sum"), demo("matmul")])
    checked = freeze.check(path)
    tasks = expand(checked.manifest, checked.resolved, ir_pass=True).tasks
    one = [[t.id for t in g] for g in batching.groups(tasks, 8, lanes=1)]
    two = [[t.id for t in g] for g in batching.groups(tasks, 8, lanes=2)]
    assert one[:4] == two[:4] == [["add/r0/baseline"], ["add/r0/candidate"], ["add/r1/baseline"], ["add/r1/candidate"]]
    assert one[4:6] == [["softmax/r0/baseline", "row_sum/r0/baseline", "matmul/r0/baseline"],
                        ["softmax/r0/candidate", "row_sum/r0/candidate", "matmul/r0/candidate"]]
    assert two[4:6] == one[4:6], "each IR-pass side one group: the queue its lanes claim workloads from"
    small = [[t.id for t in g] for g in batching.groups(tasks, 2, lanes=2)]
    assert small[4:6] == one[4:6], "the bound limits a process's claims, not the side's queue"
    assert one[6:] == two[6:], "the timed round is batched as without lanes"
    kinds = [batching.lane_kind(g) for g in batching.groups(tasks, 8, 2)]
    assert kinds[:6] == [batching.CANARIES] * 2 + [None] * 2 + [batching.IR_PASS] * 2, \
        "the canary's IR-pass sides run at once with each other only; its timed sides alone; the IR pass in lanes"
    assert set(kinds[6:]) == {None}, "a timed group never shares its card"


def test_an_ir_pass_side_hands_out_heavier_workloads_first_and_nothing_else_moves(tmp_path: Path):
    """``weight_s`` orders each IR-pass side's queue heavier first, then the run order (a workload without
    a weight weighs nothing), as Ray's submissions are ordered; canaries, the timed rounds and a plan
    without lanes keep the run order. Lost by it: a stopped weighted screen holds its heaviest
    workloads, not the manifest's first."""
    path = manifest(tmp_path, [demo("add", canary=True), demo("softmax"), demo("row_sum"), demo("matmul")])
    tasks = expand(freeze.check(path).manifest, freeze.check(path).resolved, ir_pass=True).tasks
    weight = {"matmul": 30.0, "row_sum": 20.0, "add": 99.0}
    plain = [[t.id for t in g] for g in batching.groups(tasks, 8, lanes=2)]
    weighed = [[t.id for t in g] for g in batching.groups(tasks, 8, lanes=2, weight=weight)]
    assert weighed[4:6] == [["matmul/r0/baseline", "row_sum/r0/baseline", "softmax/r0/baseline"],
                            ["matmul/r0/candidate", "row_sum/r0/candidate", "softmax/r0/candidate"]]
    assert weighed[:4] == plain[:4] and weighed[6:] == plain[6:], "canaries and timed rounds keep the run order"
    assert batching.groups(tasks, 8, lanes=1, weight=weight) == batching.groups(tasks, 8, lanes=1)
    assert batching.heavier_first(weight, "softmax", 3) == (0.0, 3) < batching.heavier_first({}, "x", 4)


@pytest.mark.slow
def test_a_weighted_screen_s_lanes_claim_the_heavier_workloads_first(tmp_path: Path):
    """End to end on the compile-only backend: the runner hands the manifest's weights to the queues,
    and each side's process claims matmul (30 s), row_sum (20 s), then softmax (none) whatever the
    manifest's order."""
    path = manifest(tmp_path, [demo("softmax", float16=True), demo("row_sum", float16=True),
                               demo("matmul", float16=True)], campaign="weighed", lanes=2)
    text = path.read_text(encoding="utf-8")
    for name, seconds in (("matmul", 30), ("row_sum", 20)):
        text = text.replace(f"{{name: {name}, op: {name}", f"{{name: {name}, op: {name}, weight_s: {seconds}")
    path.write_text(text, encoding="utf-8")
    done = run_cli("screen", path, "--runs-dir", tmp_path / "runs", "--scratch-dir", tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    root = next((tmp_path / "runs").glob("weighed-screen-*"))
    for side in ("baseline", "candidate"):
        starts = sorted((e.unix, e.task_id.split("/")[0]) for p in root.glob("batches/*/progress.tsv")
                        for e in batching.read(p) if e.kind == "start" and e.task_id.endswith(f"/r0/{side}"))
        assert [name for _unix, name in starts] == ["matmul", "row_sum", "softmax"], (side, starts)


def test_the_lock_holds_every_lane_and_a_takeover_ends_them_all(tmp_path: Path):
    lock = RunLock(RunRoot(tmp_path), report=lambda text: None)
    lock.acquire()
    lock.running("a/r0/baseline", 111, None, 0)
    lock.running("b/r0/baseline", 222, None, 1)
    lock.running("c/r0/baseline", 333, 1, 0)
    data = json.loads((tmp_path / "run.lock").read_text(encoding="utf-8"))
    assert data["workers"] == {"/0": {"task_id": "a/r0/baseline", "worker_pgid": 111},
                               "/1": {"task_id": "b/r0/baseline", "worker_pgid": 222},
                               "1/0": {"task_id": "c/r0/baseline", "worker_pgid": 333}}
    assert sorted(_read(tmp_path / "run.lock").groups()) == [("a/r0/baseline", 111), ("b/r0/baseline", 222),
                                                             ("c/r0/baseline", 333)]
    lock.running(None, None, None, 0)
    lock.running(None, None, 1, 0)
    assert json.loads((tmp_path / "run.lock").read_text(encoding="utf-8"))["workers"] == \
        {"/1": {"task_id": "b/r0/baseline", "worker_pgid": 222}}
    lock.release()


def _lines(out: str) -> list[tuple[str, str]]:
    """(start|end, task id) of the runner's progress lines, in the order printed."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"\] (start|end) (\S+?)[: ]", out)]


def _started(root: Path, task_id: str) -> bool:
    return any(line.startswith(f"start\t{task_id}\t")
               for p in root.glob("batches/*/progress.tsv") for line in p.read_text().splitlines())


@pytest.mark.slow
def test_a_screen_stopped_inside_its_lanes_resumes_them_and_a_hung_lane_gets_its_own_row(tmp_path: Path):
    # add (the canary: its two IR-pass sides at once, before anything else), softmax, a hang (candidate
    # only) and matmul; two lanes claim each IR-pass side's workloads from its queue
    # each demo op at float16 alone: its IR, at half the compiles (`runroots.FLOAT16`)
    path = manifest(tmp_path, [demo("add", canary=True, float16=True), demo("softmax", float16=True),
                               fault("hang", "test_bench_hang", timeout_s=8), demo("matmul", float16=True)],
                    campaign="lanes", lanes=2)
    proc = subprocess.Popen([sys.executable, "-m", "campaign", "screen", str(path), "--runs-dir", str(tmp_path / "runs"),
                             # cpu runs no round 1 unless asked (IR_PASS_DECIDES): asked, so that timed cells
                             # follow the lanes as on a card
                             "--scratch-dir", str(tmp_path), "--grace", "1", "--time-unchanged"], cwd=PROJECT_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        root = wait_until(lambda: next((r for r in (tmp_path / "runs").glob("lanes-screen-*")
                                        if _started(r, "hang/r0/candidate")), None), proc, "the hang's start", 240)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    lines = _lines(out)
    canary = [i for i, (_kind, task) in enumerate(lines) if task.startswith("add/r0/")]
    assert [kind for i, (kind, _task) in enumerate(lines) if i in canary] == ["start", "start", "end", "end"], lines
    assert min(i for i, (_kind, task) in enumerate(lines) if not task.startswith("add/")) > max(canary), lines
    assert "canaries: 2 untimed cells in 2 processes, 2 at once on this card" in out + err
    assert not (root / "run.lock").exists() and not (root / "receipt.json").exists()
    first = status.read(root / "status.tsv")[0]
    assert status.latest(first)["hang/r0/candidate"].rc_name == status.INTERRUPTED
    # the canary runs all its rounds first, alone; no other round 1 started beside the lanes
    assert not [r for r in first if r.round == 1 and r.workload != "add"], "no timed cell beside the lanes"
    finished = {r.task_id for r in first if r.rc_name == "ok"}

    resumed = run_cli("screen", "--resume", root, "--scratch-dir", tmp_path, "--grace", "1", timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert run_cli("verify", root).returncode == 0
    rows = status.read(root / "status.tsv")[0]
    for task_id in finished:
        assert [r.task_id for r in rows].count(task_id) == 1, f"{task_id} finished before the stop and ran again"
    latest = status.latest(rows)
    hung = latest["hang/r0/candidate"]
    assert hung.rc_name == "timed_out" and "IR pass lane" in hung.note, hung
    for task_id in ("add/r0/baseline", "add/r0/candidate", "softmax/r0/candidate", "matmul/r0/baseline",
                    "matmul/r0/candidate"):
        assert latest[task_id].rc_name == "ok"
    lanes_used = {re.search(r"IR pass lane (\d) of 2", latest[t].note).group(1)
                  for t in latest if "/r0/" in t and "IR pass lane" in latest[t].note}
    assert lanes_used == {"1", "2"}
    assert latest["matmul/r1/candidate"].rc_name == "ok" and "IR pass lane" not in latest["matmul/r1/candidate"].note

    # the resumed lanes overlapped, and every timed cell started after the last IR-pass cell ended
    lines = _lines(resumed.stdout)
    ir = [i for i, (_kind, task) in enumerate(lines) if "/r0/" in task]
    first_end = next(i for i in ir if lines[i][0] == "end")
    assert sum(1 for i in ir if i < first_end and lines[i][0] == "start") >= 2, lines
    timed = [i for i, (kind, task) in enumerate(lines) if kind == "start" and "/r1/" in task]
    assert timed and min(timed) > max(ir), lines
    # the IR pass's rows are labelled as such on every backend; round 1's on cpu as compile-only
    assert "rows compiled, not timed (IR pass: untimed)" in latest["add/r0/candidate"].note
    # a lane's worker compiles matmul's configs on its share of the cores; the timed cell, alone, on all
    cores = len(os.sched_getaffinity(0))
    log = {t: (root / "cells" / t / "run.log").read_text(encoding="utf-8") for t in ("matmul/r0/candidate", "matmul/r1/candidate")}
    assert f"on {max(1, cores // 2)} compile thread(s)" in log["matmul/r0/candidate"], log["matmul/r0/candidate"]
    assert f"on {cores} compile thread(s)" in log["matmul/r1/candidate"], log["matmul/r1/candidate"]
    assert "rows compiled, not timed (compile-only)" in latest["matmul/r1/candidate"].note
    # the folders set aside are of cells the stop cut, in whichever lane: kept, never run over (the sides run
    # at once, so the stop may also cut the other side's cell before its worker made its folder: nothing to keep)
    cut = {r.task_id for r in first if r.rc_name == status.INTERRUPTED}
    aside = {f"{p.parent.parent.name}/r0/{p.name.split('.')[0]}" for p in (root / "cells").glob("*/r0/*.interrupted-*")}
    assert aside <= cut and "hang/r0/candidate" in aside, (aside, cut)
    assert all(latest[task_id].rc_name == "ok" for task_id in cut - {"hang/r0/candidate"}), "each cut cell ran again"
    table = {r["workload"]: r for r in screenroot.table(root)}
    assert {w: r["verdict"] for w, r in table.items() if w != "hang"} == \
        {"add": "NO_IR_DIFF", "softmax": "NO_IR_DIFF", "matmul": "IR_CHANGED"}
    assert table["hang"]["verdict"] != "IR_CHANGED", table["hang"]
    assert latest["add/r1/candidate"].rc_name == "ok" and "IR pass" not in table["add"]["note"]
    # `campaign cost` says the IR-pass walls overlap (their sum is more than the time that passed)
    cost = run_cli("cost", root)
    assert cost.returncode == 0 and "IR-pass cells ran up to 2 at once on this host's cores, compiling for its declared card" in cost.stdout, cost.stdout[:600]
    # and the time that passed: freeze to seal from the root's own records, and the batches' span by their clock
    created = json.loads((root / "prepare.json").read_text())["created_utc"]
    sealed = json.loads((root / "receipt.json").read_text())["sealed_utc"]
    assert f"Prepared {created}, sealed {sealed}: " in cost.stdout and " from freeze to seal " in cost.stdout
    events = [e for p in root.glob("batches/*/progress.tsv") for e in progresslines.parse(p.read_text())]
    span = round(max(e.unix for e in events) - min(e.unix for e in events))
    assert f"ran from their first start to their last end for {span // 60} min {span % 60:02d} s" in cost.stdout
    # rescore re-judges the IR pass's pair the same way, beside the root
    again = run_cli("screen", "--rescore", root)
    assert again.returncode == 0, again.stderr
    assert Path(again.stdout.strip().splitlines()[-1]).read_bytes() == (root / "screen.tsv").read_bytes()
