"""The ``bench`` fixture: every benchmark case of a cell, measured and written to rows.json.

Protocol of a benchmark test (``ops/workloads/*/bench_*.py``)::

    def test_bench_add(bench):
        for case in bench.cases():      # .shape, .dtype (torch), .dtype_name
            x = torch.randn(case.shape, dtype=case.dtype, device=bench.device)
            bench.measure(case, lambda: add(x, x))

Cases are the op's shapes at the campaign's bench level (`campaign.planning.shapes`: the
provider's shape file, narrowed by the workload's subset) times the task's dtypes.
``measure`` appends one `campaign.contract.cellfiles.Row`; at session finish every row goes to
``<cell_dir>/rows.json``. What each ``Row.timer`` value means is in `campaign.contract.timers`.

- A case whose call raises is a failed row with the error text; the others continue.
- A graph capture that fails is classified by the backend's wording: ``fallback`` re-times
  the row direct and marks it BENCHMARK_DIRECT_NO_CUDAGRAPH (phase=capture|replay,
  repeat=N); ``poisoned`` emits BENCHMARK_CAPTURE_POISONED, fails the row and stops all
  measuring in this process; ``fatal`` (a device fault) fails the row, never a latency.
- The backend's capture deny list is keyed by the pytest function name minus ``test_``
  (``test_bench_dropout`` -> ``bench_dropout``); a denied row is never captured and is
  marked with phase=deny.
- On a backend that does not execute (compile-only), and in an untimed task (a screen's
  IR pass, ``Task.timed`` False) on any backend, the call runs once, so it compiles and
  its launches are counted; the row is ``compiled`` with timer ``none`` and no latency.
- A timed row carries its timing window (``window_start_unix``/``window_end_unix``: the
  device timers' ``window``), which the parent's telemetry samples are joined to, and its
  own clock (``clock``: `campaign.contract.cellfiles.RowClock`), the SM clock and clocks-event
  reasons the worker read inside that window (`campaign.plugins.rowclock`); None where no
  clock can be read (run.log says why, once).
- Re-timing on an environmental clock reason, and the steady-clock load before the first
  timed row: `campaign.plugins.timingclock`.
- Under the manifest's noise target (``timer.max_noise_pct``), each timer samples a row until
  its relative spread reaches the target or the time cap (`campaign.contract.timers`); the row
  records ``samples``, ``noise_pct`` and ``noise_capped``, and run.log a line for each.
- A planned case the test never measured (it raised first, or was poisoned) still gets a
  failed row saying so: no case disappears from the table.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
import torch

from campaign.backends import plan
from campaign.contract import timers
from campaign.contract.artifacts import ROWS_FILE
from campaign.contract.canonical import write_json_new
from campaign.contract.cellfiles import Row, Rows
from campaign.planning import shapes as shape_sets
from campaign.plugins import rowclock, timingclock
from campaign.plugins._device_timers import CaptureFailure, DeviceTimers


@dataclass(frozen=True)
class Case:
    shape: tuple[int, ...]
    dtype: Any                       # torch.dtype
    dtype_name: str


class CapturePoisoned(RuntimeError):
    """A capture left the device context unusable; nothing more is measured here."""


def torch_dtype(name: str):
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"dtype {name!r} is not a torch dtype")
    return dtype


def plan_cases(project_root: Path, provider: str, level: str, op: str,
               subset: Optional[tuple[str, ...]], dtypes: tuple[str, ...],
               shape_file: Optional[str] = None) -> tuple[Case, ...]:
    """Every case of a task, dtype-major: the op's (narrowed) shapes times its dtypes;
    ``shape_file``: the campaign's own, in place of ops/shapes."""
    path = shape_sets.shape_file(project_root, provider, level, shape_file)
    table = shape_sets.load_shapes(path)
    if op not in table:
        raise ValueError(f"{path}: no shapes for op {op!r}")
    shapes = shape_sets.select(table[op], subset)
    if not dtypes:
        raise ValueError(f"{op}: no dtypes to measure")
    return tuple(Case(shape, torch_dtype(name), name) for name in dtypes for shape in shapes)


class Bench:
    """What one benchmark test sees as its ``bench`` fixture."""

    def __init__(self, plugin: "TimingPlugin", node):
        self._plugin = plugin
        self.device = plugin.ctx.backend.torch_device
        self.test = node.nodeid
        self.function = getattr(node, "originalname", None) or node.name
        self.measured: set[Case] = set()

    def cases(self):
        yield from self._plugin.cases

    def measure(self, case: Case, fn: Callable[[], Any]) -> Row:
        if case not in self._plugin.cases:
            raise ValueError(f"{case} is not one of this cell's planned cases")
        if case in self.measured:
            raise ValueError(f"{case} was already measured by {self.function}")
        self.measured.add(case)
        return self._plugin.measure(self, case, fn)

    def base(self, case: Case) -> dict:
        return dict(test=self.test, function=self.function, op=self._plugin.ctx.task.op,
                    shape=case.shape, dtype=case.dtype_name)


class TimingPlugin:
    """``clock_reader`` opens what reads the device's clock (default: NVML, `rowclock.open_nvml`);
    ``steady_load`` runs the steady-clock load for a number of seconds (default:
    `rowclock.matmul_load`). Tests on a machine without a device hand in both."""

    def __init__(self, ctx, device_timers: Optional[DeviceTimers] = None,
                 clock_reader: Optional[Callable[[], rowclock.Reader]] = None,
                 steady_load: Optional[Callable[[float], int]] = None):
        self.ctx = ctx
        self.timer = ctx.terms.timer
        self.noise = timers.noise_target(self.timer)
        self.capabilities = ctx.backend.capabilities
        # an untimed task runs each call once, as the compile-only driver does: the IR is the point
        self.measures = self.capabilities.executes and ctx.task.timed
        timers.check_timer(self.timer.kind, self.measures, self.capabilities.graph_capture)
        self.device_timers = device_timers or DeviceTimers()
        self.row_clocks = rowclock.RowClocks(
            clock_reader or functools.partial(rowclock.open_nvml, ctx.backend, os.environ), ctx.log)
        self.device_timers.watch = self.row_clocks          # the timers open it at each window
        self.steady_load = steady_load or functools.partial(rowclock.matmul_load, ctx.backend)
        self.steadied = False
        self.cases: tuple[Case, ...] = ()
        self.rows: list[Row] = []
        self.poisoned: Optional[str] = None         # where a capture poisoned this process
        self._call_errors: dict[str, str] = {}

    # -- pytest hooks -------------------------------------------------------------------
    def pytest_configure(self, config):
        task = self.ctx.task
        try:
            self.cases = plan_cases(Path(self.ctx.plan.project_root), task.provider,
                                    self.ctx.terms.bench_level, task.op, task.shapes, task.dtypes,
                                    task.targets.shape_file)
        except Exception as exc:                    # InputError carries its lines in str()
            raise pytest.UsageError(f"timing: {exc}") from None
        self.ctx.log.line(f"timing: timer={self._timer_label()} {len(self.cases)} cases of {task.op} "
                          f"at bench level {self.ctx.terms.bench_level}")

    @pytest.fixture
    def bench(self, request):
        bench = Bench(self, request.node)
        if self.poisoned is not None:
            self._fail_unmeasured(bench, f"not measured: {timers.POISONED_MARKER} earlier in this process "
                                         f"({self.poisoned})")
            pytest.fail(f"{timers.POISONED_MARKER} earlier in this process ({self.poisoned}): nothing more is measured")
        yield bench
        error = self._call_errors.get(bench.test)
        reason = (f"not measured: the test raised before measuring this case: {error}" if error
                  else "not measured: the test never called bench.measure for this case")
        if self.poisoned is not None:
            reason = f"not measured: {timers.POISONED_MARKER} in this process ({self.poisoned})"
        self._fail_unmeasured(bench, reason)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" and call.excinfo is not None:
            self._call_errors[item.nodeid] = timers.error_text(call.excinfo.value, limit=1000)

    def pytest_sessionfinish(self, session):
        write_json_new(self.ctx.cell_dir / ROWS_FILE, Rows(rows=tuple(self.rows)).model_dump(mode="json"))
        counts = {status: sum(row.status == status for row in self.rows) for status in ("ok", "failed", "compiled")}
        self.ctx.log.line(f"timing: {len(self.rows)} rows written ({', '.join(f'{k} {v}' for k, v in counts.items())})")
        if counts["ok"]:
            self.ctx.log.line(timingclock.clocks_line(self.rows))

    # -- measuring ----------------------------------------------------------------------
    def measure(self, bench: Bench, case: Case, fn) -> Row:
        base = bench.base(case)
        if self.poisoned is not None:
            return self._add(Row(**base, timer="none", status="failed",
                                 error=f"not measured: {timers.POISONED_MARKER} in this process ({self.poisoned})"))
        if not self.measures:
            try:
                fn()
            except Exception as exc:
                return self._add(Row(**base, timer="none", status="failed", error=timers.row_error(exc)))
            return self._add(Row(**base, timer="none", status="compiled"))
        if not self.steadied:
            self.steadied = True
            timingclock.steady_clock(self.row_clocks, self.steady_load, self.ctx.log)
        kind = self.timer.kind
        timingclock.forget_window(self.device_timers)
        if kind == "event":
            return self._timed(base, "event", lambda: self.device_timers.event(fn, **self._bench_args()), l2_flush=True)
        if kind == "direct":
            return self._direct(base, fn)
        if timers.deny_key(bench.function) in self.ctx.backend.capture_deny:
            return self._fallback(base, fn, "deny", "on the backend's capture deny list")
        return self._graph(base, fn)

    def _graph(self, base: dict, fn) -> Row:
        backend = self.ctx.backend
        try:
            latency, retimed = timingclock.retiming(self.device_timers, self.ctx.log, base, lambda: (
                self.device_timers.graph(fn, backend.device_interface(), backend.graph_class(), **self._bench_args())))
        except CaptureFailure as failure:
            text = timers.row_error(failure.cause)
            decision = timers.decide(backend.classify_capture_failure(text))
            if decision.retime_direct:
                return self._fallback(base, fn, failure.phase, text)
            where = f"{base['function']} {shape_sets.format_shape(base['shape'])} {base['dtype']}"
            if decision.marker is not None:
                self.ctx.log.marker(decision.marker, **self._marker_fields(base), phase=failure.phase)
            row = self._add(Row(**base, timer="graph", status="failed",
                                error=f"{decision.verdict} during graph {failure.phase}: {text}"))
            if decision.stop_measuring:
                self.poisoned = where
                raise CapturePoisoned(
                    f"{timers.POISONED_MARKER}: graph {failure.phase} of {where} left the device context "
                    "unusable; nothing more is measured in this process") from failure.cause
            return row
        except Exception as exc:
            return self._add(Row(**base, timer="graph", status="failed", l2_flush=False, error=timers.row_error(exc)))
        return self._checked(base, "graph", latency, retimed, l2_flush=False)

    def _fallback(self, base: dict, fn, phase: str, why: str) -> Row:
        repeat = timers.repeat_count(self.timer.direct_repeat)
        self.ctx.log.marker(timers.FALLBACK_MARKER, **self._marker_fields(base), phase=phase, repeat=repeat)
        self.ctx.log.line(f"  why: {why.splitlines()[0] if why else 'unknown'}")
        return self._direct(base, fn, markers=(timers.FALLBACK_MARKER,), fallback_phase=phase)

    def _direct(self, base: dict, fn, **extra) -> Row:
        repeat = timers.repeat_count(self.timer.direct_repeat)
        return self._timed(base, "direct",
                           lambda: self.device_timers.direct(fn, repeat=repeat, **self._bench_args()),
                           l2_flush=True, repeat=repeat, **extra)

    def _timed(self, base: dict, timer: str, run, **extra) -> Row:
        try:
            latency, retimed = timingclock.retiming(self.device_timers, self.ctx.log, base, run)
        except Exception as exc:
            return self._add(Row(**base, timer=timer, status="failed", error=timers.row_error(exc), **extra))
        return self._checked(base, timer, latency, retimed, **extra)

    def _checked(self, base: dict, timer: str, latency, retimed: tuple[str, ...] = (), **extra) -> Row:
        try:
            value = timers.check_latency(latency)
        except timers.TimerRefused as exc:
            return self._add(Row(**base, timer=timer, status="failed", error=str(exc), **extra))
        attached = timingclock.window_and_clock(self.device_timers, retimed)
        timingclock.log_noise(self.device_timers, self.noise, self.ctx.log, base)
        return self._add(Row(**base, timer=timer, status="ok", latency_ms=value, **extra, **attached))

    # -- helpers ------------------------------------------------------------------------
    def _bench_args(self) -> dict:
        return dict(warmup_ms=self.timer.warmup_ms, rep_ms=self.timer.rep_ms, return_mode=self.timer.return_mode,
                    noise=self.noise)

    def _timer_label(self) -> str:
        if not self.capabilities.executes:
            return "none (compile-only: nothing is timed)"
        if not self.measures:
            return "none (IR pass: untimed, each call runs once)"
        t = self.timer
        return (f"{t.kind} warmup_ms={t.warmup_ms} rep_ms={t.rep_ms} return_mode={t.return_mode} "
                f"direct_repeat={timers.repeat_count(t.direct_repeat)}{timingclock.noise_label(self.noise)}")

    @staticmethod
    def _marker_fields(base: dict) -> dict:
        return dict(op=base["op"], function=base["function"], shape=shape_sets.format_shape(base["shape"]),
                    dtype=base["dtype"])

    def _fail_unmeasured(self, bench: Bench, reason: str) -> None:
        for case in self.cases:
            if case not in bench.measured:
                bench.measured.add(case)
                self._add(Row(**bench.base(case), timer="none", status="failed", error=reason))

    def _add(self, row: Row) -> Row:
        self.rows.append(row)
        latency = "-" if row.latency_ms is None else f"{row.latency_ms:.6g}ms"
        self.ctx.log.line(f"row {row.function} {shape_sets.format_shape(row.shape)} {row.dtype} "
                          f"timer={row.timer} {row.status} {latency}")
        return row


def make(ctx):
    if plan.timing_plugin(ctx.task.provider) != __name__:
        return plan.Standby(__name__, ctx.task.provider)
    return TimingPlugin(ctx)
