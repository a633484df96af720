"""Whole pytest sessions run in-process with the timing plugin installed: rows, fallbacks,
poisoning, the deny list, and the compile-only case, which runs for real (Triton compiles the
demo kernels for sm_90 through the cpu backend's driver)."""
from __future__ import annotations

import pytest
from conftest import PROJECT_ROOT
from timingsession import BENCH_ADD, CUDA_FAULT, CUDA_RNG, CUDA_SYNC, MUSA_POISON, MUSA_RNG, MUSA_SYNC, OfflineMusa, RecordedTimers, context, session

from campaign.backends.cpu import CpuBackend
from campaign.backends.cuda import CudaBackend
from campaign.contract import timers
from campaign.contract.artifacts import ROWS_FILE
from campaign.plugins import compile_only, timing

pytest_plugins = ["pytester"]


def test_graph_rows_carry_the_graph_timer_and_a_failing_case_does_not_stop_the_rest(pytester, tmp_path):
    ctx = context(tmp_path, CudaBackend())
    result, rows, log = session(pytester, ctx, BENCH_ADD, RecordedTimers())
    assert result.ret == 0
    assert [(r.shape, r.dtype, r.status, r.timer) for r in rows] == [
        ((16,), "float16", "ok", "graph"), ((2, 8), "float16", "ok", "graph"), ((3, 5, 7), "float16", "ok", "graph"),
        ((16,), "float32", "ok", "graph"), ((2, 8), "float32", "failed", "graph"), ((3, 5, 7), "float32", "ok", "graph")]
    ok = [r for r in rows if r.status == "ok"]
    assert all(r.latency_ms == 0.0123 and r.l2_flush is False and r.markers == () for r in ok)
    failed = rows[4]
    assert failed.latency_ms is None and "kernel rejected 2-D float32" in failed.error
    assert {r.function for r in rows} == {"test_bench_add"} and {r.op for r in rows} == {"add"}
    assert ctx.log.counts == {name: 0 for name in ctx.log.counts}
    assert (ctx.cell_dir / ROWS_FILE).read_text().endswith("}\n")


@pytest.mark.parametrize("backend, wording", [(CudaBackend(), CUDA_RNG), (CudaBackend(), CUDA_SYNC),
                                              (OfflineMusa(), MUSA_RNG), (OfflineMusa(), MUSA_SYNC)])
def test_a_refused_capture_falls_back_to_direct_on_every_row(pytester, tmp_path, backend, wording):
    ctx = context(tmp_path, backend, timer={"kind": "graph", "direct_repeat": 3}, dtypes=("float16",))
    recorded = RecordedTimers(capture_error=wording)
    result, rows, log = session(pytester, ctx, BENCH_ADD, recorded)
    assert result.ret == 0 and len(rows) == 3, "no row lost"
    for row in rows:
        assert (row.status, row.timer, row.latency_ms, row.repeat, row.l2_flush) == ("ok", "direct", 0.5, 3, True)
        assert row.markers == (timers.FALLBACK_MARKER,) and row.fallback_phase == "capture"
    assert len(recorded.direct_calls) == 9, "three do_bench calls per row"
    assert ctx.log.counts[timers.FALLBACK_MARKER] == 3 and ctx.log.counts[timers.POISONED_MARKER] == 0
    assert "BENCHMARK_DIRECT_NO_CUDAGRAPH op=add function=test_bench_add shape=16 dtype=float16 " \
           "phase=capture repeat=3" in log


def test_a_failed_replay_names_its_phase(pytester, tmp_path):
    ctx = context(tmp_path, CudaBackend(), dtypes=("float16",))
    _, rows, log = session(pytester, ctx, BENCH_ADD, RecordedTimers(capture_error=CUDA_SYNC, phase="replay"))
    assert {(r.fallback_phase, r.repeat) for r in rows} == {("replay", 1)}
    assert "phase=replay repeat=1" in log


def test_a_device_fault_is_a_failed_row_never_a_latency(pytester, tmp_path):
    ctx = context(tmp_path, CudaBackend(), dtypes=("float16",))
    result, rows, _ = session(pytester, ctx, BENCH_ADD, RecordedTimers(capture_error=CUDA_FAULT))
    assert result.ret == 0 and len(rows) == 3
    for row in rows:
        assert (row.status, row.timer, row.latency_ms, row.markers) == ("failed", "graph", None, ())
        assert row.error.startswith("fatal during graph capture") and "illegal memory access" in row.error
    assert sum(ctx.log.counts.values()) == 0


POISONED_TWO_TESTS = BENCH_ADD + """

def test_bench_add_again(bench):
    for case in bench.cases():
        bench.measure(case, lambda: None)
"""


def test_a_poisoning_capture_stops_measuring_in_this_process(pytester, tmp_path):
    ctx = context(tmp_path, OfflineMusa(), dtypes=("float16",))
    recorded = RecordedTimers(capture_error=MUSA_POISON)
    result, rows, log = session(pytester, ctx, POISONED_TWO_TESTS, recorded)
    assert result.ret == 1
    result.assert_outcomes(failed=1, errors=1)
    assert recorded.graph_calls == 1 and recorded.direct_calls == [], "nothing measured after the poisoning"
    assert len(rows) == 6, "every planned case still has a row"
    first = rows[0]
    assert (first.status, first.timer, first.latency_ms) == ("failed", "graph", None)
    assert first.error.startswith("poisoned during graph capture") and "MUSA error: unknown error" in first.error
    assert all(r.status == "failed" and "BENCHMARK_CAPTURE_POISONED" in r.error for r in rows[1:])
    assert {r.function for r in rows[3:]} == {"test_bench_add_again"}
    assert ctx.log.counts[timers.POISONED_MARKER] == 1 and ctx.log.counts[timers.FALLBACK_MARKER] == 0
    assert "BENCHMARK_CAPTURE_POISONED op=add function=test_bench_add shape=16 dtype=float16 phase=capture" in log


BENCH_UNIQUE2 = """
def test_unique2(bench):
    for case in bench.cases():
        bench.measure(case, lambda: None)
"""


def test_the_deny_list_skips_the_attempt(pytester, tmp_path):
    ctx = context(tmp_path, OfflineMusa(), op="unique2", dtypes=("float32",))
    recorded = RecordedTimers(capture_error=MUSA_POISON)      # would poison if it were attempted
    result, rows, log = session(pytester, ctx, BENCH_UNIQUE2, recorded)
    assert result.ret == 0 and recorded.graph_calls == 0
    (row,) = rows
    assert (row.status, row.timer, row.fallback_phase, row.markers) == ("ok", "direct", "deny", (timers.FALLBACK_MARKER,))
    assert "phase=deny repeat=1" in log


BENCH_INPUTS_RAISE = """
import torch

def test_bench_add(bench):
    for case in bench.cases():
        if len(case.shape) == 2:
            raise MemoryError("could not build the inputs")
        bench.measure(case, lambda: None)
"""


def test_cases_after_a_raising_test_body_are_failed_rows(pytester, tmp_path):
    ctx = context(tmp_path, CudaBackend(), dtypes=("float16",))
    result, rows, _ = session(pytester, ctx, BENCH_INPUTS_RAISE, RecordedTimers())
    assert result.ret == 1
    assert [r.status for r in rows] == ["ok", "failed", "failed"]
    assert all("could not build the inputs" in r.error and r.timer == "none" for r in rows[1:])


@pytest.mark.parametrize("kind, timer_name, repeat", [("event", "event", None), ("direct", "direct", 4)])
def test_event_and_direct_kinds(pytester, tmp_path, kind, timer_name, repeat):
    timer = {"kind": kind} if repeat is None else {"kind": kind, "direct_repeat": repeat}
    ctx = context(tmp_path, CudaBackend(), timer=timer, dtypes=("float16",))
    recorded = RecordedTimers()
    result, rows, _ = session(pytester, ctx, BENCH_ADD, recorded)
    assert result.ret == 0 and recorded.graph_calls == 0
    assert {(r.timer, r.repeat, r.l2_flush, r.latency_ms, r.markers) for r in rows} == {(timer_name, repeat, True, 0.5, ())}
    assert len(recorded.direct_calls) == 3 * (repeat or 1)
    assert recorded.direct_calls[0] == dict(warmup=25.0, rep=100.0, return_mode="median")


def test_refusals_at_construction(tmp_path):
    import dataclasses

    from campaign.backends.musa import MusaBackend
    no_graphs = dataclasses.replace(MusaBackend(), capabilities=dataclasses.replace(
        MusaBackend().capabilities, graph_capture=False))
    with pytest.raises(timers.TimerRefused, match="cannot capture graphs"):
        timing.make(context(tmp_path, no_graphs, timer={"kind": "graph"}))


def test_compile_only_rows_are_compiled_and_untimed(pytester, tmp_path):
    ctx = context(tmp_path, CpuBackend(), timer={"kind": "event"}, op="add", provider="builtin",
                   project_root=PROJECT_ROOT)
    driver_plugin = compile_only.make(ctx)
    target = PROJECT_ROOT / "ops" / "workloads" / "demo" / "bench_demo.py::test_bench_add"
    result, rows, log = session(pytester, ctx, None, target=target, extra_plugins=(driver_plugin,))
    assert result.ret == 0
    assert [(r.shape, r.dtype) for r in rows] == [((1048576,), "float16"), ((4096, 4096), "float16"),
                                                  ((1048576,), "float32"), ((4096, 4096), "float32")]
    for row in rows:
        assert (row.status, row.timer, row.latency_ms, row.l2_flush, row.repeat) == ("compiled", "none", None, None, None)
    assert "4 launches counted, none executed" in log, "each case's call ran exactly once"
    assert "timer=none (compile-only: nothing is timed)" in log


def test_rows_json_is_never_overwritten(pytester, tmp_path):
    ctx = context(tmp_path, CudaBackend(), dtypes=("float16",))
    (ctx.cell_dir / ROWS_FILE).write_text("{}\n")
    plugin = timing.TimingPlugin(ctx, device_timers=RecordedTimers())
    result = pytester.runpytest_inprocess(str(pytester.makepyfile(bench_workload=BENCH_ADD)), plugins=[plugin])
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    assert "FileExistsError" in "\n".join(result.outlines + result.errlines)
    assert (ctx.cell_dir / ROWS_FILE).read_text() == "{}\n"


BENCH_CACHE_FULL = """
import errno

def test_bench_add(bench):
    for case in bench.cases():
        def compile_into_a_full_cache():
            raise OSError(errno.EFBIG, "File too large", "/scratch/triton-1/add_kernel.ttgir")
        bench.measure(case, compile_into_a_full_cache)
"""


@pytest.mark.parametrize("backend, timer", [(CpuBackend(), {"kind": "event"}), (CudaBackend(), None)])
def test_a_write_fault_in_a_measured_call_is_the_machines_never_a_failed_row(pytester, tmp_path, backend, timer):
    # compile-only (the call itself) and timed (the timer's call): a full disk or a file-size limit under
    # Triton's cache is raised to the worker's WriteFaults, which exits WRITE_FAULT and leaves the cell to run again
    from campaign.worker.writefaults import WriteFaults
    ctx = context(tmp_path, backend, timer=timer, op="add", dtypes=("float16",),
                  **({"provider": "builtin", "project_root": PROJECT_ROOT} if timer else {}))
    faults = WriteFaults()
    recorded = RecordedTimers(capture_error=None) if timer is None else None
    result, _, _ = session(pytester, ctx, BENCH_CACHE_FULL, recorded, extra_plugins=(faults,))
    # raised, it fails the test (it was one failed row in a passing session: an "ok" cell) and WriteFaults has it
    assert result.ret == 1
    assert faults.first is not None and faults.first.filename == "/scratch/triton-1/add_kernel.ttgir"
