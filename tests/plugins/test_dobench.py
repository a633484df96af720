"""A user's own pytest file that times with ``triton.testing.do_bench`` as a workload (``provider: pytest``).

End to end through the CLI in a copy of the project (`projectcopy`), on the cpu backend: the file in
tests/data/dobench gives one compiled row per do_bench call, keyed by node id and call order, with
its IR captured; a file that times nothing is NO_ROWS with that reason; an edit after prepare is
refused. Then the manifest rules of the provider, the plugin's binding and return values, and the
pairing that never reads a reference row.
"""
from __future__ import annotations

import dataclasses
import shutil
import sys
import types
from pathlib import Path

import projectcopy
import pytest
from conftest import PROJECT_ROOT
from timingsession import FakeReader, NoLoad

from campaign.contract import canonical, timers, yamlio
from campaign.contract.cellfiles import Row
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest
from campaign.judging import direction, screening, screentable, stats
from campaign.planning.matrix import cell_terms
from campaign.plugins import dobench

DATA = "tests/data/dobench"
KERNEL = f"{DATA}/dobench_my_kernel.py"
NOTHING = f"{DATA}/dobench_nothing.py"
WORKLOADS = (f'  - {{name: my-kernel, provider: pytest, benchmark: "{KERNEL}"}}\n'
             f'  - {{name: quiet, provider: pytest, benchmark: "{NOTHING}"}}\n')


def _project(base: Path) -> Path:
    project = projectcopy.make(base)
    shutil.copytree(PROJECT_ROOT / DATA, project / DATA, ignore=shutil.ignore_patterns("__pycache__"))
    return project


@pytest.fixture(scope="module")
def screened(tmp_path_factory):
    base = tmp_path_factory.mktemp("dobench")
    project = _project(base)
    # the two workloads share one worker process a side (4 processes instead of 8): the claims below
    # are each cell's own files, which a batch writes per workload as a process of its own does
    path = projectcopy.manifest(base, WORKLOADS, campaign="dobench-cpu", per_process=2)
    # every workload's round 1 runs (--time-unchanged): the claims below are about round-1 cells,
    # which the screen's IR pass would skip for a workload whose IR did not change
    done = projectcopy.cli(project, "screen", path, "--runs-dir", base / "runs", "--scratch-dir", base, "--grace", "1",
                           "--time-unchanged")
    assert done.returncode == 0, done.stderr
    root = Path(done.stdout.strip().splitlines()[-1]).parent
    table = {r["workload"]: r for r in screentable.parse((root / "screen.tsv").read_text(encoding="utf-8"))}
    return root, table


def _rows(root: Path, task: str) -> list[dict]:
    return canonical.read_json(root / "cells" / task / "rows.json")["rows"]


def test_each_do_bench_call_is_a_compiled_row_keyed_by_node_id_and_call_order(screened):
    root, table = screened
    for cell in ("baseline", "candidate"):
        rows = _rows(root, f"my-kernel/r1/{cell}")
        assert [(r["function"], r["shape"], r["dtype"]) for r in rows] == [
            ("test_scale_add[dtype0-4096]", [4096], "float16"), ("test_scale_add[dtype0-4096]", [4096], "float16"),
            ("test_scale_add[dtype0-65536]", [65536], "float16"), ("test_scale_add[dtype0-65536]", [65536], "float16"),
            ("test_dot", [], "-")]
        assert {r["test"].split("::")[0] for r in rows} == {KERNEL}
        assert {(r["status"], r["timer"], r["latency_ms"], r["role"], r["op"]) for r in rows} == {
            ("compiled", "none", None, "measured", "dobench_my_kernel")}
        keys = [key for key, _ in stats.keyed(Row.model_validate(r) for r in rows)]
        assert [k[3] for k in keys] == [0, 1, 0, 1, 0]          # call order within each node
        log = (root / "cells" / "my-kernel" / "r1" / cell / "run.log").read_text(encoding="utf-8")
        assert "dobench: 5 rows written from 3 test(s) (ok 0, failed 0, compiled 5; 0 reference)" in log
        assert "call 1 do_bench(quantiles=[0.5, 0.2, 0.8])" in log    # the test's own arguments, recorded
        assert "3 passed" in (root / "cells" / "my-kernel" / "r1" / cell / "stdout.log").read_text(encoding="utf-8")
        index = (root / "cells" / "my-kernel" / "r1" / cell / "ir" / "index.tsv").read_text(encoding="utf-8")
        assert "scale_add_kernel" in index and "dot_kernel" in index
    # the tl.dot kernel's TTGIR differs under DISABLE_MMA_V3 on sm_90: the IR was captured and compared
    assert table["my-kernel"]["verdict"] == "IR_CHANGED", table["my-kernel"]


def test_a_file_that_times_nothing_is_no_rows_with_that_reason(screened):
    root, table = screened
    assert table["quiet"]["verdict"] == "NO_ROWS", table["quiet"]
    assert "the test times nothing: no call of triton.testing.do_bench" in table["quiet"]["note"]
    assert "usually the dtype" not in table["quiet"]["note"]
    assert _rows(root, "quiet/r1/baseline") == []
    log = (root / "cells" / "quiet" / "r1" / "baseline" / "run.log").read_text(encoding="utf-8")
    assert dobench.NOTHING_TIMED in log


def test_an_edit_to_the_test_file_after_prepare_is_refused(tmp_path: Path):
    project = _project(tmp_path)
    root = projectcopy.prepare(project, projectcopy.manifest(tmp_path, WORKLOADS, campaign="dobench-edit"))
    recorded = canonical.read_json(root / "prepare.json")["harness"]
    assert {KERNEL, NOTHING} <= set(recorded)
    for name in (KERNEL, NOTHING):
        path = project / name
        before = path.read_bytes()
        path.write_bytes(before + b"\n# tuned after prepare\n")
        done = projectcopy.run(project, root)
        assert done.returncode == 1, done.stderr
        assert f"RUN_REFUSED check=harness: code changed since prepare: {name} (changed since prepare)" in done.stderr
        path.write_bytes(before)
    assert not (root / "status.tsv").exists()


# -- the manifest ----------------------------------------------------------------------------

def _manifest(tmp_path: Path, workload: str) -> Path:
    return projectcopy.manifest(tmp_path, workload, campaign="dobench-rules")


def test_op_defaults_to_the_file_stem_and_the_test_chooses_its_inputs(tmp_path: Path):
    manifest = yamlio.validate(Manifest, _manifest(tmp_path, f'  - {{name: k, provider: pytest, benchmark: "{KERNEL}::test_dot"}}\n'))
    assert manifest.workloads[0].op == "dobench_my_kernel"
    own = yamlio.validate(Manifest, _manifest(tmp_path, '  - {name: k, provider: pytest, op: mine, benchmark: "a/test_X-y.py"}\n'))
    assert own.workloads[0].op == "mine"
    assert Manifest.model_validate({**manifest.model_dump(exclude_none=True), "workloads": [
        {"name": "k", "provider": "pytest", "benchmark": "a/Test_X-y.py::test_f[a-1]"}]}).workloads[0].op == "x_y"
    for extra, key in ((", dtypes: [float16]", "dtypes"), (', shapes: ["8"], reason: narrowed on purpose', "shapes")):
        with pytest.raises(InputError) as refused:
            yamlio.validate(Manifest, _manifest(tmp_path, f'  - {{name: k, provider: pytest, benchmark: "{KERNEL}"{extra}}}\n'))
        assert f"workloads -> 0 -> {key}: provider pytest takes its {key} from the test itself" in str(refused.value)
    with pytest.raises(InputError) as refused:
        yamlio.validate(Manifest, _manifest(tmp_path, "  - {name: k, provider: pytest}\n"))
    assert "workloads -> 0 -> benchmark: provider pytest times a test file" in str(refused.value)
    with pytest.raises(InputError) as refused:
        yamlio.validate(Manifest, _manifest(tmp_path, "  - {name: k}\n"))
    assert "workloads -> 0 -> op: Field required" in str(refused.value)


def test_the_schema_says_the_same_per_provider(tmp_path: Path):
    import jsonschema

    schema = canonical.read_json(PROJECT_ROOT / "schemas" / "manifest.schema.json")
    data = yamlio.load(_manifest(tmp_path, f'  - {{name: k, provider: pytest, benchmark: "{KERNEL}"}}\n'))[0]

    def valid(workload: dict) -> bool:
        return jsonschema.Draft202012Validator(schema).is_valid({**data, "workloads": [workload]})
    own = {"name": "k", "provider": "pytest", "benchmark": KERNEL}
    assert valid(own) and valid({**own, "op": "mine"})
    assert not valid({**own, "dtypes": ["float16"]}) and not valid({"name": "k", "provider": "pytest"})
    assert not valid({"name": "k"}) and not valid({"name": "k", "provider": "builtin"}) and valid({"name": "k", "op": "add"})


def test_prepare_checks_the_node_id_of_a_pytest_workload(tmp_path: Path, cli):
    path = _manifest(tmp_path, f'  - {{name: a, provider: pytest, benchmark: "{KERNEL}::test_scale_add[dtype0-8]"}}\n'
                               f'  - {{name: b, provider: pytest, benchmark: "{KERNEL}::test_nothing"}}\n'
                               f'  - {{name: c, provider: pytest, benchmark: "{KERNEL}::test_scale_add[dtype0-4096]"}}\n')
    done = cli("validate", path)
    assert done.returncode == 2, done.stdout
    lines = done.stderr.splitlines()
    assert any("check=benchmark_target" in line and "workloads -> 0 -> benchmark" in line and "test_scale_add[dtype0-8] is not one of its ids" in line
               for line in lines), lines
    assert any("workloads -> 1 -> benchmark" in line and "no function test_nothing" in line for line in lines), lines
    assert not any("workloads -> 2" in line for line in lines), lines


# -- the plugin ------------------------------------------------------------------------------

def _row(**kw) -> Row:
    return Row(**{**dict(test="f.py::t", function="t", op="o", shape=(4,), dtype="-", timer="graph",
                         status="ok", latency_ms=1.0), **kw})


def test_the_value_returned_has_do_bench_s_shape():
    ok, compiled = _row(latency_ms=0.25), _row(timer="none", status="compiled", latency_ms=None)
    assert dobench.returned(ok, {}) == 0.25
    assert dobench.returned(ok, {"quantiles": [0.5, 0.2, 0.8]}) == [0.25, 0.25, 0.25]
    assert dobench.returned(ok, {"quantiles": [0.5]}) == 0.25
    assert dobench.returned(ok, {"return_mode": "all"}) == [0.25]
    assert dobench.returned(compiled, {"quantiles": [0.5, 0.2]})[1] != dobench.returned(compiled, {})  # NaN
    with pytest.raises(dobench.NotTimed, match="not timed: graph capture failed"):
        dobench.returned(_row(status="failed", latency_ms=None, error="graph capture failed"), {})


def test_default_key_reads_the_test_s_own_parameters():
    torch = pytest.importorskip("torch")

    def call(**params):
        item = types.SimpleNamespace(callspec=types.SimpleNamespace(params=params))
        return dobench.Call(item=item, index=0, api="do_bench", fn=lambda: None, options={})
    assert dobench.default_key(call(n=8, dtype=torch.bfloat16)) == ((8,), "bfloat16")
    assert dobench.default_key(call(shape=(2, 3), m=5, dtype="float32", flag=True)) == ((2, 3), "float32")
    assert dobench.default_key(dobench.Call(item=types.SimpleNamespace(), index=0, api="do_bench",
                                            fn=lambda: None, options={})) == ((), "-")


def test_reference_rows_are_never_paired():
    """A reference row (another implementation's time) beside each measured one: pairing, failures
    and throttle keys see the measured rows alone, with the occurrence numbering they would have."""
    def side(measured: float, reference: float) -> list[Row]:
        return [_row(role="reference", latency_ms=reference), _row(latency_ms=measured),
                _row(role="reference", status="failed", latency_ms=None, error="torch side failed")]
    base, cand = side(1.0, 9.0), side(1.1, 0.1)
    assert [key for key, _ in stats.keyed(base)] == [("t", (4,), "-", 0)]
    assert stats.row_states(base) == {("t", (4,), "-", 0): "ok"}
    per_round = {r: {"baseline": stats.samples(base), "candidate": stats.samples(cand)} for r in (1, 2)}
    timing = stats.timing(per_round, {1: direction.BASELINE_FIRST, 2: direction.CANDIDATE_FIRST}, has_control=False)
    assert timing.unpaired == 0 and timing.timed_keys == {("t", (4,), "-", 0)}
    assert [round(d, 6) for _, d in timing.primary.shapes[0].deltas] == [0.1, 0.1]


class _Log:
    def __init__(self):
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)


def test_earlier_bindings_are_rebound_and_put_back(tmp_path: Path):
    import triton.testing

    original = triton.testing.do_bench
    helper = types.ModuleType("dobench_probe_helper")
    helper.do_bench = original                 # `from triton.testing import do_bench` before configure
    helper.other = len
    sys.modules[helper.__name__] = helper
    try:
        ctx = types.SimpleNamespace(
            log=_Log(), cell_dir=tmp_path, task=types.SimpleNamespace(provider="pytest", op="probe", timed=True),
            terms=cell_terms(yamlio.validate(Manifest, _manifest(tmp_path, f'  - {{name: k, provider: pytest, benchmark: "{KERNEL}"}}\n'))),
            backend=types.SimpleNamespace(capabilities=types.SimpleNamespace(executes=False, graph_capture=False)))
        plugin = dobench.make(ctx)
        assert isinstance(plugin, dobench.DoBenchPlugin)
        plugin.pytest_configure(None)
        assert triton.testing.do_bench is plugin.replacements["do_bench"]
        assert helper.do_bench is plugin.replacements["do_bench"] and helper.other is len
        plugin.pytest_unconfigure(None)
        assert triton.testing.do_bench is original and helper.do_bench is original
    finally:
        triton.testing.do_bench = original
        del sys.modules[helper.__name__]


def test_calls_from_the_test_are_rows_and_every_other_call_goes_to_the_original(tmp_path: Path, monkeypatch):
    """On a backend that executes, with a recorded clock in place of Triton's do_bench: the test's call
    is timed by the manifest's event timer (its own warmup and return mode ignored); a call outside a
    test, one from Triton (the autotuner's benchmarker) and one made while measuring (tuning inside the
    first call) reach the original as they were made."""
    import triton.testing

    seen: list[dict] = []

    def clock(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
        fn()
        seen.append(dict(warmup=warmup, rep=rep, quantiles=quantiles, return_mode=return_mode))
        return 0.5
    monkeypatch.setattr(triton.testing, "do_bench", clock)
    manifest = yamlio.validate(Manifest, _manifest(tmp_path, f'  - {{name: k, provider: pytest, benchmark: "{KERNEL}"}}\n'))
    ctx = types.SimpleNamespace(
        log=_Log(), cell_dir=tmp_path, task=types.SimpleNamespace(provider="pytest", op="probe", timed=True), terms=cell_terms(manifest),
        backend=types.SimpleNamespace(capabilities=types.SimpleNamespace(executes=True, graph_capture=False)))
    load, reader = NoLoad(), FakeReader(mhz=1755.0, mask=0x4)
    plugin = dobench.DoBenchPlugin(ctx, steady_load=load, clock_reader=lambda: reader)
    plugin.pytest_configure(None)
    try:
        assert triton.testing.do_bench(lambda: None, warmup=1) == 0.5 and seen.pop() == dict(
            warmup=1, rep=100, quantiles=None, return_mode="mean")          # outside a test's call phase
        plugin.item = types.SimpleNamespace(nodeid=f"{KERNEL}::test_x[7]", name="test_x[7]", originalname="test_x",
                                            callspec=types.SimpleNamespace(params={"n": 7}))
        from_triton = {"__name__": "triton.runtime.autotuner", "do_bench": triton.testing.do_bench}
        assert eval("do_bench(lambda: None, quantiles=(0.5, 0.2, 0.8))", from_triton) == 0.5
        assert seen.pop()["quantiles"] == (0.5, 0.2, 0.8) and not plugin.timing.rows

        def tuned():                       # the first call tunes through do_bench itself
            if not seen:
                triton.testing.do_bench(lambda: None, rep=7)
        assert triton.testing.do_bench(tuned, warmup=3, return_mode="min") == 0.5
        assert seen == [dict(warmup=25, rep=7, quantiles=None, return_mode="mean"),
                        dict(warmup=25.0, rep=100.0, quantiles=None, return_mode="median")]
        (row,) = plugin.timing.rows
        assert (row.test, row.function, row.shape, row.dtype, row.timer, row.latency_ms, row.op) == (
            f"{KERNEL}::test_x[7]", "test_x[7]", (7,), "-", "event", 0.5, "probe")
        assert (row.clock.sm_mhz_median, row.clock.reasons, row.clock.retimed) == (1755.0, ("sw_power_cap",), ())
        assert load.asked == [timers.STEADY_CLOCK_S], "the steady clock ran once, before the first row"
        assert any("call 0 do_bench(warmup=3, return_mode='min')" in line for line in ctx.log.lines)
        plugin.role = lambda call: "torch"
        with pytest.raises(ValueError, match="the role hook gave 'torch'"):
            triton.testing.do_bench(lambda: None)
    finally:
        plugin.pytest_unconfigure(None)
    assert triton.testing.do_bench is clock


def test_no_rows_of_a_pytest_workload_says_the_test_times_nothing():
    side = screening.Side(cell="baseline", rc=0, rc_name="ok", elapsed_s=1.0, rows=0, fingerprint=None, ir_files=0,
                          scoped=None, unscoped=None)
    facts = screening.Facts(workload="k", op="k", backend="cpu", ir_stage="ttgir", dtypes=(), dtypes_own=True,
                            sides={"baseline": side, "candidate": dataclasses.replace(side, cell="candidate")},
                            caliber={}, provider="pytest")
    verdict = screening.verdict(facts)
    assert verdict.name == "NO_ROWS" and verdict.note.endswith(
        "the test times nothing: no call of triton.testing.do_bench (or do_bench_cudagraph) ran in it")
    builtin = screening.verdict(dataclasses.replace(facts, provider="builtin", dtypes=("float16",)))
    assert "usually the dtype (float16: the op's own set)" in builtin.note
