"""Several workloads per worker process (``defaults.workloads_per_process``), through the real CLI on
the compile-only backend: a hang in the middle of a batch, a kernel shared by two workloads of one
process, a batch interrupted midway and resumed, and the batch plan itself."""
from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from cellrun import read_index
from conftest import run_cli
from runroots import by_id, demo, fault, manifest, rows, run, start_run, wait_until

from campaign.contract import canonical
from campaign.contract.plans import Matrix
from campaign.judging import screentable
from campaign.judging.irevidence import fingerprint
from campaign.running import batching


def _manifest(tmp_path: Path, workloads: list[str], per_process: int, rounds: int = 1) -> Path:
    return manifest(tmp_path, workloads, rounds=rounds, per_process=per_process)


def _prepare(tmp_path: Path, workloads: list[str], per_process: int, rounds: int = 1) -> Path:
    done = run_cli("prepare", _manifest(tmp_path, workloads, per_process, rounds), "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def _batches(root: Path) -> list[dict]:
    return [canonical.read_json(folder / "batch.json") for folder in sorted((root / "batches").iterdir())]


def _history(root: Path) -> list[tuple[str, str]]:
    return [(row.task_id, row.rc_name) for row in rows(root)]


def test_the_plan_keeps_the_matrix_order_at_1_and_groups_one_side_of_one_round_above(tmp_path: Path):
    root = _prepare(tmp_path, [demo("add", canary=True), demo("softmax"), demo("row_sum"), demo("matmul"),
                               fault("noop", "test_bench_noop"), fault("wait", "test_bench_wait")], 1, rounds=2)
    tasks = Matrix.model_validate(canonical.read_json(root / "matrix.json")).tasks
    assert [g for g in batching.groups(tasks, 1)] == [(t,) for t in sorted(tasks, key=lambda t: t.order)]
    planned = [[t.id for t in group] for group in batching.groups(tasks, 4)]
    assert planned[:4] == [["add/r1/baseline"], ["add/r1/candidate"], ["add/r2/candidate"], ["add/r2/baseline"]]
    # five workloads of a side at bound 4: near-equal 3 + 2, never 4 + 1
    assert planned[4:6] == [["softmax/r1/baseline", "row_sum/r1/baseline", "matmul/r1/baseline"],
                            ["noop/r1/baseline", "wait/r1/baseline"]]
    assert [group[0].split("/", 1)[1] for group in planned[4:]] == [
        "r1/baseline", "r1/baseline", "r1/candidate", "r1/candidate", "r2/candidate", "r2/candidate",
        "r2/baseline", "r2/baseline"]
    for group in batching.groups(tasks, 4):
        assert len({(t.round, t.cell) for t in group}) == 1, "one side of one round per process"
    assert sorted(t.id for g in batching.groups(tasks, 4) for t in g) == sorted(t.id for t in tasks)


def test_a_hang_in_the_middle_of_a_batch_is_its_own_row_and_a_fresh_process_finishes_the_rest(tmp_path: Path):
    # add compiles, so the hang starts well after its process did; the workload after it compiles nothing
    root = _prepare(tmp_path, [demo("add"), fault("hang", "test_bench_hang", timeout_s=6),
                               fault("softmax", "test_bench_noop")], 3)
    done = run(root)
    assert done.returncode == 0, done.stderr
    history = _history(root)
    assert sorted(history) == sorted([(f"{w}/r1/{c}", "ok") for w in ("add", "hang", "softmax")
                                      for c in ("baseline", "candidate") if (w, c) != ("hang", "candidate")]
                                     + [("hang/r1/candidate", "timed_out")]), "each task once: nothing re-run"
    hung = by_id(root)["hang/r1/candidate"]
    assert hung.rc == 124 and "timeout 6s (this workload's own, in a batch process)" in hung.note
    assert hung.elapsed_s < 15, "the hang's clock starts when the workload before it ends, not at the spawn"
    batches = _batches(root)
    assert [(b["cell"], b["tasks"], b["continues"]) for b in batches] == [
        ("baseline", ["add/r1/baseline", "hang/r1/baseline", "softmax/r1/baseline"], None),
        ("candidate", ["add/r1/candidate", "hang/r1/candidate", "softmax/r1/candidate"], None),
        ("candidate", ["softmax/r1/candidate"], "0002")]
    progress = (root / "batches" / "0002" / "progress.tsv").read_text().splitlines()
    assert [line.split("\t")[:2] for line in progress] == [
        ["start", "add/r1/candidate"], ["end", "add/r1/candidate"], ["start", "hang/r1/candidate"]]
    cells = root / "cells"
    for task in ("add/r1/candidate", "softmax/r1/candidate", "hang/r1/candidate"):
        assert (cells / task / "stderr.log").is_file() and (cells / task / "task.json").is_file()
        assert not list((cells / task).parent.glob("candidate.interrupted-*")), "nothing set aside, nothing re-run"
    assert (cells / "add/r1/candidate/result.json").is_file() and (cells / "softmax/r1/candidate/result.json").is_file()
    assert not (cells / "hang/r1/candidate/result.json").exists()
    assert "batch 0003: workload 1 of 1 in this process (continues batch 0002)" in (
        cells / "softmax/r1/candidate/run.log").read_text()
    assert (root / "receipt.json").is_file()
    verified = run_cli("verify", root)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.fixture(scope="module")
def one_process_each_side(tmp_path_factory) -> Path:
    """softmax, matmul, softmax again and matmul again in one process a side, run once for the two tests
    below, which only read it: softmax_again's kernels were loaded before matmul's (a handle handed out
    twice would join its launches to matmul), matmul_again's compiled by an earlier workload of its process."""
    again = "  - {name: softmax_again, op: softmax}\n  - {name: matmul_again, op: matmul}\n"
    root = _prepare(tmp_path_factory.mktemp("one-process"), [demo("softmax"), demo("matmul"), again], 4)
    done = run(root)
    assert done.returncode == 0, done.stderr
    return root


def test_a_kernel_compiled_by_an_earlier_workload_of_the_process_is_in_the_later_ones_evidence(one_process_each_side):
    # two workloads of one op: the second one's launches hit Triton's in-memory cache, no compile event fires
    root = one_process_each_side
    cells = root / "cells"
    for cell in ("baseline", "candidate"):
        first, later = cells / f"matmul/r1/{cell}", cells / f"matmul_again/r1/{cell}"
        index = {(r["hash"], r["kernel"], r["launches"]) for r in read_index(first)}
        assert index and index == {(r["hash"], r["kernel"], r["launches"]) for r in read_index(later)}
        # matmul's three configs are all compiled (first-config) at both sizes, the first launched
        # (twice each): the later workload holds the unlaunched ones too, from the warm-up's hook
        assert sorted(int(launches) for _, _, launches in index) == [0, 0, 0, 0, 2, 2]
        assert fingerprint(later / "ir") == fingerprint(first / "ir") is not None
        assert "compiled by an earlier workload of this process" in (later / "run.log").read_text()
        # the tuner's in-memory choice was emptied: the later workload decides its keys as a fresh process
        # does (the recording cell decides each key itself; the candidate replays them all)
        tuned = [canonical.read_json(folder / "autotune.json") for folder in (first, later)]
        assert [t["tuning_runs"] for t in tuned] == ([4, 4] if cell == "baseline" else [0, 0])
        assert len(tuned[0]["entries"]) == len(tuned[1]["entries"]) == 4
        phases = [{p["name"]: p["seconds"] for p in canonical.read_json(f / "phases.json")["phases"]}
                  for f in (cells / f"softmax/r1/{cell}", first, later)]
        assert phases[0]["start"] > 0 and phases[1]["start"] == phases[2]["start"] == 0.0, \
            "process start is the first workload's"
    assert by_id(root)["matmul_again/r1/candidate"].note.endswith("batch 0002: workload 4 of 4 in its process")
    assert fingerprint(cells / "matmul_again/r1/candidate/ir") != fingerprint(cells / "matmul_again/r1/baseline/ir")


def test_a_kernel_loaded_before_another_workloads_joins_its_launches_to_itself_not_to_the_other(one_process_each_side):
    # softmax, matmul, softmax again in one process: the compile-only driver is built anew for every
    # workload, and a handle it handed out must never be handed out again, or softmax_again's launches
    # (of the kernels softmax loaded) would join to the matmul variant loaded under the same handle
    root = one_process_each_side
    for cell in ("baseline", "candidate"):
        first, later = root / "cells" / f"softmax/r1/{cell}", root / "cells" / f"softmax_again/r1/{cell}"
        assert {r["kernel"] for r in read_index(later)} == {"softmax_kernel"}, read_index(later)
        assert fingerprint(later / "ir") == fingerprint(first / "ir") is not None


def _wait_for_start(progress: Path, task_id: str, proc) -> None:
    wait_until(lambda: progress.is_file() and f"start\t{task_id}\t" in progress.read_text(), proc,
               f"{task_id}'s start", 180)


def test_a_batch_interrupted_midway_resumes_without_running_its_finished_workloads_again(tmp_path: Path):
    # the workloads around the stopped one compile nothing: the claim is the batch's resume, the same for any
    root = _prepare(tmp_path, [fault("add", "test_bench_noop"), fault("slow", "test_bench_wait"),
                               fault("row_sum", "test_bench_noop")], 3)
    proc = start_run(root)
    try:
        _wait_for_start(root / "batches" / "0002" / "progress.tsv", "slow/r1/candidate", proc)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert _history(root)[-2:] == [("add/r1/candidate", "ok"), ("slow/r1/candidate", "interrupted")]
    done = run(root)
    assert done.returncode == 0, done.stderr
    history = _history(root)
    assert history.count(("add/r1/candidate", "ok")) == 1, "a finished workload of the batch is not run again"
    assert history[-2:] == [("slow/r1/candidate", "ok"), ("row_sum/r1/candidate", "ok")]
    resumed = _batches(root)[-1]
    assert resumed["planned"] == ["add/r1/candidate", "slow/r1/candidate", "row_sum/r1/candidate"]
    assert resumed["tasks"] == ["slow/r1/candidate", "row_sum/r1/candidate"]
    cells = root / "cells"
    assert (cells / "slow/r1/candidate.interrupted-1/stdout.log").is_file()
    assert not (cells / "add/r1/candidate.interrupted-1").exists()
    assert (root / "receipt.json").is_file()


def test_a_screen_runs_batched_cells_and_judges_each_workload_as_alone(tmp_path: Path):
    path = _manifest(tmp_path, [fault("noop", "test_bench_noop"), fault("hang", "test_bench_hang", timeout_s=4),
                                demo("add", float16=True)], 3)
    done = run_cli("screen", path, "--runs-dir", tmp_path / "screens", "--scratch-dir", tmp_path, "--grace", "1")
    assert done.returncode == 0, done.stderr
    screened = Path(done.stdout.strip().splitlines()[-1]).parent
    table = {r["workload"]: r for r in screentable.parse((screened / "screen.tsv").read_text(encoding="utf-8"))}
    assert {name: r["verdict"] for name, r in table.items()} == {"noop": "NO_ROWS", "hang": "TIMEOUT",
                                                                 "add": "NO_IR_DIFF"}
    assert table["hang"]["rc_candidate"] == "124"
    # the IR pass (round 0) is batched like any round; it found no IR change, so no round 1 ran
    assert [b["tasks"] for b in _batches(screened)] == [
        ["noop/r0/baseline", "hang/r0/baseline", "add/r0/baseline"],
        ["noop/r0/candidate", "hang/r0/candidate", "add/r0/candidate"], ["add/r0/candidate"]]
    verified = run_cli("verify", screened)
    assert verified.returncode == 0, verified.stdout + verified.stderr
