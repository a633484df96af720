"""A row's own clock (`campaign.plugins.rowclock`): what a window's reads sum to, the sampling
thread that reads inside exactly the device timers' window, and how the cell's card is found in
NVML. Device discovery and NVML's answers are faked (no device here); everything else is real."""
from __future__ import annotations

import itertools
import json
import sys
import threading
import time

import pytest
from timingsession import FakeGraphDevice, FakeReader, Wall

from campaign.backends.base import DeviceInfo
from campaign.backends.cpu import CpuBackend
from campaign.backends.cuda import CudaBackend
from campaign.backends.musa import MusaBackend
from campaign.contract import canonical
from campaign.contract.cellfiles import Row, RowClock, Rows
from campaign.plugins import rowclock
from campaign.plugins._device_timers import DeviceTimers

THERMAL, POWER_CAP, IDLE = 0x40, 0x4, 0x1


class Log:
    def __init__(self):
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)


def test_a_window_sums_to_median_min_max_and_every_reason_seen():
    reads = [(1980.0, POWER_CAP), (1500.0, THERMAL | POWER_CAP), (None, None), (1700.0, None), (None, 0)]
    assert rowclock.summarize("nvml", reads) == RowClock(
        source="nvml", samples=4, sm_mhz_median=1700.0, sm_mhz_min=1500.0, sm_mhz_max=1980.0,
        reasons=("hw_thermal_slowdown", "sw_power_cap"))
    assert rowclock.summarize("nvml", [(None, None)]) == RowClock(source="nvml", samples=0)


def test_the_thread_reads_between_the_open_and_the_close():
    values = itertools.cycle([1500.0, 1980.0, 1700.0])
    reader = FakeReader(mhz=lambda: next(values), mask=THERMAL)
    clocks = rowclock.RowClocks(lambda: reader, Log(), interval_s=0.001)
    clocks.open()
    time.sleep(0.05)
    clock = clocks.close()
    assert len(reader.reads) >= 3, "the open's read, the thread's, the close's"
    assert clock == rowclock.summarize("nvml", [(mhz, mask) for _, mhz, mask in reader.reads])
    assert (clock.sm_mhz_min, clock.sm_mhz_max, clock.reasons) == (1500.0, 1980.0, ("hw_thermal_slowdown",))
    assert not [t for t in threading.enumerate() if t.name == "rowclock"]


def test_a_window_shorter_than_the_interval_still_holds_two_reads():
    reader = FakeReader(mhz=1830.0)
    clocks = rowclock.RowClocks(lambda: reader, Log(), interval_s=10.0)
    started = time.monotonic()
    clocks.open()
    clock = clocks.close()
    assert time.monotonic() - started < 1.0, "closing does not wait out the interval"
    assert (clock.samples, clock.sm_mhz_median, clock.reasons) == (2, 1830.0, ())
    assert clocks.close() is None, "a closed window has no second summary"


def test_no_clock_source_is_said_once_and_every_window_stays_unread():
    def absent():
        raise rowclock.Unavailable("pynvml is not installed (pip install nvidia-ml-py)")
    log = Log()
    clocks = rowclock.RowClocks(absent, log)
    for _ in range(3):
        clocks.open()
        assert clocks.close() is None
    assert clocks.read_now() is None
    assert log.lines == ["row clocks: not read: pynvml is not installed (pip install nvidia-ml-py)"]


def _inside(reader: FakeReader, window) -> bool:
    return bool(reader.reads) and all(window[0] <= t <= window[1] for t, _, _ in reader.reads)


def test_event_and_direct_timers_read_inside_their_window_only():
    for timing in ("event", "direct"):
        wall = Wall()
        reader = FakeReader(wall=wall)
        device = DeviceTimers(do_bench=wall.do_bench, wall=wall,
                              watch=rowclock.RowClocks(lambda: reader, Log(), interval_s=0.001))
        if timing == "event":
            device.event(wall.call, warmup_ms=1, rep_ms=1, return_mode="median")
        else:
            device.direct(wall.call, warmup_ms=1, rep_ms=1, return_mode="median", repeat=3)
        assert device.window[0] == 1100.0, "the compiling first call is outside"
        assert _inside(reader, device.window), (timing, reader.reads, device.window)
        assert device.clock.samples == len(reader.reads) >= 2


def test_a_graph_timer_reads_inside_its_timed_replays_only():
    wall = Wall()
    reader = FakeReader(wall=wall)
    device = FakeGraphDevice(wall)
    timers_ = DeviceTimers(wall=wall, watch=rowclock.RowClocks(lambda: reader, Log(), interval_s=0.001))
    timers_.graph(wall.call, device, device.graph_class, warmup_ms=1, rep_ms=10, return_mode="median")
    assert _inside(reader, timers_.window) and timers_.window[1] - timers_.window[0] == 10.0
    assert timers_.clock.samples == len(reader.reads)


def test_a_timing_that_raises_leaves_no_sampling_thread():
    def failing(fn, **kwargs):
        fn()
        time.sleep(0.01)
        raise RuntimeError("the kernel faulted")
    device = DeviceTimers(do_bench=failing, watch=rowclock.RowClocks(lambda: FakeReader(), Log(), interval_s=0.001))
    with pytest.raises(RuntimeError, match="faulted"):
        device.event(lambda: None, warmup_ms=1, rep_ms=1, return_mode="median")
    assert not [t for t in threading.enumerate() if t.name == "rowclock"]


class FakeNvml:
    """NVML's answers for one card, found by its uuid or its index; the older throttle-reasons name only."""

    NVML_CLOCK_SM = 1

    class NVMLError(Exception):
        pass

    def __init__(self, uuid: str = "GPU-1111-aaaa", index: int = 3, clock_fails: bool = False):
        self.uuid, self.index, self.clock_fails = uuid, index, clock_fails
        self.inits = 0

    def nvmlInit(self):
        self.inits += 1

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if uuid != self.uuid:
            raise self.NVMLError(f"Not Found: {uuid}")
        return "card"

    def nvmlDeviceGetHandleByIndex(self, index):
        if index != self.index:
            raise self.NVMLError(f"Invalid Argument: {index}")
        return "card"

    def nvmlDeviceGetClockInfo(self, handle, clock):
        if self.clock_fails:
            raise self.NVMLError("Not Supported")
        return 1980

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return POWER_CAP


def _cuda(uuid):
    return CudaBackend(discover=lambda: [DeviceInfo(index=0, name="NVIDIA H200", uuid=uuid, target="cuda:90")])


@pytest.mark.parametrize("uuid, visible, found", [
    ("1111-aaaa", "3", "uuid GPU-1111-aaaa"),                          # torch's uuid wins over the entry
    (None, "3", "index 3 (visibility variable)"),
    (None, "GPU-1111-aaaa", "uuid GPU-1111-aaaa (visibility variable)"),
    (None, None, "index 0 (nothing pinned)"),
])
def test_the_cells_card_is_found_by_uuid_then_by_the_visibility_entry(uuid, visible, found):
    nvml = FakeNvml(index=0 if visible is None else 3)
    environ = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    reader = rowclock.open_nvml(_cuda(uuid), environ, nvml=nvml)
    assert reader.device == f"cuda:0 = NVML {found}"
    assert reader.read() == (1980, POWER_CAP) and nvml.inits == 1


def test_a_failed_read_is_none_in_its_place_never_raised():
    reader = rowclock.open_nvml(_cuda("1111-aaaa"), {}, nvml=FakeNvml(clock_fails=True))
    assert reader.read() == (None, POWER_CAP)


def test_where_no_clock_can_be_read_the_reason_is_named(monkeypatch):
    for backend in (CpuBackend(), MusaBackend()):
        with pytest.raises(rowclock.Unavailable, match=f"the {backend.name} backend reads no NVML clock"):
            rowclock.open_nvml(backend, {})
    with pytest.raises(rowclock.Unavailable, match="torch sees no cuda device 0"):
        rowclock.open_nvml(CudaBackend(discover=list), {}, nvml=FakeNvml())
    with pytest.raises(rowclock.Unavailable, match="NVML: NVMLError: Not Found: GPU-2222"):
        rowclock.open_nvml(_cuda("2222"), {}, nvml=FakeNvml())
    with pytest.raises(rowclock.Unavailable, match="device 1 is not among the visible devices '5'"):
        rowclock.nvml_handle(FakeNvml(), 1, None, "5")
    monkeypatch.setitem(sys.modules, "pynvml", None)      # NVML absent: the import fails
    with pytest.raises(rowclock.Unavailable, match=r"pynvml is not installed \(pip install nvidia-ml-py\)"):
        rowclock.open_nvml(_cuda("1111-aaaa"), {})


def test_a_row_and_its_clock_round_trip_through_rows_json():
    clock = RowClock(source="nvml", samples=27, sm_mhz_median=1755.0, sm_mhz_min=1620.0, sm_mhz_max=1980.0,
                     reasons=("hw_thermal_slowdown", "sw_power_cap"), retimed=("hw_thermal_slowdown",) * 2)
    rows = Rows(rows=(Row(test="b.py::test_bench_mm", function="test_bench_mm", op="mm", shape=(1024, 1024, 1024),
                          dtype="float16", timer="graph", latency_ms=0.012, status="ok", l2_flush=False,
                          window_start_unix=1000.0, window_end_unix=1000.2, clock=clock),
                      Row(test="b.py::test_bench_mm", function="test_bench_mm", op="mm", shape=(1,), dtype="float16",
                          timer="none", status="failed", error="not measured")))
    text = canonical.dumps(rows.model_dump(mode="json"))
    assert Rows.model_validate(json.loads(text)) == rows
    assert json.loads(text)["rows"][1]["clock"] is None
    with pytest.raises(ValueError, match="extra"):
        RowClock.model_validate({**clock.model_dump(mode="json"), "temp_c": 60})
