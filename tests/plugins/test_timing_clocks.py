"""Whole timing sessions with each row's own clock: the re-times an environmental reason causes
(never the power cap's), rows without a clock source, and the steady-clock load before the first
row. The clock is a `FakeReader`, the wall clock and the device `Wall`/`FakeGraphDevice`; the
timers, the plugin and the pytest session are the real ones."""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass

import pytest
from timingsession import BENCH_ADD, FakeGraphDevice, FakeReader, NoLoad, Wall, context, session

from campaign.backends.cuda import CudaBackend
from campaign.contract import timers
from campaign.plugins._device_timers import DeviceTimers

pytest_plugins = ["pytester"]

THERMAL, POWER_CAP, IDLE, APP_CLOCKS = 0x40, 0x4, 0x1, 0x2


class Attempts:
    """A recorded do_bench that counts its calls: attempt n returns n ms, so a row's latency says
    which attempt it kept; a second of wall time passes before each, so no two windows touch."""

    def __init__(self, wall: Wall):
        self.wall = wall
        self.n = 0

    def __call__(self, fn, **kwargs):
        self.n += 1
        self.wall.t += 1.0
        self.wall.do_bench(fn, **kwargs)
        return float(self.n)


def _event_session(pytester, tmp_path, mask):
    """Three float16 rows under the event timer, the reader's mask as given (it may read ``attempts.n``)."""
    wall = Wall()
    attempts = Attempts(wall)
    reader = FakeReader(mhz=1650.0, mask=mask(attempts) if callable(mask) else mask, wall=wall)
    ctx = context(tmp_path, CudaBackend(), timer={"kind": "event"}, dtypes=("float16",))
    result, rows, log = session(pytester, ctx, BENCH_ADD, DeviceTimers(do_bench=attempts, wall=wall),
                                clock_reader=lambda: reader)
    assert result.ret == 0 and [r.status for r in rows] == ["ok"] * 3
    return rows, log, attempts, reader


def _reads_inside(reader: FakeReader, row) -> int:
    return sum(row.window_start_unix <= t <= row.window_end_unix for t, _, _ in reader.reads)


def test_a_persisting_thermal_slowdown_re_times_each_row_twice_and_stays_on_it(pytester, tmp_path):
    rows, log, attempts, reader = _event_session(pytester, tmp_path, THERMAL | POWER_CAP)
    assert attempts.n == 9, "three attempts a row"
    for number, row in enumerate(rows, start=1):
        assert row.latency_ms == 3.0 * number, "the last attempt's latency"
        assert row.clock.retimed == ("hw_thermal_slowdown", "hw_thermal_slowdown")
        assert row.clock.reasons == ("hw_thermal_slowdown", "sw_power_cap")
        assert row.clock.sm_mhz_median == 1650.0
        assert row.clock.samples == _reads_inside(reader, row), "the clock is read in the window the row keeps"
    assert log.count("re-timed (1 of 2): hw_thermal_slowdown inside its window") == 3
    assert log.count("re-timed (2 of 2): hw_thermal_slowdown inside its window") == 3
    assert "row test_bench_add 16 float16: re-timed (1 of 2)" in log
    assert "row clocks: 3 of 3 ok rows read; 3 re-timed; 3 still environmental after their re-times" in log


def test_a_thermal_slowdown_that_clears_re_times_once(pytester, tmp_path):
    # hot in each row's first attempt (odd calls), clear in its second
    rows, log, attempts, _ = _event_session(pytester, tmp_path, lambda a: lambda: THERMAL if a.n % 2 else 0)
    assert attempts.n == 6
    assert [(r.latency_ms, r.clock.retimed, r.clock.reasons) for r in rows] == [
        (2.0, ("hw_thermal_slowdown",), ()), (4.0, ("hw_thermal_slowdown",), ()), (6.0, ("hw_thermal_slowdown",), ())]
    assert log.count("re-timed (1 of 2)") == 3 and "re-timed (2 of 2)" not in log
    assert "row clocks: 3 of 3 ok rows read; 3 re-timed; 0 still environmental" in log


@pytest.mark.parametrize("mask, reasons", [(POWER_CAP, ("sw_power_cap",)),
                                           (IDLE | APP_CLOCKS, ("applications_clocks_setting", "gpu_idle"))])
def test_the_power_cap_and_benign_reasons_never_re_time(pytester, tmp_path, mask, reasons):
    rows, log, attempts, _ = _event_session(pytester, tmp_path, mask)
    assert attempts.n == 3
    assert [(r.latency_ms, r.clock.retimed, r.clock.reasons) for r in rows] == [
        (1.0, (), reasons), (2.0, (), reasons), (3.0, (), reasons)]
    assert "re-timed (" not in log


@dataclass(frozen=True)
class OfflineCuda(CudaBackend):
    """CUDA's wording, with the graph device of `FakeGraphDevice` in place of torch.cuda."""

    device: FakeGraphDevice = None

    def device_interface(self):
        return self.device

    def graph_class(self):
        return self.device.graph_class


def test_a_graph_row_is_re_timed_through_the_graph_timer(pytester, tmp_path):
    wall = Wall()
    device = FakeGraphDevice(wall)
    reader = FakeReader(mask=THERMAL, wall=wall)
    ctx = context(tmp_path, OfflineCuda(device=device), timer={"kind": "graph"}, dtypes=("float16",))
    result, rows, _ = session(pytester, ctx, BENCH_ADD, DeviceTimers(wall=wall), clock_reader=lambda: reader)
    assert result.ret == 0
    assert device.replays == 3 * 3 * (1 + timers.TIMED_REPLAYS), "three graph timings a row"
    for row in rows:
        assert (row.status, row.timer, row.clock.retimed) == ("ok", "graph", ("hw_thermal_slowdown",) * 2)
        assert row.window_end_unix - row.window_start_unix == timers.TIMED_REPLAYS
        assert row.clock.samples == _reads_inside(reader, row)


def test_without_nvml_rows_carry_no_clock_and_the_log_says_why_once(pytester, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)           # NVML absent: the import fails
    wall = Wall()
    ctx = context(tmp_path, CudaBackend(), timer={"kind": "event"}, dtypes=("float16",))
    result, rows, log = session(pytester, ctx, BENCH_ADD, DeviceTimers(do_bench=wall.do_bench, wall=wall))
    assert result.ret == 0
    assert [(r.status, r.clock, r.window_start_unix is not None) for r in rows] == [("ok", None, True)] * 3
    assert log.count("row clocks: not read") == 1
    assert "row clocks: not read: pynvml is not installed (pip install nvidia-ml-py)" in log
    assert "SM clock not read -> not read" in log
    assert "row clocks: 0 of 3 ok rows read; 0 re-timed" in log


def test_the_steady_clock_load_runs_once_before_the_first_timed_row(pytester, tmp_path):
    wall = Wall()
    load = NoLoad()
    ctx = context(tmp_path, CudaBackend(), timer={"kind": "event"})
    _, rows, log = session(pytester, ctx, BENCH_ADD, DeviceTimers(do_bench=wall.do_bench, wall=wall),
                           clock_reader=lambda: FakeReader(mhz=1980.0), steady_load=load)
    assert load.asked == [timers.STEADY_CLOCK_S] and len(rows) == 6
    lines = log.splitlines()
    steady = next(i for i, line in enumerate(lines) if line.startswith("steady clock: "))
    assert steady < next(i for i, line in enumerate(lines) if line.startswith("row test_bench_add "))
    assert lines[steady].endswith("(0 fp16 matmuls) before the first timed row; SM clock 1980 MHz -> 1980 MHz")


def test_an_untimed_task_runs_no_steady_clock_load_and_reads_no_clock(pytester, tmp_path):
    load = NoLoad()
    ctx = context(tmp_path, CudaBackend(), timer={"kind": "event"}, dtypes=("float16",))
    untimed = dataclasses.replace(ctx, plan=ctx.plan.model_copy(
        update={"task": ctx.plan.task.model_copy(update={"timed": False})}))
    _, rows, log = session(pytester, untimed, BENCH_ADD, clock_reader=lambda: FakeReader(), steady_load=load)
    assert load.asked == [] and "steady clock" not in log and "row clocks" not in log
    assert {(r.status, r.clock) for r in rows} == {("compiled", None)}


def test_a_failing_steady_clock_load_is_said_and_the_rows_are_timed(pytester, tmp_path):
    def no_memory(seconds):
        raise RuntimeError("CUDA out of memory. Tried to allocate 32.00 MiB")
    wall = Wall()
    ctx = context(tmp_path, CudaBackend(), timer={"kind": "event"}, dtypes=("float16",))
    result, rows, log = session(pytester, ctx, BENCH_ADD, DeviceTimers(do_bench=wall.do_bench, wall=wall),
                                clock_reader=lambda: FakeReader(), steady_load=no_memory)
    assert result.ret == 0 and [r.status for r in rows] == ["ok"] * 3
    assert "rows timed without it: RuntimeError: CUDA out of memory. Tried to allocate 32.00 MiB" in log
