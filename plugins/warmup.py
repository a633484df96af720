"""Parallel compile warm-up of the autotune configs a tuner is about to benchmark.

Not a pytest plugin of its own: `campaign.plugins.autotune` calls `warm` on the first
call of a key that will be tuned by timing, before the tuner's first ``_bench``, so
benchmarking a config never waits on a cold compile (for FlagGems mm the recording
cell benchmarks 324 configs; compiled one by one, each on the critical path).

Mechanics (Triton 3.6): inside ``triton.runtime._async_compile.AsyncCompileMode`` a
``JITFunction.run(..., warmup=True)`` hands its compile to the executor and returns a
future; leaving the mode finalises every future into the JIT's in-memory cache, so the
tuner's later launch of that config finds it compiled. Each config is submitted with
the call's own arguments and keywords plus the config's, exactly as ``Autotuner._bench``
launches it, so the variant compiled is the one the benchmark asks for and nothing else:
the set of configs and the winner do not change, only when the compiles happen.

Coverage is never assumed: a config whose warm-up raised, or whose future ended without
a kernel, is *cold*; the benchmark compiles it inline as it always did, and the count
and the names go into autotune.json (``warmup``) and the ``AUTOTUNE_WARMUP_PARTIAL``
line of run.log. `worker.phases` counts `warm`'s wall time as tuning: it is the tuning's
own compiles brought forward.

Under policy *first-config* (the compile-only backend, and the screen's untimed IR pass)
nothing is benchmarked, but the cell's IR must still hold every config a tuner could pick:
`compile_every` compiles them all, the same way, before the first config is taken. Without
it a cell held the first config's code alone, and "did the switch change the code" was
answered for that one config: on the H200, FlagGems' mm, bmm and baddbmm have a first
config of 32x32x32 blocks that lowers to mma v2 with or without DISABLE_MMA_V3, so the IR
pass called them NO_IR_DIFF while the configs their tuner picks (wgmma) changed. There a
config that does not compile is absent from the IR evidence, named as here; where the
switch makes a config fail on one side only, the two sides' variant sets differ, which is
a change. `worker.phases` counts `compile_every`'s wall time as compile.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

PARTIAL_LINE = "AUTOTUNE_WARMUP_PARTIAL"
# Called with every warmed config's CompiledKernel, once the warm-up has finalised it. A config an
# earlier workload of the process compiled is found in the JIT's in-memory cache and fires no
# compile event: `campaign.plugins.ir_capture` registers here to take it into this cell's evidence.
WARMED_HOOKS: list = []


def config_name(config) -> str:
    """A config as a person reads it: its kwargs, then the compile options that are set."""
    parts = [f"{k}={v}" for k, v in sorted(config.kwargs.items())]
    parts += [f"{k}={getattr(config, k)}" for k in ("num_warps", "num_stages", "num_ctas", "maxnreg")
              if getattr(config, k, None) is not None]
    return ",".join(parts)


def compile_every(tuner, configs, args: tuple, kwargs: dict, workers: int) -> "Warmed":
    """`warm` for the IR evidence under first-config: every config compiled, none benchmarked."""
    return warm(tuner, configs, args, kwargs, workers)


@dataclass(frozen=True)
class Warmed:
    configs: int                                   # configs the tuner will benchmark for this key
    cold: tuple[tuple[str, str], ...]              # (config, why) of each that did not warm


def _submit(tuner, args: tuple, call_kwargs: dict, config):
    """One config's compile, handed to the active AsyncCompileMode; the handle or the error.

    The config's own ``pre_hook`` runs first, with the arguments ``Autotuner._bench`` gives it:
    it may set what the compile specialises on (FlagGems' Hopper mm sets its TMA descriptors'
    block shapes from the config's BLOCK sizes; without it every one of its 162 configs failed to
    compile in the warm-up on the H200 and was compiled inline). The specialisation is read when
    ``run`` is called, before the compile is handed off, so the next config's hook cannot change it."""
    fn = tuner.fn
    launch = {**call_kwargs, **config.all_kwargs(), "warmup": True}
    launch.setdefault("grid", None)                # a warm-up launches nothing: the grid is never read
    try:
        if config.pre_hook:
            config.pre_hook({**dict(zip(tuner.arg_names, args)), **call_kwargs, **config.all_kwargs()})
        return fn.run(*args, **launch), None
    except Exception as exc:                       # counted as cold below, never swallowed
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")


def _why_cold(handle) -> str | None:
    """None when the handle is a compiled kernel; else why the config is not warm."""
    if handle is None:
        return "no kernel: the JIT's cache hook declined the compile"
    future = getattr(handle, "future", None)
    if future is None:                             # already in the JIT's cache: compiled earlier
        return None
    if getattr(handle, "kernel", None) is not None:
        return None
    exc = future.exception() if future.done() else None
    if exc is None:
        return "the compile did not finish"
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}".rstrip(": ")


def warm(tuner, configs, args: tuple, kwargs: dict, workers: int) -> Warmed:
    """Compile every config of ``configs`` for this call on ``workers`` threads."""
    from triton.runtime._async_compile import AsyncCompileMode

    call_kwargs = {k: v for k, v in kwargs.items() if k != "warmup"}
    submitted: list[tuple[object, object, str | None]] = []
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="compile-warmup") as pool:
            # ignore_errors: a failed compile leaves its config cold, to be counted, not raised here
            with AsyncCompileMode(pool, ignore_errors=True):
                for config in configs:
                    submitted.append((config, *_submit(tuner, args, call_kwargs, config)))
    except RuntimeError as exc:                    # another AsyncCompileMode is active: nothing was warmed
        why = f"RuntimeError: {exc}"
        return Warmed(len(configs), tuple((config_name(c), why) for c in configs))
    cold = []
    for config, handle, error in submitted:
        why = error or _why_cold(handle)
        if why is not None:
            cold.append((config_name(config), why))
            continue
        kernel = handle.kernel if getattr(handle, "future", None) is not None else handle
        for hook in WARMED_HOOKS:
            hook(kernel)
    return Warmed(len(configs), tuple(cold))
