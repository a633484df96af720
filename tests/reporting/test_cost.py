"""`campaign cost ROOT`: where a root's seconds went, from the phases the worker records
(phases.json) and the runner's status rows; and the worker's recording of those phases."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

from conftest import PROJECT_ROOT
from rootbuilder import Options, build, pointwise
from taskplan import run_worker, write_plan

from campaign.contract import canonical, status
from campaign.contract.artifacts import PHASES_FILE, cell_dir_name
from campaign.contract.cellfiles import PHASE_NAMES, CellResult, Phase, Phases
from campaign.contract.errors import WorkerExit
from campaign.worker import facts
from campaign.worker.phases import Recorder

RECEIPTS = PROJECT_ROOT / "receipts"
# seconds per phase written into each recorded cell: exact in binary, so sums compare exactly
SECONDS = {"start": 1.5, "imports": 6.25, "preflight": 0.125, "compile": 2.0, "tuning": 0.0, "timing": 3.5,
           "correctness": 0.0, "write-out": 0.5}


def _record(root: Path, task_id: str, seconds=SECONDS, recorded_as: str | None = None) -> None:
    phases = Phases(task_id=recorded_as or task_id,
                    phases=tuple(Phase(name=n, seconds=seconds[n], label=f"what {n} includes") for n in PHASE_NAMES))
    canonical.write_json_new(root / cell_dir_name(task_id) / PHASES_FILE, phases.model_dump(mode="json"))


def _root(tmp_path: Path) -> tuple[Path, dict[str, status.StatusRow]]:
    """add: every cell recorded; softmax: none (a root from before phases), one cell skipped."""
    root = build(tmp_path, [pointwise("add"), pointwise("softmax", op="softmax")],
                 Options(backend="cpu", rounds=2, skip={"softmax/r2/candidate"}))
    rows = status.latest(status.read(root / "status.tsv")[0])
    for task_id in rows:
        if task_id.startswith("add/"):
            _record(root, task_id)
    return root, rows


def _tree(root: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_mode)
            for p in sorted(root.rglob("*"))}


def _cost(*args):
    return subprocess.run([sys.executable, "-m", "campaign", "cost", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def _tsv(text: str) -> list[dict[str, str]]:
    header, *lines = text.splitlines()
    return [dict(zip(header.split("\t"), line.split("\t"))) for line in lines]


def test_tsv_sums_recorded_cells_per_workload_and_phase_and_leaves_unrecorded_ones_empty(tmp_path):
    root, rows = _root(tmp_path)
    proc = _cost(root, "--format", "tsv")
    assert proc.returncode == 0, proc.stderr
    table = _tsv(proc.stdout)
    by = {(line["scope"], line["name"]): line for line in table}
    add_cells = [r for t, r in rows.items() if t.startswith("add/")]
    add = by[("workload", "add")]
    assert (add["cells"], add["recorded"]) == (str(len(add_cells)), str(len(add_cells))) == ("6", "6")
    for name in PHASE_NAMES:
        assert float(add[name]) == 6 * SECONDS[name], name
    assert float(add["phases_s"]) == 6 * sum(SECONDS.values())
    assert float(add["wall_s"]) == round(sum(r.elapsed_s for r in add_cells), 3)
    softmax = by[("workload", "softmax")]
    assert (softmax["cells"], softmax["recorded"]) == ("5", "0"), "the skipped cell did not run"
    assert all(softmax[name] == "" for name in (*PHASE_NAMES, "phases_s")), "not recorded is empty, never 0"
    assert softmax["wall_s"] != ""
    total = by[("total", "total")]
    assert (total["cells"], total["recorded"]) == ("11", "6")
    assert float(total["compile"]) == 6 * SECONDS["compile"]
    assert by[("cell", "softmax/r2/candidate")]["state"] == "skipped"
    assert by[("cell", "softmax/r1/baseline")]["compile"] == ""
    assert by[("cell", "add/r1/baseline")]["timing"] == "3.500"
    assert [line["scope"] for line in table].count("cell") == 12


def test_md_names_unrecorded_cells_and_every_phase(tmp_path):
    root, _ = _root(tmp_path)
    proc = _cost(root)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "12 cells in the matrix, 11 ran, 6 with phases recorded" in out and "not sealed" in out
    assert " Prepared " in out and "freeze to seal" not in out, "not sealed: no seal time to count to"
    add_line = next(line for line in out.splitlines() if line.startswith("| add | "))
    assert add_line.startswith("| add | 6 | 6 | 9.00 | 37.50 | 0.75 | 12.00 | 0.00 | 21.00 | 0.00 | 3.00 | 83.25 | ")
    softmax_line = next(line for line in out.splitlines() if line.startswith("| softmax | "))
    assert softmax_line.count("not recorded") == len(PHASE_NAMES) + 1 and " 0.00 " not in softmax_line
    cell_line = next(line for line in out.splitlines() if line.startswith("| softmax/r1/control | "))
    assert cell_line.count("not recorded") == len(PHASE_NAMES) + 1
    assert "| softmax/r2/candidate | skipped | - | - |" in out
    assert "| **total** | 11 | 6 | 9.00 |" in out
    for name in PHASE_NAMES:
        assert f"- `{name}`: what {name} includes" in out


def test_a_folder_that_is_not_a_root_exits_2(tmp_path):
    proc = _cost(tmp_path)
    assert proc.returncode == 2 and f"{tmp_path}: no matrix.json: not a run root" in proc.stderr
    (tmp_path / "matrix.json").write_text("{\"tasks\": 3}", encoding="utf-8")
    proc = _cost(tmp_path)
    assert proc.returncode == 2 and "matrix.json: not a matrix" in proc.stderr
    assert _cost(tmp_path / "absent").returncode == 2


def test_a_record_of_another_task_or_an_unreadable_one_is_not_recorded(tmp_path):
    root, _ = _root(tmp_path)
    moved = root / cell_dir_name("add/r1/control") / PHASES_FILE
    moved.unlink()
    _record(root, "add/r1/control", recorded_as="add/r1/baseline")       # a file copied between cells
    (root / cell_dir_name("add/r2/control") / PHASES_FILE).unlink()
    (root / cell_dir_name("add/r2/control") / PHASES_FILE).write_text("{", encoding="utf-8")
    proc = _cost(root, "--format", "tsv")
    assert proc.returncode == 0
    assert "records task add/r1/baseline, not add/r1/control" in proc.stderr
    assert "add/r2/control/phases.json: unreadable" in proc.stderr
    add = next(line for line in _tsv(proc.stdout) if line["name"] == "add")
    assert (add["cells"], add["recorded"]) == ("6", "4")
    assert float(add["timing"]) == 4 * SECONDS["timing"]


def test_a_committed_sealed_root_from_before_phases_reads_as_not_recorded_and_is_not_written(tmp_path):
    folder = RECEIPTS / "h200-aa-event-20261129T084627Z"
    with tarfile.open(folder / "root.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / folder.name
    before = _tree(root)
    proc = _cost(root)
    assert proc.returncode == 0, proc.stderr
    assert ", sealed:" in proc.stdout and "0 with phases recorded" in proc.stdout
    cells = [line for line in proc.stdout.splitlines() if line.count("/r") and line.startswith("| ")]
    assert cells and all(line.count("not recorded") == len(PHASE_NAMES) + 1 for line in cells)
    assert " 0.00 |" not in proc.stdout
    assert "This copy lacks" not in proc.stdout and "No batch process ran" in proc.stdout   # the whole root
    assert _tree(root) == before
    # sealed under receipt schema 1, which verify checks only when asked (`--allow-schema 1`)
    verify = subprocess.run([sys.executable, "-m", "campaign", "verify", str(root), "--allow-schema", "1"],
                            capture_output=True, text=True, timeout=300)
    assert verify.returncode == 0, verify.stdout + verify.stderr



def test_a_receipt_s_top_level_copy_says_what_it_lacks_and_never_that_no_batch_ran(tmp_path):
    # as committed: a sealed screen's top-level files, its cells and batches left on the host that ran it
    folder = RECEIPTS / "cpu-flaggems-seeded-draws-screen-20261206T225942Z"
    root = tmp_path / "copy"
    root.mkdir()
    for path in folder.iterdir():
        if path.name.endswith(".gz"):
            (root / path.name.removesuffix(".gz")).write_bytes(gzip.decompress(path.read_bytes()))
        else:
            (root / path.name).write_bytes(path.read_bytes())
    proc = _cost(root)
    assert proc.returncode == 0, proc.stderr
    assert ("This copy lacks 866 file(s) its receipt seals (852 in cells/, 14 in batches/): phases, batch records "
            "and progress clocks among them are not read here") in proc.stdout
    assert "Batch processes ran, and their records are not in this copy." in proc.stdout
    assert "No batch process ran" not in proc.stdout
    assert "0 min 38 s from freeze to seal" in proc.stdout    # what the top-level files do hold is still read


# --- the worker's side ------------------------------------------------------------------------

def test_the_worker_records_every_phase_of_a_demo_cell(tmp_path):
    plan = write_plan(tmp_path)
    proc = run_worker(plan, dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-3000:]
    cell_dir = Path(plan.cell_dir)
    record = Phases.model_validate(canonical.read_json(cell_dir / PHASES_FILE))
    result = CellResult.model_validate(canonical.read_json(cell_dir / "result.json"))
    seconds = {p.name: p.seconds for p in record.phases}
    assert record.task_id == plan.task.id and tuple(seconds) == PHASE_NAMES
    assert seconds["start"] > 0 and seconds["imports"] > 0.5, "torch alone takes seconds to import"
    assert seconds["compile"] > 0 and seconds["timing"] > 0 and seconds["write-out"] > 0
    assert seconds["tuning"] == 0, "first-config benchmarks nothing"
    assert seconds["correctness"] == 0, "the compile-only backend runs no correctness session"
    # the phases cover the worker from process start to its result: its own elapsed plus start
    assert abs(sum(seconds.values()) - (seconds["start"] + result.elapsed_s)) < 0.05


def test_a_refused_cell_records_its_phases_and_a_failed_record_never_costs_the_result(tmp_path):
    gone = {"targets": {"benchmark": "ops/workloads/demo/bench_demo.py::test_bench_gone",
                        "correctness": "ops/workloads/demo/test_demo.py"}}
    plan = write_plan(tmp_path / "a", task=gone)
    proc = run_worker(plan, dict(os.environ))
    assert proc.returncode == WorkerExit.PREFLIGHT_FAILED
    record = Phases.model_validate(canonical.read_json(Path(plan.cell_dir) / PHASES_FILE))
    seconds = {p.name: p.seconds for p in record.phases}
    assert seconds["preflight"] > 0 and seconds["timing"] == seconds["correctness"] == 0

    plan = write_plan(tmp_path / "b", task=gone)
    (Path(plan.cell_dir) / PHASES_FILE).write_text("{}", encoding="utf-8")    # write_new refuses to overwrite
    proc = run_worker(plan, dict(os.environ))
    assert proc.returncode == WorkerExit.PREFLIGHT_FAILED
    assert CellResult.model_validate(canonical.read_json(Path(plan.cell_dir) / "result.json")).rc == WorkerExit.PREFLIGHT_FAILED
    assert "phases.json not written: FileExistsError" in (Path(plan.cell_dir) / "run.log").read_text(encoding="utf-8")


def test_process_age_is_read_from_proc_and_missing_proc_is_not_measured(tmp_path):
    code = "import time; time.sleep(0.4); from campaign.worker import facts; print(facts.process_age_s())"
    age = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout)
    assert 0.4 <= age < 30
    assert facts.process_age_s(tmp_path) is None
    recorder = Recorder(started=0.0, clock=lambda: 1.0, process_age=lambda: facts.process_age_s(tmp_path))
    start = next(p for p in recorder.record("t").phases if p.name == "start")
    assert (start.seconds, start.label) == (None, "not measured: no /proc/self/stat")


def test_a_session_gives_its_compiles_tuning_and_end_to_their_own_phases():
    now = [10.0]
    recorder = Recorder(started=9.0, clock=lambda: now[0], process_age=lambda: 2.5)
    now[0] = 11.0
    recorder.begin("imports")
    now[0] = 14.0
    with recorder.session("timing") as watch:
        watch.compile_s, watch.tuning_s, watch.finish_s = 2.0, 1.5, 0.25
        now[0] = 20.0
    with recorder.session("correctness") as watch:
        watch.compile_s = 9.0           # Triton's clock ran past ours: never a negative rest
        now[0] = 21.0
    seconds = {p.name: p.seconds for p in recorder.record("t").phases}
    assert seconds == {"start": 1.5, "imports": 3.0, "preflight": 2.0, "compile": 11.0, "tuning": 1.5,
                       "timing": 2.25, "correctness": 0.0, "write-out": 0.25}


def test_compiles_inside_autotune_benchmarking_are_tuning_not_compile(tmp_path):
    """Real Triton through the compile-only driver: the tuned kernel's configs compile inside
    Autotuner._bench; a plain kernel's compile is outside it. Both hooks are restored."""
    script = textwrap.dedent("""\
        import json, time
        import torch, triton, triton.language as tl
        from triton import knobs
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.driver import driver
        from campaign.plugins.compile_only import build_driver
        from campaign.worker.phases import Session, watching

        driver.set_active(build_driver("cuda:90"))

        @triton.jit
        def tuned_copy(x, y, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)

        @triton.jit
        def plain_copy(x, y, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)

        def bench(kernel_call, quantiles):
            kernel_call()
            return [1.0, 1.0, 1.0]

        tuned = triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
                                key=["n"], do_bench=bench)(tuned_copy)
        bench_before, listener_before = Autotuner.__dict__["_bench"], knobs.compilation.listener
        x, y = torch.ones(256), torch.zeros(256)
        session = Session(time.perf_counter)
        with watching(session):
            tuned[(4,)](x, y, 256)
            after_tuning = (session.compile_s, session.tuning_s)
            plain_copy[(4,)](x, y, 256, BLOCK=64)
        restored = Autotuner.__dict__["_bench"] is bench_before and knobs.compilation.listener is listener_before
        print(json.dumps({"after_tuning": after_tuning, "compile": session.compile_s,
                          "tuning": session.tuning_s, "restored": restored}))
    """)
    (tmp_path / "watch.py").write_text(script, encoding="utf-8")
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(tmp_path / "watch.py")], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["after_tuning"][0] == 0, "both configs compiled inside _bench: tuning, not compile"
    assert out["after_tuning"][1] > 0 and out["tuning"] == out["after_tuning"][1]
    assert out["compile"] > 0, "the plain kernel compiled outside tuning"
    assert out["restored"]
