"""The timing plugin's sessions in-process, with the clock and the device recorded: what
tests/plugins/test_timing_sessions.py and tests/plugins/test_timing_windows.py share.

Nothing here has a GPU. Where a session needs a device timer, `RecordedTimers` stands
in for the clock and for the device's reaction to a capture, with the exact wording
recorded on H200 (CUDA) and S5000 (MUSA) hosts; the wording is classified by the real
backends. `Wall` and `FakeGraphDevice` stand in for the wall clock and a graph-capable
device under the real `DeviceTimers`; `FakeReader` for the device's SM clock and its
clocks-event reasons (`campaign.plugins.rowclock`); `NoLoad` for the steady-clock load.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import taskplan

from campaign.backends.musa import MusaBackend
from campaign.contract.artifacts import ROWS_FILE
from campaign.contract.cellfiles import Rows
from campaign.plugins import timing
from campaign.plugins._device_timers import CaptureFailure, DeviceTimers
from campaign.worker.context import CellContext

# Recorded wording. CUDA: torch's assertNotCapturing for the RNG, the runtime's refusal
# of a synchronising call while capturing, and a device fault (each with the DSA line
# newer torch appends to every CUDA error). MUSA: as recorded on an S5000.
CUDA_DSA = "\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
CUDA_RNG = ("Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture. If you need this call to be "
            "captured, please file an issue. Current cudaStreamCaptureStatus: cudaStreamCaptureStatusActive")
CUDA_SYNC = "CUDA error: operation not permitted when stream is capturing" + CUDA_DSA
CUDA_FAULT = "CUDA error: an illegal memory access was encountered" + CUDA_DSA
MUSA_RNG = "MUSAGeneratorImpl::current_seed is not callable during capture"
MUSA_SYNC = "operation not permitted when stream is capturing"
MUSA_POISON = "MUSA error: unknown error"


def shape_project(tmp_path: Path) -> Path:
    """A project whose ops/shapes hold small sets for the builtin and flaggems providers."""
    root = tmp_path / "project"
    (root / "ops" / "shapes" / "flaggems").mkdir(parents=True)
    (root / "ops" / "shapes" / "core.yaml").write_text("add: [[8], [4, 4]]\n")
    (root / "ops" / "shapes" / "flaggems" / "core.yaml").write_text(
        "add: [[16], [2, 8], [3, 5, 7]]\ndropout: [[64]]\nunique2: [[32]]\n")
    return root


def context(tmp_path, backend, *, timer=None, op="add", provider="flaggems", shapes=None,
            dtypes=("float16", "float32"), project_root=None) -> CellContext:
    """The timing plugin's cell on ``backend``, planned by `taskplan.cell_plan`; the shapes from
    `shape_project` unless ``project_root`` is given."""
    device = {"backend": backend.name, "target": "cuda:90" if backend.name != "musa" else "musa:31"}
    if backend.name != "cpu":
        device["name"] = "NVIDIA H200" if backend.name == "cuda" else "MTT S5000"
    manifest = taskplan.manifest_data(device=device, timer=timer or {"kind": "graph"})
    task = {"id": "w/r1/baseline", "order": 0, "round": 1, "cell": "baseline", "workload": "w", "op": op,
            "provider": provider, "canary": False, "env": {}, "autotune": {"mode": "record", "policy": "measured"},
            "timeout_s": 60, "targets": {"benchmark": "bench.py::test_bench_add", "correctness": "test.py"},
            "dtypes": dtypes, "shapes": shapes}
    plan = taskplan.cell_plan(tmp_path / "cell", root=tmp_path, task=task, manifest=manifest,
                              plugins=("campaign.plugins.timing",),
                              project_root=project_root or shape_project(tmp_path))
    return CellContext.for_cell(plan, backend)


@dataclass(frozen=True)
class OfflineMusa(MusaBackend):
    """MUSA's real wording and deny list; no torch_musa to import on this machine."""

    def device_interface(self):
        return None

    def graph_class(self):
        return None


class RecordedTimers(DeviceTimers):
    """The clock and the device's reaction to a capture, as recorded; ``fn`` really runs."""

    def __init__(self, capture_error=None, phase="capture", latency=0.0123):
        self.direct_calls = []
        self.graph_calls = 0
        self.capture_error = capture_error
        self.phase = phase
        self.latency = latency

        def clock(fn, **kwargs):
            fn()
            self.direct_calls.append(kwargs)
            return 0.5
        super().__init__(do_bench=clock)

    def graph(self, fn, interface, graph_class, **kwargs):
        fn()                                  # warm-up outside the capture
        self.graph_calls += 1
        if self.capture_error is not None:
            raise CaptureFailure(self.phase, RuntimeError(self.capture_error))
        return self.latency


class Wall:
    """A wall clock that the recorded calls advance: a first call compiles for 100 s, later calls take 1 s."""

    def __init__(self, t: float = 1000.0):
        self.t = t
        self.calls = 0

    def __call__(self) -> float:
        return self.t

    def call(self):
        self.t += 100.0 if self.calls == 0 else 1.0
        self.calls += 1

    def do_bench(self, fn, **kwargs):
        for _ in range(4):
            fn()
        self.t += 0.5                          # do_bench's own reduction after the last call
        return 0.25


class NullStreams:
    """The stream and graph half of the device interface, doing nothing on the CPU (what a graph
    timing calls around its replays)."""

    def Stream(self):
        return None

    @contextmanager
    def stream(self, stream):
        yield

    @contextmanager
    def graph(self, graph):
        yield

    def synchronize(self):
        pass


class FakeGraphDevice(NullStreams):
    """The device interface a graph timing uses, on the CPU: events report 2 ms, each replay takes 1 s."""

    def __init__(self, wall: Wall):
        self.wall = wall
        self.replays = 0
        test = self

        class Event:
            def __init__(self, enable_timing):
                pass

            def record(self):
                pass

            def elapsed_time(self, other):
                return 2.0

        class Graph:
            def replay(self):
                test.replays += 1
                test.wall.t += 1.0
        self.Event, self.graph_class = Event, Graph



class FakeReader:
    """The device's clock as a test scripts it: ``mhz`` and ``mask`` (a reasons mask) are values,
    or functions of nothing that give one at each read; every read is kept with the wall time
    it was taken at."""

    source = "nvml"
    device = "fake card 0"

    def __init__(self, mhz=1980.0, mask=0, wall=None):
        self.mhz = mhz
        self.mask = mask
        self.wall = wall
        self.reads: list[tuple[object, float, int]] = []      # (wall time or None, mhz, mask)

    def read(self):
        mhz = self.mhz() if callable(self.mhz) else self.mhz
        mask = self.mask() if callable(self.mask) else self.mask
        self.reads.append((self.wall() if self.wall else None, mhz, mask))
        return mhz, mask


class NoLoad:
    """The steady-clock load on a machine without a device: the seconds asked for, nothing run."""

    def __init__(self):
        self.asked: list[float] = []

    def __call__(self, seconds: float) -> int:
        self.asked.append(seconds)
        return 0


# Inputs live on the CPU here: this machine has no device, and the device timers are
# recorded. bench.device is still the backend's, which the test checks.
BENCH_ADD = """
import torch

def test_bench_add(bench):
    assert bench.device in ("cuda", "musa")
    for case in bench.cases():
        x = torch.ones(case.shape, dtype=case.dtype, device="cpu")
        if case.dtype_name == "float32" and len(case.shape) == 2:
            bench.measure(case, lambda: (_ for _ in ()).throw(ValueError("kernel rejected 2-D float32")))
        else:
            bench.measure(case, lambda: x + x)
"""


def session(pytester, ctx, source, timers_=None, extra_plugins=(), target=None, clock_reader=None, steady_load=None):
    """One session of ``source`` (or ``target``); the clock read through NVML unless ``clock_reader``
    opens a fake one, and the steady-clock load `NoLoad` unless ``steady_load`` is given."""
    plugin = timing.TimingPlugin(ctx, device_timers=timers_, clock_reader=clock_reader,
                                 steady_load=steady_load or NoLoad())
    path = target or pytester.makepyfile(bench_workload=source)
    result = pytester.runpytest_inprocess(str(path), "-p", "no:cacheprovider", plugins=[*extra_plugins, plugin])
    rows_path = ctx.cell_dir / ROWS_FILE
    rows = Rows.model_validate(json.loads(rows_path.read_text())).rows
    return result, rows, (ctx.cell_dir / "run.log").read_text()
