"""The device side of the timers; the policy and arithmetic are in `campaign.contract.timers`.

Not a plugin (no ``make``): `campaign.plugins.timing` calls it. Everything device
specific is reached through the backend -- its device interface (``Stream``,
``stream``, ``Event``, ``synchronize``, ``graph``, ``default_generators``) and its
graph class -- never through a hard-coded ``torch.cuda``, so a MUSA capture runs the
same code as a CUDA one. ``do_bench`` is Triton's, which resolves the device through
Triton's active driver.

Each timing leaves ``window``: the wall-clock span (``wall``, time.time()) of what it
measured, for telemetry samples to be joined to (`campaign.judging.throttle`). It starts after
the first call returns -- that call compiles and, in a recording cell, autotunes, with
the device mostly idle and its clock dropping -- and for a graph at the timed replays.

``watch`` (a `campaign.plugins.rowclock.RowClocks`, handed in by the timing plugin) is
opened just after that window's start is stamped and closed just before its end is, so
every clock read it takes lies inside the window; ``clock`` is what it read there (None:
no watch, or no clock source). A timing that raises leaves no sampling thread behind.

Each timing is handed the row's noise target (`campaign.contract.timers.NoiseTarget`; None: the
fixed counts): its samples are taken until the target or the cap, and ``noise`` says what was
reached (samples, relative spread, capped). The cap's clock (``monotonic``) starts where the
window does, so neither the first call's compile nor a graph's capture counts against it.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Optional, Protocol, Sequence

from campaign.contract import timers
from campaign.contract.cellfiles import RowClock


class CaptureFailure(Exception):
    """A graph capture or replay failed; ``phase`` says which, ``cause`` is what was raised."""

    def __init__(self, phase: str, cause: BaseException):
        super().__init__(f"graph {phase} failed: {cause}")
        self.phase = phase
        self.cause = cause


@contextmanager
def throwaway_rng(interface):
    """Run a capture against a scratch copy of the device's default RNG state.

    Capturing registers the default generator's state with the graph and marks it
    capturing; an aborted capture can leave it so, and every later ``torch.randn`` on
    the device then fails. Swapping in a cloned state (the graph-safe state API)
    confines that to the clone, which is dropped. Where the interface has no default
    generators there is no registration to protect.
    """
    generators = getattr(interface, "default_generators", None)
    if not generators:
        yield
        return
    generator = generators[interface.current_device()]
    if hasattr(generator, "graphsafe_set_state") and hasattr(generator, "clone_state"):
        original = generator.graphsafe_get_state()
        generator.graphsafe_set_state(generator.clone_state())
        try:
            yield
        finally:
            generator.graphsafe_set_state(original)
    else:                                   # an older runtime: at least keep the values
        state = generator.get_state()
        try:
            yield
        finally:
            generator.set_state(state)


class Watch(Protocol):
    """Reads the device's clock inside a window (`campaign.plugins.rowclock.RowClocks`)."""

    def open(self) -> None: ...
    def close(self) -> Optional[RowClock]: ...
    def discard(self) -> None: ...


def stamped(fn, wall: Callable[[], float], opened: Callable[[], None] = lambda: None):
    """``fn``, and a list that receives the wall time its first call returned; ``opened``
    runs once, just after that stamp.

    Costs one list test per call on the host path, which an event timing includes.
    """
    stamp: list[float] = []

    def call():
        result = fn()
        if not stamp:
            stamp.append(wall())
            opened()
        return result
    return call, stamp


def _triton_do_bench(fn, *, warmup, rep, return_mode):
    from triton.testing import do_bench

    return do_bench(fn, warmup=warmup, rep=rep, return_mode=return_mode)


class DeviceTimers:
    """``event``, ``direct`` and ``graph`` timings of one call, in milliseconds."""

    def __init__(self, do_bench: Callable = _triton_do_bench, wall: Callable[[], float] = time.time,
                 watch: Optional[Watch] = None, monotonic: Callable[[], float] = time.monotonic):
        self._do_bench = do_bench            # the clock; tests hand in a recorded one
        self._wall = wall
        self._monotonic = monotonic          # the noise target's time cap
        self.watch = watch
        self.window: Optional[tuple[float, float]] = None   # of the last timing that returned
        self.clock: Optional[RowClock] = None               # read inside that window
        self.noise: Optional[timers.Noise] = None           # what its sampling reached (noise target only)

    def _sampled(self, take: Callable[[], Sequence[float]], target: timers.NoiseTarget,
                 started: list[float]) -> list[float]:
        """``take()``'s samples until ``target`` is met or its cap is reached; ``started`` holds the
        cap clock's start once the window opened (empty: not yet, the first take compiles)."""
        values: list[float] = []
        while True:
            values.extend(float(v) for v in take())
            elapsed = self._monotonic() - started[0] if started else 0.0
            reached = timers.sampled_enough(values, target, elapsed)
            if reached is not None:
                self.noise = reached
                return values

    def _open(self) -> None:
        if self.watch is not None:
            self.watch.open()

    def _close(self, stamp: list[float]) -> None:
        self.clock = self.watch.close() if self.watch is not None and stamp else None
        self.window = (stamp[0], self._wall()) if stamp else None

    def _discard(self) -> None:
        if self.watch is not None:
            self.watch.discard()

    def _opened(self, started: list[float]) -> Callable[[], None]:
        def opened():
            started.append(self._monotonic())
            self._open()
        return opened

    def event(self, fn, *, warmup_ms: float, rep_ms: float, return_mode: str,
              noise: Optional[timers.NoiseTarget] = None) -> float:
        """One ``do_bench`` call reduced by ``return_mode``; under a noise target its per-iteration
        times (``return_mode="all"``) of as many calls as the target takes, reduced together."""
        started: list[float] = []
        call, stamp = stamped(fn, self._wall, self._opened(started))
        try:
            if noise is None:
                value = float(self._do_bench(call, warmup=warmup_ms, rep=rep_ms, return_mode=return_mode))
            else:
                value = timers.summarize(self._sampled(
                    lambda: self._do_bench(call, warmup=warmup_ms, rep=rep_ms, return_mode="all"), noise, started),
                    return_mode)
            self._close(stamp)
        finally:
            self._discard()
        return value

    def direct(self, fn, *, warmup_ms: float, rep_ms: float, return_mode: str, repeat: int,
               quantiles: Optional[Sequence[float]] = None, noise: Optional[timers.NoiseTarget] = None) -> float:
        """The median over ``repeat`` separate ``do_bench`` calls (under a noise target, as many
        as it takes): the layer that sees drift across calls (clocks ramping, another process
        arriving), which one call's inner median cannot."""
        timers.check_direct_request(return_mode, quantiles)
        if repeat < 1:
            raise timers.TimerRefused(f"repeat={repeat}: at least one call is needed")
        started: list[float] = []
        call, stamp = stamped(fn, self._wall, self._opened(started))     # one window over every repeat
        try:
            if noise is None:
                values = [self._do_bench(call, warmup=warmup_ms, rep=rep_ms, return_mode=return_mode)
                          for _ in range(repeat)]
            else:
                values = self._sampled(lambda: [self._do_bench(call, warmup=warmup_ms, rep=rep_ms,
                                                               return_mode=return_mode)], noise, started)
            self._close(stamp)
        finally:
            self._discard()
        return timers.median_of_repeats(values)

    def _replays(self, graph, events, interface, calls: int, noise: Optional[timers.NoiseTarget]) -> list[float]:
        """The per-call times of the timed replays: `timers.TIMED_REPLAYS` of them, or as many as
        the noise target takes."""
        start, end = events

        def replay() -> list[float]:
            start.record()
            graph.replay()
            end.record()
            interface.synchronize()
            return [start.elapsed_time(end) / calls]
        if noise is None:
            return [value for _ in range(timers.TIMED_REPLAYS) for value in replay()]
        return self._sampled(replay, noise, [self._monotonic()])

    def graph(self, fn, interface, graph_class, *, warmup_ms: float, rep_ms: float,
              return_mode: str, noise: Optional[timers.NoiseTarget] = None) -> float:
        """Per-call time of a replayed graph of back-to-back calls (no L2 flush).

        The first call compiles and autotunes, then calls run for ``warmup_ms`` before
        the capture, so neither JIT nor tuning nor a cold clock lands in the graph. An
        exception before the capture is the call's own failure and propagates as is;
        one during capture or replay becomes a `CaptureFailure` naming the phase.
        """
        with interface.stream(interface.Stream()):
            fn()
            interface.synchronize()
            start = interface.Event(enable_timing=True)
            end = interface.Event(enable_timing=True)
            start.record()
            for _ in range(timers.ESTIMATE_CALLS):
                fn()
            end.record()
            interface.synchronize()
            estimate_ms = start.elapsed_time(end) / timers.ESTIMATE_CALLS
            for _ in range(timers.calls_for(estimate_ms, warmup_ms)):
                fn()
            interface.synchronize()

            calls = timers.graph_calls(estimate_ms, rep_ms)
            graph = graph_class()
            try:
                with throwaway_rng(interface):
                    with interface.graph(graph):
                        for _ in range(calls):
                            fn()
            except Exception as exc:
                raise CaptureFailure("capture", exc) from exc
            try:
                graph.replay()                   # the first replay uploads the graph: not timed
                interface.synchronize()
                measured_from = [self._wall()]
                self._open()
                per_call = self._replays(graph, (start, end), interface, calls, noise)
                self._close(measured_from)
            except Exception as exc:
                raise CaptureFailure("replay", exc) from exc
            finally:
                self._discard()
                del graph
        return timers.summarize(per_call, return_mode)
