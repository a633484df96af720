"""The noise target inside a row (``timer.max_noise_pct``, ``min_samples``, ``timeout_s``): a row is
sampled until its relative spread reaches the target or the time cap, recorded per row, and a row
the cap stopped is marked in rows.json, run.log, the verdict's reason and the report.

Only clocks are scripted: the device's event times (graph), ``do_bench``'s values (event, direct)
and the monotonic clock the cap reads. The spread arithmetic is checked against the formula
written out here, not against the code's own helper.
"""
from __future__ import annotations

import math
import statistics

import pytest
import rootbuilder
import taskplan
from conftest import FIXTURES
from timingsession import NullStreams, context, session

from campaign.backends.cuda import CudaBackend
from campaign.contract import canonical, timers
from campaign.contract.artifacts import MATRIX_FILE
from campaign.contract.manifest import Manifest
from campaign.contract.plans import Matrix
from campaign.judging import caliber
from campaign.judging.classify import classify_root
from campaign.plugins._device_timers import DeviceTimers

pytest_plugins = ["pytester"]


def rse_pct(values) -> float:
    """The relative standard error of the mean, in percent, written out."""
    n = len(values)
    mean = sum(values) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return 100 * s / math.sqrt(n) / mean


class Clock:
    """The monotonic clock the cap reads; ``tick`` is what each sample costs."""

    def __init__(self, tick: float = 1.0):
        self.t, self.tick = 50.0, tick

    def __call__(self) -> float:
        return self.t


class ScriptedGraphDevice(NullStreams):
    """A graph-capable device whose timed replays report ``per_replay`` ms in turn (the estimate's
    events report 2 ms); each timed replay costs ``clock.tick`` seconds on the monotonic clock."""

    def __init__(self, per_replay, clock: Clock):
        self.script, self.clock, self.timed, self.estimated = iter(per_replay), clock, 0, False
        device = self

        class Event:
            def __init__(self, enable_timing):
                pass

            def record(self):
                pass

            def elapsed_time(self, other):
                if not device.estimated:
                    device.estimated = True
                    return 2.0
                device.timed += 1
                device.clock.t += device.clock.tick
                return next(device.script)

        class Graph:
            def replay(self):
                pass
        self.Event, self.graph_class = Event, Graph


def graph_timing(per_replay, target: timers.NoiseTarget, tick: float = 1.0):
    clock = Clock(tick)
    device = ScriptedGraphDevice(per_replay, clock)
    device_timers = DeviceTimers(wall=lambda: 1000.0, monotonic=clock)
    calls = timers.graph_calls(2.0 / timers.ESTIMATE_CALLS, 10)
    latency = device_timers.graph(lambda: None, device, device.graph_class, warmup_ms=1, rep_ms=10,
                                  return_mode="median", noise=target)
    return latency, device_timers.noise, device.timed, calls


def test_relative_spread_is_the_relative_standard_error_of_the_mean():
    values = [1.00, 1.02, 0.97, 1.01, 0.99]
    assert timers.relative_spread(values) == pytest.approx(rse_pct(values), rel=1e-12)
    assert timers.relative_spread([1.0]) is None, "one sample has no spread"
    assert timers.relative_spread([0.0, 0.0]) is None, "no relative spread around a zero mean"
    # nvbench's noise is s / mean; ours shrinks with sqrt(n)
    assert timers.relative_spread(values) == pytest.approx(100 * statistics.stdev(values) / statistics.mean(values)
                                                           / math.sqrt(5))


def test_a_quiet_graph_row_stops_at_min_samples_before_the_cap():
    target = timers.NoiseTarget(max_noise_pct=0.5, min_samples=10, timeout_s=15.0)
    per_replay = [2.0, 2.002] * 50
    latency, noise, replays, calls = graph_timing(per_replay, target)
    assert replays == 10 and noise == timers.Noise(10, pytest.approx(rse_pct(per_replay[:10])), False)
    assert noise.spread_pct <= 0.5
    assert latency == pytest.approx(statistics.median(per_replay[:10]) / calls)


def test_a_graph_row_noisy_at_first_samples_on_until_its_spread_reaches_the_target():
    target = timers.NoiseTarget(max_noise_pct=1.0, min_samples=4, timeout_s=100.0)
    per_replay = [2.0, 2.4, 1.8, 2.2] + [2.05] * 200
    expected = next(n for n in range(4, len(per_replay)) if rse_pct(per_replay[:n]) <= 1.0)
    assert expected > 4, "the script must need more than min_samples"
    _, noise, replays, _ = graph_timing(per_replay, target)
    assert (replays, noise.samples, noise.capped) == (expected, expected, False)
    assert noise.spread_pct == pytest.approx(rse_pct(per_replay[:expected]))


def test_a_graph_row_that_never_quietens_stops_at_the_time_cap_and_is_marked():
    target = timers.NoiseTarget(max_noise_pct=0.5, min_samples=10, timeout_s=30.0)
    per_replay = [1.0, 2.0, 4.0] * 100          # a relative spread far above 0.5 % for any n here
    _, noise, replays, _ = graph_timing(per_replay, target, tick=1.5)
    assert replays == 20, "30 s of 1.5 s replays: the 20th reaches the cap"
    assert noise.capped and noise.samples == 20
    assert noise.spread_pct == pytest.approx(rse_pct(per_replay[:20])) and noise.spread_pct > 0.5


def test_without_a_target_the_graph_timer_keeps_its_fixed_replays():
    clock = Clock()
    device = ScriptedGraphDevice([2.0] * 50, clock)
    device_timers = DeviceTimers(wall=lambda: 1000.0, monotonic=clock)
    device_timers.graph(lambda: None, device, device.graph_class, warmup_ms=1, rep_ms=10, return_mode="median")
    assert device.timed == timers.TIMED_REPLAYS and device_timers.noise is None


class ScriptedBench:
    """``do_bench``: calls ``fn`` (its first call stamps the window), costs ``tick`` seconds of the
    clock, and returns the next value of the script (``return_mode="all"``: the next list)."""

    def __init__(self, script, clock: Clock):
        self.script, self.clock, self.modes = iter(script), clock, []

    def __call__(self, fn, *, warmup, rep, return_mode):
        fn()
        self.clock.t += self.clock.tick
        self.modes.append(return_mode)
        return next(self.script)


def test_an_event_row_pools_do_bench_iterations_until_the_target():
    clock = Clock()
    script = [[1.0, 1.3, 0.8], [1.1, 0.9, 1.0], [1.0, 1.0, 1.0, 1.01, 0.99, 1.0]] + [[1.0] * 8] * 20
    bench = ScriptedBench(script, clock)
    target = timers.NoiseTarget(max_noise_pct=2.0, min_samples=5, timeout_s=60.0)
    latency = DeviceTimers(do_bench=bench, wall=lambda: 1.0, monotonic=clock).event(
        lambda: None, warmup_ms=1, rep_ms=1, return_mode="mean", noise=target)
    pooled = [v for values in script for v in values]
    calls = next(k for k in range(1, len(script)) if rse_pct(pooled[:sum(map(len, script[:k]))]) <= 2.0
                 and sum(map(len, script[:k])) >= 5)
    taken = pooled[:sum(map(len, script[:calls]))]
    assert bench.modes == ["all"] * calls, "per-iteration times are what is pooled"
    assert latency == pytest.approx(statistics.mean(taken)), "the return mode reduces every sample taken"


def test_a_direct_row_under_a_target_takes_do_bench_calls_until_the_cap():
    clock = Clock(tick=4.0)
    bench = ScriptedBench([0.5, 0.9] * 50, clock)
    device_timers = DeviceTimers(do_bench=bench, wall=lambda: 1.0, monotonic=clock)
    target = timers.NoiseTarget(max_noise_pct=0.1, min_samples=3, timeout_s=20.0)
    compiled = []

    def call():
        if not compiled:                 # the first call compiles for 100 s: never charged to the cap
            compiled.append(True)
            clock.t += 100.0
    latency = device_timers.direct(call, warmup_ms=1, rep_ms=1, return_mode="median", repeat=1, noise=target)
    # the cap's clock starts when the first call returned: five 4 s calls reach the 20 s cap
    assert device_timers.noise.samples == 5 and device_timers.noise.capped
    assert latency == statistics.median([0.5, 0.9, 0.5, 0.9, 0.5])


NOISY_3X5X7 = """
import torch

def test_bench_add(bench):
    for case in bench.cases():
        x = torch.ones(case.shape, dtype=case.dtype, device="cpu")
        bench.measure(case, lambda: x + x)
"""


def test_a_session_records_each_rows_sampling_and_logs_the_capped_rows(pytester, tmp_path):
    """Rows whose shape is 3x5x7 never quieten (the scripted clock says so); the others do."""
    clock = Clock()

    def do_bench(fn, *, warmup, rep, return_mode):
        out = fn()
        clock.t += 1.0
        return [1.0, 1.5, 0.5] if out.shape == (3, 5, 7) else [1.0, 1.0001, 0.9999]
    ctx = context(tmp_path, CudaBackend(), timer={"kind": "event", "max_noise_pct": 0.5, "min_samples": 3,
                                                 "timeout_s": 5.0})
    result, rows, log = session(pytester, ctx, NOISY_3X5X7, DeviceTimers(do_bench=do_bench, monotonic=clock))
    assert result.ret == 0, result.outlines[-20:]
    by_shape = {(r.shape, r.dtype): r for r in rows}
    assert len(rows) == 6 and all(r.status == "ok" for r in rows)
    for (shape, dtype), row in by_shape.items():
        if shape == (3, 5, 7):
            assert (row.samples, row.noise_capped) == (15, True), "five calls of three fill the 5 s cap"
            assert row.noise_pct == pytest.approx(rse_pct([1.0, 1.5, 0.5] * 5))
        else:
            assert (row.samples, row.noise_capped) == (3, False)
            assert row.noise_pct <= 0.5
    assert log.count("NOISE CAPPED: relative spread") == 2
    assert "noise target: 4 of 6 rows reached it, 2 capped" in log
    assert "max_noise_pct=0.5 min_samples=3 timeout_s=5" in log


def _manifest_file(tmp_path, timer: str):
    text = (FIXTURES / "manifests" / "valid" / "minimal.yaml").read_text().replace("timer: {kind: event}", timer)
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("timer, where, says", [
    ("timer: {kind: event, min_samples: 5}", "timer -> min_samples", "add max_noise_pct"),
    ("timer: {kind: event, timeout_s: 5}", "timer -> timeout_s", "add max_noise_pct"),
    ("timer: {kind: event, max_noise_pct: 0}", "timer -> max_noise_pct", "greater than 0"),
    ("timer: {kind: event, max_noise_pct: 0.5, min_samples: 1}", "timer -> min_samples", "greater than or equal to 2"),
    ("timer: {kind: direct, direct_repeat: 5, max_noise_pct: 0.5}", "timer -> direct_repeat", "remove direct_repeat"),
])
def test_a_bad_noise_target_is_refused_naming_its_key(tmp_path, cli, timer, where, says):
    done = cli("validate", _manifest_file(tmp_path, timer))
    assert done.returncode == 2, done.stdout
    assert where in done.stderr and says in done.stderr, done.stderr


def test_max_noise_pct_alone_takes_nvbenchs_defaults_into_the_frozen_matrix(tmp_path, cli):
    done = cli("validate", _manifest_file(tmp_path, "timer: {kind: event, max_noise_pct: 0.5}"))
    assert done.returncode == 0, done.stderr
    timer = Manifest.model_validate({**taskplan.manifest_data(),
                                     "timer": {"kind": "event", "max_noise_pct": 0.5}}).timer
    assert (timer.max_noise_pct, timer.min_samples, timer.timeout_s) == (0.5, 10, 15.0)
    assert {"min_samples", "timeout_s"} <= timer.model_fields_set, "written into matrix.json, not implied"


def noisy_root(tmp_path):
    w = rootbuilder.mm(noise_capped={"candidate": (0,)})
    return rootbuilder.build(tmp_path, [w], rootbuilder.Options(max_noise_pct=0.5))


def test_a_capped_row_reaches_the_verdicts_reason_and_the_report(tmp_path, cli):
    root = noisy_root(tmp_path)
    verdict = classify_root(root)["workloads"]["matmul"]
    assert "NOISE CAPPED: 4 timed row(s) stopped at the 15 s cap above the 0.5% noise target (candidate 4 of " \
           in verdict["reason"]
    assert verdict["noise"]["candidate"]["capped"] == 4 and verdict["noise"]["baseline"]["capped"] == 0
    assert verdict["noise"]["candidate"]["capped_rows"][0].endswith(" r1")
    report = cli("report", root)
    assert report.returncode == 0, report.stderr
    assert "NOISE CAPPED: 4 timed row(s)" in report.stdout
    assert "- noise target (rows sampled until their relative spread reached it, or the time cap), per side: " \
           "baseline 16 of 16 row(s) reached it" in report.stdout
    assert "candidate 12 of 16 row(s) reached it, 4 NOISE CAPPED (" in report.stdout


def test_the_noise_target_is_caliber_and_rows_on_target_say_nothing_of_a_cap(tmp_path):
    root = rootbuilder.build(tmp_path, [rootbuilder.mm()], rootbuilder.Options(max_noise_pct=0.5))
    verdict = classify_root(root)["workloads"]["matmul"]
    assert "NOISE CAPPED" not in verdict["reason"]
    assert verdict["noise"]["candidate"] == {"sampled": 16, "capped": 0, "capped_rows": []}
    tasks = Matrix.model_validate(canonical.read_json(root / MATRIX_FILE)).tasks
    identities = caliber.load_identities(root, tasks)
    other = next(t.id for t in tasks if t.cell == "candidate" and t.round == 2)
    identities[other] = {**identities[other], "timer": {**identities[other]["timer"], "max_noise_pct": 2.0}}
    check = caliber.compare(tasks, identities)
    assert any(f.field == "timer.max_noise_pct" and (f.a, f.b) == ("0.5", "2.0") for f in check.findings)
    # a root sealed before the noise target existed has none of the keys: its table leaves them out
    old = {t: {**i, "timer": {k: v for k, v in i["timer"].items() if k in caliber.TIMER_FIELDS[:6]}}
           for t, i in caliber.load_identities(root, tasks).items()}
    assert "timer.max_noise_pct" not in caliber.compare(tasks, old).table
    assert caliber.compare(tasks, caliber.load_identities(root, tasks)).table["timer.max_noise_pct"] == "0.5"

