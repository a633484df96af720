"""The timer policy, pure: deny keys, medians, the recorded capture-failure wording and what it decides."""
from __future__ import annotations

import pytest
from timingsession import CUDA_FAULT, CUDA_RNG, CUDA_SYNC, MUSA_POISON, MUSA_RNG, MUSA_SYNC

from campaign.backends.cuda import CudaBackend
from campaign.backends.musa import MusaBackend
from campaign.contract import timers
from campaign.plugins._device_timers import DeviceTimers


def test_deny_key_is_the_function_name_minus_test_():
    assert timers.deny_key("test_bench_dropout") == "bench_dropout"
    assert timers.deny_key("test_unique2") == "unique2"
    assert timers.deny_key("bench_x") == "bench_x"


def test_median_of_repeats():
    assert timers.median_of_repeats([5.0, 1.0, 3.0]) == 3.0
    assert timers.median_of_repeats([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert timers.median_of_repeats([0.25]) == 0.25
    with pytest.raises(timers.TimerRefused):
        timers.median_of_repeats([])
    with pytest.raises(timers.TimerRefused, match="not one number"):
        timers.median_of_repeats([1.0, [0.5, 1.0, 2.0]])


@pytest.mark.parametrize("return_mode, quantiles", [("all", None), ("median", (0.5, 0.2, 0.8))])
def test_direct_refuses_sequences(return_mode, quantiles):
    calls = []
    device = DeviceTimers(do_bench=lambda fn, **kw: calls.append(kw) or 1.0)
    with pytest.raises(timers.TimerRefused, match="median over repeated calls"):
        device.direct(lambda: None, warmup_ms=1, rep_ms=1, return_mode=return_mode, repeat=3, quantiles=quantiles)
    assert calls == [], "refused before anything was timed"


def test_direct_is_the_median_over_separate_do_bench_calls():
    recorded = iter([0.31, 0.12, 0.2, 0.9, 0.19])
    seen = []

    def clock(fn, **kwargs):
        fn()
        seen.append(kwargs)
        return next(recorded)

    ran = []
    value = DeviceTimers(do_bench=clock).direct(lambda: ran.append(1), warmup_ms=7, rep_ms=40,
                                                return_mode="median", repeat=5)
    assert value == 0.2
    assert len(ran) == 5 and seen == [dict(warmup=7, rep=40, return_mode="median")] * 5


def test_summarize_and_call_counts():
    assert timers.summarize([3.0, 1.0, 2.0], "median") == 2.0
    assert timers.summarize([3.0, 1.0, 2.0], "min") == 1.0
    assert timers.summarize([3.0, 1.0, 2.0], "mean") == 2.0
    with pytest.raises(timers.TimerRefused):
        timers.summarize([1.0], "all")
    assert timers.calls_for(0.5, 100) == 200
    assert timers.calls_for(500.0, 100) == 1
    assert timers.calls_for(0.0, 100) == timers.CALLS_IF_UNMEASURABLE
    assert timers.graph_calls(1e-6, 100) == timers.MAX_GRAPH_CALLS


@pytest.mark.parametrize("verdict, marker, retime, stop, status", [
    ("fallback", timers.FALLBACK_MARKER, True, False, "ok"),
    ("poisoned", timers.POISONED_MARKER, False, True, "failed"),
    ("fatal", None, False, False, "failed"),
])
def test_decide(verdict, marker, retime, stop, status):
    decision = timers.decide(verdict)
    assert (decision.marker, decision.retime_direct, decision.stop_measuring, decision.status) == (marker, retime, stop, status)


def test_decide_refuses_an_unknown_verdict():
    with pytest.raises(ValueError, match="not fallback, poisoned or fatal"):
        timers.decide("retry")


@pytest.mark.parametrize("backend, wording, verdict", [
    (CudaBackend(), CUDA_RNG, "fallback"),
    (CudaBackend(), CUDA_SYNC, "fallback"),
    (CudaBackend(), CUDA_FAULT, "fatal"),
    (MusaBackend(), MUSA_RNG, "fallback"),
    (MusaBackend(), MUSA_SYNC, "fallback"),
    (MusaBackend(), MUSA_POISON, "poisoned"),
])
def test_recorded_wording_decides_the_row(backend, wording, verdict):
    # error_text is what the plugin hands the classifier: the whole chain, so a
    # wording carried by the context of capture_end's own error still counts.
    try:
        try:
            raise RuntimeError(wording)
        except RuntimeError:
            raise RuntimeError("capture_end failed")
    except RuntimeError as exc:
        text = timers.error_text(exc)
    assert wording.strip().splitlines()[0] in text
    assert timers.decide(backend.classify_capture_failure(text)).verdict == verdict


def test_check_timer_and_latency():
    timers.check_timer("graph", executes=True, graph_capture=True)
    timers.check_timer("graph", executes=False, graph_capture=False)     # compile-only: nothing timed
    with pytest.raises(timers.TimerRefused, match="cannot capture"):
        timers.check_timer("graph", executes=True, graph_capture=False)
    assert timers.check_latency(0.0125) == 0.0125
    for bad in (0.0, -1.0, float("nan"), float("inf"), None, [0.1]):
        with pytest.raises(timers.TimerRefused):
            timers.check_latency(bad)


def test_direct_repeat_under_an_event_timer_is_refused_by_the_manifest():
    from pydantic import ValidationError

    from campaign.contract.manifest import Timer
    with pytest.raises(ValidationError, match="event rows are never direct-timed"):
        Timer(kind="event", direct_repeat=2)
