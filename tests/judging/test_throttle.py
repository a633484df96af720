"""Throttle judgement per timed row: samples joined to timing windows.

Series are synthetic (steady 1980 MHz, the H200's loaded boost clock, sampled every
0.1 s) or recorded (the committed H200 campaign's telemetry.tsv, with its 8
``sw_power_cap`` samples); the roots come from `rootbuilder`.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import PROJECT_ROOT
from rootbuilder import Options, build, pointwise

from campaign.contract import canonical, telemetryfile
from campaign.contract.artifacts import ROWS_FILE, TELEMETRY_FILE, cell_dir_name
from campaign.contract.cellfiles import Row
from campaign.contract.errors import InputError
from campaign.contract.telemetryfile import Sample
from campaign.judging import evidence, throttle

RECORDED = PROJECT_ROOT / "receipts" / "h200-disable-mma-v3-small-20261129T083532Z" / "telemetry.tsv"


def row(shape=(16,), start=None, end=None, status="ok", timer="graph", function="test_bench_add") -> Row:
    return Row(test=f"bench.py::{function}", function=function, op="add", shape=shape, dtype="float16", timer=timer,
               status=status, latency_ms=0.01 if status == "ok" else None, window_start_unix=start,
               window_end_unix=end)


def steady(start: float, end: float, clock=1980.0, reasons="none", step=0.1) -> list[Sample]:
    n = int(round((end - start) / step))
    return [Sample(round(start + k * step, 3), "0", clock, 3201.0, 55.0, 450.0, 99.0, reasons) for k in range(n + 1)]


def key(shape, occurrence=0):
    return ("test_bench_add", shape, "float16", occurrence)


# Three back-to-back rows of one cell, 1 s each, starting at t=100.
ROWS = (row((1,), 100.0, 101.0), row((2,), 101.2, 102.2), row((3,), 102.4, 103.4))


def with_sample(series: list[Sample], t: float, **changes) -> list[Sample]:
    """The series with the sample nearest ``t`` replaced."""
    nearest = min(range(len(series)), key=lambda i: abs(series[i].t - t))
    base = series[nearest]
    fields = dict(t=base.t, device=base.device, sm_clock_mhz=base.sm_clock_mhz, mem_clock_mhz=base.mem_clock_mhz,
                  temp_c=base.temp_c, power_w=base.power_w, util_pct=base.util_pct,
                  throttle_reasons=base.throttle_reasons)
    fields.update(changes)
    return series[:nearest] + [Sample(**fields)] + series[nearest + 1:]


def test_a_sw_power_cap_sample_flags_its_row_and_not_its_neighbours():
    series = with_sample(steady(99.0, 104.0), 101.7, throttle_reasons="sw_power_cap", sm_clock_mhz=1965.0)
    judged = throttle.judge(series, {"add/r1/candidate": ROWS})["add/r1/candidate"]
    states = {k: (v.state, v.reasons) for k, v in judged.rows.items()}
    assert states == {key((1,)): ("ok", ()), key((2,)): ("capped", ("sw_power_cap",)), key((3,)): ("ok", ())}
    assert judged.rows[key((2,))].samples == 11 and judged.count("capped") == 1
    assert judged.rows[key((2,))].sm_clock_mhz == 1980.0, "the window's median clock: what its cycles are taken at"


def test_a_low_clock_flags_below_the_stated_fraction_of_the_runs_median():
    # 1782 MHz is 0.90 x 1980: 1790 is above it, 1700 below; no reason named on either sample
    series = with_sample(steady(99.0, 104.0), 100.5, sm_clock_mhz=1790.0)
    series = with_sample(series, 102.9, sm_clock_mhz=1700.0)
    judged = throttle.judge(series, {"t": ROWS})["t"]
    assert judged.reference_mhz == {"0": 1980.0}
    assert [(v.state, v.reasons, v.sm_clock_min_mhz) for v in judged.rows.values()] == [
        ("ok", (), 1790.0), ("ok", (), 1980.0), ("capped", (throttle.CLOCK_LOW,), 1700.0)]


def test_benign_reasons_do_not_flag():
    for reason in ("gpu_idle", "applications_clocks_setting", "display_clock_setting",
                   "applications_clocks_setting|display_clock_setting"):
        series = with_sample(steady(99.0, 104.0), 101.7, throttle_reasons=reason)
        judged = throttle.judge(series, {"t": ROWS})["t"]
        assert judged.count("ok") == 3, reason
    for reason in ("sync_boost", "hw_slowdown", "sw_thermal_slowdown", "gpu_idle|hw_power_brake_slowdown", "0x10000",
                   "sw_power_cap|hw_thermal_slowdown"):
        series = with_sample(steady(99.0, 104.0), 101.7, throttle_reasons=reason)
        assert throttle.judge(series, {"t": ROWS})["t"].count("environmental") == 1, reason


def test_no_sample_inside_a_window_is_unsampled_never_fine():
    # samples only between the windows (the cell's start at the idle clock, and the gaps)
    series = [Sample(99.5, "0", 345.0, throttle_reasons="gpu_idle"),
              Sample(101.1, "0", 1980.0, throttle_reasons="none"), Sample(102.3, "0", 1980.0, throttle_reasons="none"),
              Sample(103.41, "0", 1500.0, throttle_reasons="sw_power_cap")]
    old = row((4,))                                   # written before windows were recorded
    blank = [Sample(104.5, "0")]                      # a sample that read neither clock nor reason
    judged = throttle.judge(series + blank, {"t": ROWS + (old, row((5,), 104.4, 104.6))})["t"]
    assert [v.state for v in judged.rows.values()] == ["unsampled"] * 5
    assert judged.count("unsampled") == 5 and judged.clocks_mhz == () and judged.reference_mhz == {}


def test_a_row_is_judged_by_its_own_cards_samples_not_another_cards_thermal_slowdown():
    # two cards timing at once, neither with the worker's own clock reads: card A's thermal slowdown is
    # A's rows' environmental throttle, never B's (before: both cards' rows X)
    a, b = "GPU-aaaa", "GPU-bbbb"
    hot = [Sample(s.t, a, 1400.0, throttle_reasons="hw_thermal_slowdown") for s in steady(99.0, 104.0)]
    cool = [Sample(s.t + 0.05, b, 1980.0, throttle_reasons="none") for s in steady(99.0, 104.0)]
    rows = {"add/r1/baseline": ROWS, "mm/r1/baseline": ROWS}
    judged = throttle.judge(hot + cool, rows, cards={"add/r1/baseline": a, "mm/r1/baseline": b})
    assert judged["add/r1/baseline"].count("environmental") == 3
    assert [v.state for v in judged["mm/r1/baseline"].rows.values()] == ["ok"] * 3
    assert judged["mm/r1/baseline"].clocks_mhz == (1980.0,) * 30 and judged["mm/r1/baseline"].reference_mhz[b] == 1980.0
    # a card the samples do not name (one card's rows name none; samples of an older root named by index):
    # every sampled device counts, as the harness cannot tell which one a cell ran on
    unnamed = throttle.judge(hot + cool, rows, cards={"add/r1/baseline": None, "mm/r1/baseline": "0"})
    assert all(t.count("environmental") == 3 for t in unnamed.values())


def test_only_timed_rows_are_judged_and_repeated_keys_count_like_stats():
    rows = (row((1,), 100.0, 101.0), row((1,), 101.2, 102.2), row((2,), status="failed"),
            row((3,), timer="none", status="compiled"))
    judged = throttle.judge(steady(99.0, 103.0), {"t": rows, "not-read": None})
    assert set(judged) == {"t"}, "a task whose rows were not read is not judged"
    assert list(judged["t"].rows) == [key((1,), 0), key((1,), 1)]


def test_the_reference_is_the_runs_in_window_median_per_device_not_the_idle_clock():
    # a run idles more than it times (cell starts, compiles, autotuning): those samples must not
    # pull the median down, or a row at 1700 MHz would pass against 0.9 x 345
    idle = [Sample(50.0 + k * 0.1, "0", 345.0, throttle_reasons="gpu_idle") for k in range(400)]
    loaded = with_sample(steady(99.0, 104.0), 102.9, sm_clock_mhz=1700.0)
    other = [Sample(s.t + 0.05, "1", 1410.0, throttle_reasons="none") for s in steady(99.0, 104.0)]
    judged = throttle.judge(idle + loaded + other, {"t": ROWS})["t"]
    assert judged.reference_mhz == {"0": 1980.0, "1": 1410.0}, "each device against its own median"
    assert [v.state for v in judged.rows.values()] == ["ok", "ok", "capped"]
    assert min(judged.clocks_mhz) == 1410.0 and 345.0 not in judged.clocks_mhz


def test_recorded_h200_series_flags_the_row_over_its_power_cap_sample():
    samples = telemetryfile.read_samples(RECORDED)
    capped = [s for s in samples if "sw_power_cap" in s.throttle_reasons]
    assert len(capped) == 8 and len(samples) == 343
    at_1605 = next(s for s in capped if s.sm_clock_mhz == 1605.0)
    loaded = sorted(s.t for s in samples if s.throttle_reasons == "none" and s.sm_clock_mhz == 1980.0)
    before = max(t for t in loaded if t < at_1605.t)
    after = min(t for t in loaded if t > at_1605.t)
    rows = (row((1,), before - 0.5, before + 0.5), row((2,), at_1605.t - 0.5, at_1605.t + 0.5),
            row((3,), after - 0.5, after + 0.5), row((4,), 1.0, 2.0))
    judged = throttle.judge(samples, {"mm/r1/candidate": rows})["mm/r1/candidate"]
    assert [(v.state, v.reasons) for v in judged.rows.values()] == [
        ("ok", ()), ("capped", ("sm_clock_low", "sw_power_cap")), ("ok", ()), ("unsampled", ())]
    assert judged.reference_mhz == {"0": 1980.0}


def test_summary_per_side_counts_rows_reasons_and_clocks():
    series = with_sample(steady(99.0, 110.0), 101.7, throttle_reasons="sw_power_cap", sm_clock_mhz=1605.0)
    candidate = ROWS
    baseline = (row((1,), 105.0, 106.0), row((2,), 106.2, 107.2), row((3,), 109.9, 120.0))
    judged = throttle.judge(series, {"w/r1/baseline": baseline, "w/r1/candidate": candidate, "w/r1/control": None})
    tasks = [evidence_like("baseline", judged["w/r1/baseline"]), evidence_like("candidate", judged["w/r1/candidate"]),
             evidence_like("control", None)]
    sides = throttle.summary(tasks)
    assert set(sides) == {"baseline", "candidate"}, "a side never judged is absent, not clean"
    assert (sides["candidate"].throttled_rows, sides["candidate"].unsampled_rows, sides["candidate"].rows) == (1, 0, 3)
    assert sides["candidate"].reasons == {"sm_clock_low": 1, "sw_power_cap": 1}
    assert (sides["candidate"].sm_clock_min_mhz, sides["candidate"].sm_clock_median_mhz) == (1605.0, 1980.0)
    assert (sides["baseline"].throttled_rows, sides["baseline"].unsampled_rows) == (0, 0)
    assert sides["baseline"].sm_clock_min_mhz == 1980.0 and sides["baseline"].reasons == {}


def evidence_like(cell, judged):
    return SimpleNamespace(task=SimpleNamespace(cell=cell), throttle=judged)


# -- telemetry.tsv read back, and the evidence a root carries ------------------------------

def test_read_samples_round_trips_and_names_a_bad_line(tmp_path: Path):
    path = tmp_path / TELEMETRY_FILE
    assert telemetryfile.read_samples(path) is None
    taken = [Sample(10.0, "0", 1980.0, 3201.0, 55.0, 450.5, 99.0, "sw_power_cap"), Sample(10.1, "0")]
    header = "\t".join(telemetryfile.COLUMNS) + "\n"
    path.write_text(header + "".join(map(telemetryfile.format_sample, taken)) + header + "2026\t11", encoding="utf-8")
    assert telemetryfile.read_samples(path) == taken, "a repeated header is skipped; a cut-short last line left out"
    path.write_text(header + "x\t10.0\t0\n" + telemetryfile.format_sample(taken[0]), encoding="utf-8")
    with pytest.raises(InputError, match=r"telemetry.tsv:2: not a telemetry sample: 3 fields for 9 columns"):
        telemetryfile.read_samples(path)


def write_telemetry(root: Path, samples: list[Sample]) -> None:
    text = "\t".join(telemetryfile.COLUMNS) + "\n" + "".join(map(telemetryfile.format_sample, samples))
    (root / TELEMETRY_FILE).write_text(text, encoding="utf-8")


def _root_with_windows(tmp_path: Path) -> Path:
    root = build(tmp_path, [pointwise()], Options(rounds=1))
    t = 1000.0
    for cell in ("baseline", "control", "candidate"):
        path = root / cell_dir_name(f"add/r1/{cell}") / ROWS_FILE
        data = json.loads(path.read_text())
        for r in data["rows"]:
            r.update(window_start_unix=t, window_end_unix=t + 1.0)
            t += 2.0
        path.unlink()
        canonical.write_json_new(path, data)
    return root


def test_the_roots_evidence_carries_each_tasks_judgement(tmp_path: Path):
    root = _root_with_windows(tmp_path)
    loaded = evidence.load_root(root)
    assert all(t.throttle is None for t in loaded.tasks.values()), "no telemetry.tsv: nothing judged"
    series = with_sample(steady(999.0, 1020.0), 1012.5, throttle_reasons="hw_slowdown")
    write_telemetry(root, series)
    tasks = evidence.load_root(root).tasks
    assert [tasks[f"add/r1/{c}"].throttle.count("environmental") for c in ("baseline", "control", "candidate")] == [0, 0, 1]
    sides = throttle.summary(tasks.values())
    assert sides["candidate"].reasons == {"hw_slowdown": 1} and sides["candidate"].sm_clock_median_mhz == 1980.0


def test_rows_without_windows_are_unsampled_when_telemetry_exists(tmp_path: Path):
    root = build(tmp_path, [pointwise()], Options(rounds=1))
    write_telemetry(root, steady(0.0, 1.0))
    sides = throttle.summary(evidence.load_root(root).tasks.values())
    assert {cell: (s.rows, s.unsampled_rows) for cell, s in sides.items()} == {
        "baseline": (3, 3), "control": (3, 3), "candidate": (3, 3)}
