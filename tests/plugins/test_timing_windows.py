"""Timing windows: the wall-clock span each timed row measured, first call's compile and
graph set-up excluded (`campaign.judging.throttle` reads telemetry inside it)."""
from __future__ import annotations

from timingsession import BENCH_ADD, CUDA_SYNC, FakeGraphDevice, Wall, context, session

from campaign.backends.cuda import CudaBackend
from campaign.contract import timers
from campaign.plugins._device_timers import CaptureFailure, DeviceTimers

pytest_plugins = ["pytester"]


def test_event_and_direct_windows_start_after_the_first_call_and_end_after_the_timing():
    wall = Wall()
    device = DeviceTimers(do_bench=wall.do_bench, wall=wall)
    assert device.event(wall.call, warmup_ms=1, rep_ms=1, return_mode="median") == 0.25
    assert device.window == (1100.0, 1103.5), "the compiling first call is outside the window"
    wall = Wall()
    device = DeviceTimers(do_bench=wall.do_bench, wall=wall)
    assert device.direct(wall.call, warmup_ms=1, rep_ms=1, return_mode="median", repeat=3) == 0.25
    assert device.window == (1100.0, 1112.5), "one window over every repeated do_bench call"


def test_a_graph_window_spans_the_timed_replays_only():
    wall = Wall()
    device = FakeGraphDevice(wall)
    timers_ = DeviceTimers(wall=wall)
    latency = timers_.graph(wall.call, device, device.graph_class, warmup_ms=1, rep_ms=10, return_mode="median")
    assert latency == 2.0 / timers.graph_calls(2.0 / timers.ESTIMATE_CALLS, 10)
    assert device.replays == 1 + timers.TIMED_REPLAYS
    start, end = timers_.window
    assert end - start == timers.TIMED_REPLAYS, "the upload replay, warm-up and capture are outside"
    assert end == wall.t


def test_every_timed_row_of_a_session_carries_its_window_and_failed_rows_none(pytester, tmp_path):
    ctx = context(tmp_path, CudaBackend(), timer={"kind": "event"})
    wall = Wall()
    result, rows, _ = session(pytester, ctx, BENCH_ADD, DeviceTimers(do_bench=wall.do_bench, wall=wall))
    assert result.ret == 0
    ok = [r for r in rows if r.status == "ok"]
    assert len(ok) == 5 and all(r.window_end_unix > r.window_start_unix for r in ok)
    assert all(a.window_end_unix <= b.window_start_unix for a, b in zip(ok, ok[1:])), "ordered, not overlapping"
    failed = [r for r in rows if r.status == "failed"]
    assert len(failed) == 1 and (failed[0].window_start_unix, failed[0].window_end_unix) == (None, None)


class FallsBackOnce(DeviceTimers):
    """The first capture is refused (re-timed direct, with a window); later graph timings report none."""

    def __init__(self, wall):
        super().__init__(do_bench=wall.do_bench, wall=wall)
        self.graphs = 0

    def graph(self, fn, interface, graph_class, **kwargs):
        self.graphs += 1
        if self.graphs == 1:
            raise CaptureFailure("capture", RuntimeError(CUDA_SYNC))
        fn()
        return 0.0123


def test_a_row_never_carries_the_window_of_an_earlier_timing(pytester, tmp_path):
    ctx = context(tmp_path, CudaBackend(), dtypes=("float16",))
    wall = Wall()
    result, rows, _ = session(pytester, ctx, BENCH_ADD, FallsBackOnce(wall))
    assert result.ret == 0
    assert [(r.timer, r.window_start_unix is not None) for r in rows] == [
        ("direct", True), ("graph", False), ("graph", False)]
