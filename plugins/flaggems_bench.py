"""FlagGems' own Benchmark in a cell: its torch side as reference rows, its FlagGems side as measured rows.

A ``provider: flaggems_upstream`` cell runs a FlagGems checkout's benchmark items unchanged
in FlagGems' own pytest session (`campaign.planning.upstreamtargets`). ``Benchmark.run``
times, per shape and dtype, ``latency_base`` (the torch op) and then ``latency`` (the same
op under ``flag_gems.use_gems``, or an explicit ``gems_op``), each with
``triton.testing.do_bench`` in kernel mode. `campaign.plugins.dobench` replaces that
function, so each call is timed by the campaign's timer and written as a row; this
plugin gives it the two hooks:

- role: ``measured`` while ``flag_gems.use_gems`` is active or the timed op is the
  Benchmark's ``gems_op``; otherwise ``reference`` -- written, shown as FlagGems-vs-torch
  speedup in the report, never paired between cells;
- key: FlagGems' own shape (the entry of ``self.shapes`` its input iterator is at) and
  dtype (the entry of ``self.to_bench_dtypes`` its run loop is at), so a row says the
  shape that actually ran, whatever ``--level`` or shape file chose it.

How: after collection (the framework module, ``benchmark.performance_utils`` at 5.0.2 or
``benchmark.base`` at 5.3+, is imported by then) ``Benchmark.init_user_config`` is wrapped
to make those two lists report each element their loops reach, ``Benchmark.get_latency``
to say which op it times, and ``flag_gems.use_gems`` to say when FlagGems dispatches. All
are put back at unconfigure. A subclass that bypasses them still gets rows: role from
``use_gems`` alone, key from the test's parameters (`dobench.default_key`), said in run.log.
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
from typing import Any, Callable, Optional

from campaign.backends import plan
from campaign.plugins import dobench

FRAMEWORK_MODULES = ("benchmark.performance_utils", "benchmark.base")
CODEGEN_CONFIGS = "flag_gems.utils.codegen_config_utils"       # its CODEGEN_COFIGS: one shared config a vendor
_FIRST_SEEN: dict[int, dict] = {}     # id of each codegen config -> its fields when this process first saw it


def fresh_codegen_configs() -> list[str]:
    """FlagGems' pointwise code generation configs put back as the process first saw them; the fields
    put back. FlagGems 5.0.2's pointwise_dynamic sets its vendor's one shared ``CodeGenConfig
    .prefer_block_pointer`` to False the first time an input has more than 2**31-1 elements, and
    never back, so every later pointwise kernel of the process is generated without block pointers.
    A batch runs several workloads in one process: clamp compiled other code after add's complex64
    2**30 shape (viewed as 2**31 reals) than alone. Called at each session's start (collection's
    end: flag_gems imported, nothing run), a workload's code no longer depends on what ran before it."""
    module = sys.modules.get(CODEGEN_CONFIGS)
    put_back = []
    for config in getattr(module, "CODEGEN_COFIGS", {}).values():
        if config is None or not dataclasses.is_dataclass(config):
            continue
        first = _FIRST_SEEN.setdefault(id(config), {f.name: getattr(config, f.name) for f in dataclasses.fields(config)})
        for name, value in first.items():
            if getattr(config, name) != value:
                setattr(config, name, value)
                put_back.append(f"{name}={value!r}")
    return put_back


class Tracking(list):
    """A list whose iteration reports each element reached (FlagGems loops ``for x in self.shapes``)."""

    def __init__(self, values, reached: Callable[[Any], None]):
        super().__init__(values)
        self._reached = reached

    def __iter__(self):
        for value in list.__iter__(self):
            self._reached(value)
            yield value


def shape_label(shape: Any) -> Optional[tuple[int, ...]]:
    """A FlagGems shape entry as a row's shape: its integers in order (entries may nest)."""
    out: list[int] = []

    def walk(value: Any) -> None:
        if isinstance(value, (list, tuple)):
            for element in value:
                walk(element)
        elif isinstance(value, int) and not isinstance(value, bool):
            out.append(value)
    walk(shape)
    return tuple(out) or None


class UpstreamBench(dobench.DoBenchPlugin):
    def __init__(self, ctx, **kwargs):
        super().__init__(ctx, role=self.role_of, key=self.key_of, **kwargs)
        self.shape: Optional[tuple[int, ...]] = None
        self.dtype: Optional[str] = None
        self.in_gems = 0
        self.timing_gems_op = False
        self.patched: list[tuple[Any, str, Any]] = []     # (owner, attribute, original) to put back

    # -- hooks given to dobench ---------------------------------------------------------
    def role_of(self, call: dobench.Call) -> str:
        return "measured" if self.in_gems or self.timing_gems_op else "reference"

    def key_of(self, call: dobench.Call) -> tuple[tuple[int, ...], str]:
        shape, dtype = dobench.default_key(call)
        return (self.shape if self.shape is not None else shape), (self.dtype or dtype)

    # -- wrapping FlagGems' framework ---------------------------------------------------
    def _reached_shape(self, value: Any) -> None:
        self.shape = shape_label(value)

    def _reached_dtype(self, value: Any) -> None:
        self.dtype = dobench.dtype_label(value)
        self.shape = None

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self.patched.append((owner, name, owner.__dict__[name] if name in getattr(owner, "__dict__", {}) else getattr(owner, name)))
        setattr(owner, name, replacement)

    def _wrap_framework(self, cls) -> None:
        plugin = self
        init_user_config, get_latency = cls.init_user_config, cls.get_latency

        def tracked_init_user_config(bench, *args, **kwargs):
            result = init_user_config(bench, *args, **kwargs)
            bench.shapes = Tracking(bench.shapes, plugin._reached_shape)
            bench.to_bench_dtypes = Tracking(bench.to_bench_dtypes, plugin._reached_dtype)
            return result

        def tracked_get_latency(bench, op, *args, **kwargs):
            plugin.timing_gems_op = getattr(bench, "gems_op", None) is not None and op is bench.gems_op
            try:
                return get_latency(bench, op, *args, **kwargs)
            finally:
                plugin.timing_gems_op = False

        self._patch(cls, "init_user_config", tracked_init_user_config)
        self._patch(cls, "get_latency", tracked_get_latency)

    def _wrap_use_gems(self, flag_gems) -> None:
        plugin = self
        use_gems = flag_gems.use_gems

        @contextlib.contextmanager
        def tracked_use_gems(*args, **kwargs):
            with use_gems(*args, **kwargs) as value:
                plugin.in_gems += 1
                try:
                    yield value
                finally:
                    plugin.in_gems -= 1

        self._patch(flag_gems, "use_gems", tracked_use_gems)

    def pytest_collection_finish(self, session):
        super().pytest_collection_finish(session)
        found = [name for name in FRAMEWORK_MODULES if getattr(sys.modules.get(name), "Benchmark", None) is not None]
        for name in found:
            self._wrap_framework(sys.modules[name].Benchmark)
        flag_gems = sys.modules.get("flag_gems")
        if flag_gems is not None and hasattr(flag_gems, "use_gems"):
            self._wrap_use_gems(flag_gems)
        if put_back := fresh_codegen_configs():
            self.ctx.log.line(f"flaggems_bench: FlagGems' codegen config put back as the process first saw it "
                              f"({', '.join(put_back)}): an earlier workload of this process had changed it")
        if found:
            self.ctx.log.line(f"flaggems_bench: {', '.join(found)}.Benchmark keyed by FlagGems' shape and dtype; "
                              "torch side reference rows, FlagGems side measured rows")
        else:
            self.ctx.log.line("flaggems_bench: no FlagGems Benchmark framework loaded: rows keyed by the tests' "
                              "parameters, role from flag_gems.use_gems alone")

    def pytest_unconfigure(self, config):
        for owner, name, original in reversed(self.patched):
            setattr(owner, name, original)
        self.patched.clear()
        super().pytest_unconfigure(config)


def make(ctx):
    if plan.timing_plugin(ctx.task.provider) != __name__:
        return plan.Standby(__name__, ctx.task.provider)
    return UpstreamBench(ctx)
