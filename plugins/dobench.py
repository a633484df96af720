"""A test's own ``triton.testing.do_bench`` calls, each timed by this project's timer into rows.json.

Active in the benchmark session of a ``provider: pytest`` workload (`campaign.backends.plan.timing_plugin`):
a user's kernel test runs unchanged, and every ``do_bench(fn, ...)`` or ``do_bench_cudagraph(fn, ...)``
it makes is measured through `campaign.plugins.timing`'s path -- the manifest's timer (graph by
default), with its fallback, poison and deny rules (`campaign.contract.timers`), or, on a backend that
executes nothing, one call through the compile-only driver (a ``compiled`` row, IR captured).

Binding. At configure ``triton.testing.do_bench`` and ``do_bench_cudagraph`` are replaced, so
``triton.testing.do_bench(...)`` and any ``from triton.testing import do_bench`` run later (test
modules are imported at collection, after configure) get the replacement. A module imported before
(a conftest.py, a helper it imports) keeps the original under its own name: at collection finish the
globals of every loaded module are searched for the originals, by identity, and rebound. Everything
is put back at unconfigure. A call becomes a row only in a test's call phase and only from outside
Triton: Triton's autotuner benchmarks configs through the same function (``get_benchmarker``), and a
call made while a row is being measured (the first call tuning) belongs to that measurement; both go
to the original.

Rows. ``test`` is the node id; ``function`` the node id within its file (``test_scale_add[dtype0-4096]``),
so the pairing key (`campaign.judging.stats.keyed`: function, shape, dtype, occurrence) is the node
id and the call's order among the test's calls with the same label. ``shape``/``dtype`` are labels
from the ``key`` hook. What the test gets back is a do_bench-shaped value: the row's latency (the
manifest's timer and return mode -- the test's own warmup, rep and return_mode are recorded in
run.log, not used), a list of it per requested quantile, or a one-item list for ``return_mode="all"``;
NaN in each place on a compile-only backend. A row that failed raises `NotTimed` in the test, as a
failing do_bench would.

Interface for another plugin (FlagGems' own Benchmark, which times torch and FlagGems back to back)::

    DoBenchPlugin(ctx, role=my_role, key=my_key)
    my_role(call: Call) -> "measured" | "reference"   # reference rows are kept, never paired
    my_key(call: Call) -> (shape: tuple[int, ...], dtype: str)

A test that calls do_bench nowhere leaves an empty rows.json and says so in run.log; the screen
reports it as NO_ROWS with that reason.
"""
from __future__ import annotations

import inspect
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import pytest
import triton.testing

from campaign.backends import plan
from campaign.contract.artifacts import ROWS_FILE
from campaign.contract.canonical import write_json_new
from campaign.contract.cellfiles import Row, Rows
from campaign.contract.fields import DTYPES
from campaign.plugins import flaggems_offline, timing, timingclock
from campaign.plugins._device_timers import DeviceTimers

APIS = ("do_bench", "do_bench_cudagraph")
ROLES = ("measured", "reference")
NOTHING_TIMED = "no test called triton.testing.do_bench or do_bench_cudagraph: nothing was timed"


@dataclass(frozen=True)
class Call:
    """One do_bench call of a test, as the ``role`` and ``key`` hooks see it."""

    item: Any                        # the pytest item whose call phase made it
    index: int                       # 0-based order among that test's calls
    api: str                         # "do_bench" or "do_bench_cudagraph"
    fn: Callable[[], Any]
    options: Mapping[str, Any]       # the test's own arguments: warmup, rep, quantiles, return_mode, ...


class NotTimed(RuntimeError):
    """The call's row failed: the test sees an error where do_bench would have raised."""


def default_role(call: Call) -> str:
    return "measured"


def dtype_label(value: Any) -> Optional[str]:
    if type(value).__name__ == "dtype" and type(value).__module__ == "torch":
        return str(value).removeprefix("torch.")
    return value if isinstance(value, str) and value in DTYPES else None


def default_key(call: Call) -> tuple[tuple[int, ...], str]:
    """Labels from the test's own parameters: the first torch dtype (or dtype name) is the dtype
    ("-" without one); the first tuple/list of ints is the shape, else every int parameter in order."""
    params = dict(getattr(getattr(call.item, "callspec", None), "params", None) or {})
    dtype = next((label for value in params.values() if (label := dtype_label(value))), "-")

    def whole(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)
    shape = next((tuple(v) for v in params.values()
                  if isinstance(v, (tuple, list)) and v and all(whole(d) for d in v)), None)
    if shape is None:
        shape = tuple(v for v in params.values() if whole(v))
    return shape, dtype


def local_id(item) -> str:
    """The node id within its file: what a row's ``function`` holds."""
    return item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name


class _Measured:
    """What `timing.TimingPlugin.measure` reads of its bench: the deny key's function and a row's identity."""

    def __init__(self, function: str, base: dict):
        self.function = function
        self._base = base

    def base(self, case) -> dict:
        return dict(self._base)


class DoBenchPlugin:
    def __init__(self, ctx, role: Callable[[Call], str] = default_role,
                 key: Callable[[Call], tuple[tuple[int, ...], str]] = default_key,
                 device_timers: Optional[DeviceTimers] = None, **timing_options):
        self.ctx = ctx
        self.role, self.key = role, key
        self.originals = {api: getattr(triton.testing, api) for api in APIS}
        self.signatures = {api: inspect.signature(fn) for api, fn in self.originals.items()}
        # the timers' own do_bench calls come while measuring, so they reach the original
        self.timing = timing.TimingPlugin(ctx, device_timers, **timing_options)   # clock_reader, steady_load
        self.replacements = {api: self._replacement(api) for api in APIS}
        self.rebound: list[tuple[Any, str, Callable]] = []     # (module, name, original) to put back
        self.item = None                                       # the test whose call phase runs
        self.measuring = False
        self.calls: dict[str, int] = {}

    # -- binding ------------------------------------------------------------------------
    def _replacement(self, api: str):
        original = self.originals[api]

        def replaced(*args, **kwargs):
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if self.item is None or self.measuring or caller.split(".")[0] == "triton":
                return original(*args, **kwargs)
            return self._measure(api, args, kwargs)
        replaced.__name__ = replaced.__qualname__ = api
        replaced.__doc__ = f"{api}, timed by the campaign's timer (campaign.plugins.dobench)."
        replaced.__wrapped__ = original
        return replaced

    def _rebind_loaded(self) -> None:
        """Rebind ``from triton.testing import do_bench`` names bound before configure."""
        by_identity = {id(fn): api for api, fn in self.originals.items()}
        for name, module in list(sys.modules.items()):
            namespace = getattr(module, "__dict__", None)
            if namespace is None:
                continue
            for attr, value in list(namespace.items()):
                api = by_identity.get(id(value))
                if api is not None and value is self.originals[api]:
                    setattr(module, attr, self.replacements[api])
                    self.rebound.append((module, attr, value))

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):
        for api in APIS:
            setattr(triton.testing, api, self.replacements[api])
        self._rebind_loaded()
        self.ctx.log.line(f"dobench: triton.testing.{' and '.join(APIS)} timed by the campaign's timer "
                          f"({self.timing._timer_label()}); {len(self.rebound)} earlier binding(s) rebound")

    def pytest_collection_finish(self, session):
        before = len(self.rebound)
        self._rebind_loaded()
        if len(self.rebound) > before:
            self.ctx.log.line(f"dobench: {len(self.rebound) - before} binding(s) made before collection rebound")

    def pytest_unconfigure(self, config):
        for api, fn in self.originals.items():
            if getattr(triton.testing, api) is self.replacements[api]:
                setattr(triton.testing, api, fn)
        for module, attr, original in reversed(self.rebound):
            if getattr(module, attr, None) in self.replacements.values():
                setattr(module, attr, original)
        self.rebound.clear()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        self.item = item
        try:
            yield
        finally:
            self.item = None

    # -- measuring ----------------------------------------------------------------------
    def _measure(self, api: str, args: tuple, kwargs: dict):
        bound = self.signatures[api].bind(*args, **kwargs)     # a TypeError as do_bench would raise
        options = dict(bound.arguments)
        fn = options.pop("fn")
        item = self.item
        index = self.calls.get(item.nodeid, 0)
        self.calls[item.nodeid] = index + 1
        call = Call(item=item, index=index, api=api, fn=fn, options=options)
        role = self.role(call)
        if role not in ROLES:
            raise ValueError(f"dobench: the role hook gave {role!r} for {item.nodeid} call {index}; "
                             f"one of {', '.join(ROLES)}")
        shape, dtype = self.key(call)
        base = dict(test=item.nodeid, function=local_id(item), op=self.ctx.task.op, shape=tuple(shape),
                    dtype=dtype, role=role)
        asked = ", ".join(f"{k}={v!r}" for k, v in options.items() if k != "grad_to_none")
        self.ctx.log.line(f"dobench: {item.nodeid} call {index} {api}({asked}) role={role}")
        if role == "reference" and flaggems_offline.ACTIVE is not None:
            # FlagGems answered as the card, offline: its reference is torch's own op on the host, no Triton
            # code of the campaign's, no row (nothing is paired or timed offline), and at FlagGems'
            # 2**30-element shapes seconds and gigabytes per call
            self.ctx.log.line("dobench: reference not run: the compile-only backend neither times it nor compiles it")
            return nothing_timed(options)
        self.measuring = True
        try:
            row = self.timing.measure(_Measured(getattr(item, "originalname", None) or item.name, base), call, fn)
        finally:
            self.measuring = False
        return returned(row, options)

    def pytest_sessionfinish(self, session):
        rows = self.timing.rows
        write_json_new(self.ctx.cell_dir / ROWS_FILE, Rows(rows=tuple(rows)).model_dump(mode="json"))
        if not rows:
            self.ctx.log.line(f"dobench: {NOTHING_TIMED}")
            return
        counts = {status: sum(row.status == status for row in rows) for status in ("ok", "failed", "compiled")}
        reference = sum(row.role == "reference" for row in rows)
        self.ctx.log.line(f"dobench: {len(rows)} rows written from {len(self.calls)} test(s) "
                          f"({', '.join(f'{k} {v}' for k, v in counts.items())}; {reference} reference)")
        if counts["ok"]:
            self.ctx.log.line(timingclock.clocks_line(rows))


def returned(row: Row, options: Mapping[str, Any]):
    """What the test gets back in place of do_bench's value (see the module docstring)."""
    if row.status == "failed":
        raise NotTimed(f"{row.test}: not timed: {row.error}")
    return _shaped(row.latency_ms if row.status == "ok" else math.nan, options)


def nothing_timed(options: Mapping[str, Any]):
    return _shaped(math.nan, options)


def _shaped(value: float, options: Mapping[str, Any]):
    quantiles = options.get("quantiles")
    if quantiles is not None:
        values = [value] * len(quantiles)
        return values[0] if len(values) == 1 else values
    if options.get("return_mode") == "all":
        return [value]
    return value


def make(ctx):
    if plan.timing_plugin(ctx.task.provider) != __name__:
        return plan.Standby(__name__, ctx.task.provider)
    return DoBenchPlugin(ctx)
