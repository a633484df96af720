"""Telemetry parsing on recorded outputs, device selection, summaries, and a sampler that
cannot start (the campaign goes on, the reason is on disk)."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, PROJECT_ROOT

from campaign.commands import add_execution_arguments
from campaign.contract import canonical, telemetryfile, yamlio
from campaign.contract.artifacts import ROWS_FILE
from campaign.contract.manifest import Manifest
from campaign.contract.runroot import RunRoot
from campaign.contract.telemetryfile import Sample
from campaign.running import telemetry
from campaign.running.telemetry import Sampler

GMI = FIXTURES / "telemetry" / "mthreads-gmi-q-json.json"


def test_mthreads_gmi_json_units_stripped_and_power_key_with_trailing_space():
    text = GMI.read_text()
    assert '"Power Draw "' in text  # the recorded key really carries the space
    first, second = telemetry.parse_gmi_json(text, t=100.0)
    assert first == Sample(t=100.0, device="0", sm_clock_mhz=1888.0, mem_clock_mhz=2600.0, temp_c=36.0,
                           power_w=477.68, util_pct=87.0)
    assert (second.device, second.sm_clock_mhz, second.mem_clock_mhz, second.temp_c, second.power_w) == \
        ("1", None, None, 27.0, 96.66)
    with pytest.raises(ValueError):
        telemetry.parse_gmi_json('{"Driver Version": "3.3.5"}', t=0)


def test_device_selection_from_the_visibility_variable():
    assert telemetry.visible_devices(None) is None
    assert telemetry.visible_devices("1") == ["1"]
    assert telemetry.visible_devices(" 0, 2 ") == ["0", "2"]
    assert telemetry.visible_devices("") == []
    assert telemetry.gmi_argv(None) == ["mthreads-gmi", "-q", "--json"]
    assert telemetry.gmi_argv(["3"]) == ["mthreads-gmi", "-q", "--json", "-i", "3"]
    # several visible: every device, and never a bare trailing -i
    assert telemetry.gmi_argv(["0", "2"]) == ["mthreads-gmi", "-q", "--json"]
    with pytest.raises(RuntimeError, match="names no device"):
        telemetry.make_source("nvml", [])


def test_nvml_readings_and_throttle_reasons():
    raw = {"index": 3, "sm_clock_mhz": 1980, "mem_clock_mhz": 3201, "temp_c": 58, "power_mw": 412345,
           "util_pct": 100, "throttle_mask": 0x4 | 0x40}
    sample = telemetry.nvml_sample(raw, t=5.0)
    assert sample == Sample(t=5.0, device="3", sm_clock_mhz=1980.0, mem_clock_mhz=3201.0, temp_c=58.0,
                            power_w=412.345, util_pct=100.0, throttle_reasons="sw_power_cap|hw_thermal_slowdown")
    assert telemetry.throttle_names(0) == "none"
    assert telemetry.throttle_names(0x1 | 0x10000) == "gpu_idle|0x10000"
    assert telemetry.throttle_names(None) == ""
    partial = telemetry.nvml_sample({"index": 0, "sm_clock_mhz": None, "power_mw": None}, t=1.0)
    assert partial.sm_clock_mhz is None and partial.power_w is None


def test_a_cards_samples_are_named_with_its_uuid_the_name_its_status_rows_carry():
    class Source:
        def read(self, t):
            return [Sample(t, "3", 1980.0, throttle_reasons="none")]
    read = telemetry.CardSource(Source(), "GPU-6b2d0453").read(12.5)
    assert [(s.t, s.device, s.sm_clock_mhz) for s in read] == [(12.5, "GPU-6b2d0453", 1980.0)]


def test_summary_is_one_device_min_median_max():
    samples = [Sample(1, "0", 1900, temp_c=50), Sample(1, "1", 300, temp_c=90), Sample(2, "0", 1500, temp_c=61),
               Sample(3, "0", 1800, temp_c=55)]
    summary = telemetryfile.summarize(samples)
    assert (summary.sm_clock_min_mhz, summary.sm_clock_median_mhz, summary.temp_max_c) == (1500, 1800, 61)
    assert telemetryfile.summarize([]) == telemetryfile.Summary(None, None, None)


def test_sampler_records_a_window_from_recorded_output(tmp_path: Path):
    ticks = iter([10.0, 20.0, 30.0])

    def recorded(argv, **_):
        return subprocess.CompletedProcess(argv, 0, stdout=GMI.read_text(), stderr="")

    sampler = Sampler(RunRoot(tmp_path), lambda: telemetry.GmiSource(["0"], run=recorded), interval_s=3600,
                      clock=lambda: next(ticks))
    assert sampler.start()
    sampler.mark()
    sampler.mark()
    sampler.stop()
    lines = (tmp_path / "telemetry.tsv").read_text().splitlines()
    assert lines[0].split("\t") == list(telemetryfile.COLUMNS)
    assert lines[1].split("\t")[1:] == ["10.000", "0", "1888", "2600", "36", "477.68", "87", ""]
    assert len(lines) == 5  # two marks x two devices
    cell = _cell_with_windows(tmp_path / "cell", [(15.0, 25.0)])
    assert sampler.window(5.0, 35.0, cell) == telemetryfile.Summary(1888.0, 1888.0, 36.0)
    assert sampler.window(0.0, 5.0, cell) == telemetryfile.Summary(None, None, None)
    assert not (tmp_path / "telemetry.err").exists()


def test_a_missing_sampler_writes_its_reason_and_nothing_else(tmp_path: Path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # as on a host without nvidia-ml-py
    sampler = Sampler(RunRoot(tmp_path), lambda: telemetry.make_source("nvml", None))
    assert not sampler.start()
    sampler.mark()
    sampler.stop()
    err = (tmp_path / "telemetry.err").read_text()
    assert "no telemetry: RuntimeError: pynvml is not installed" in err
    assert not (tmp_path / "telemetry.tsv").exists()

    def absent(argv, **_):
        raise FileNotFoundError(argv[0])

    gmi = Sampler(RunRoot(tmp_path), lambda: telemetry.GmiSource(None, run=absent))
    assert not gmi.start()
    assert "mthreads-gmi not found on PATH" in (tmp_path / "telemetry.err").read_text()


def test_sampler_errors_after_start_are_noted_once(tmp_path: Path):
    calls = {"n": 0}

    def flaky(argv, **_):
        calls["n"] += 1
        if calls["n"] == 1:
            return subprocess.CompletedProcess(argv, 0, stdout=GMI.read_text(), stderr="")
        return subprocess.CompletedProcess(argv, 9, stdout="", stderr="device lost")

    sampler = Sampler(RunRoot(tmp_path), lambda: telemetry.GmiSource(None, run=flaky), interval_s=3600)
    assert sampler.start()
    sampler.mark()
    sampler.mark()
    sampler.stop()
    err = (tmp_path / "telemetry.err").read_text().splitlines()
    assert len(err) == 1 and err[0].endswith("sample failed: RuntimeError: mthreads-gmi -q --json exited 9: device lost")
    assert json.loads(GMI.read_text())["GPU"][0]["Index"] == "0"


def _cell_with_windows(cell: Path, windows, status="ok") -> Path:
    cell.mkdir(parents=True, exist_ok=True)
    rows = [{"test": "b.py::test_bench_add", "function": "test_bench_add", "op": "add", "shape": [k],
             "dtype": "float16", "timer": "graph", "status": status, "latency_ms": 0.01 if status == "ok" else None,
             "window_start_unix": lo, "window_end_unix": hi} for k, (lo, hi) in enumerate(windows)]
    canonical.write_json_new(cell / ROWS_FILE, {"schema_version": 1, "rows": rows})
    return cell


class Series:
    """A device read at recorded moments: the idle clock at the cell's start and end, boost in between."""

    def __init__(self, readings):
        self.readings = dict(readings)

    def read(self, t):
        sm, temp, reasons = self.readings[t]
        return [Sample(t, "0", sm, 3201.0, temp, None, None, reasons)]


def test_a_cells_clocks_are_read_inside_its_timing_windows_not_at_its_idle_start(tmp_path: Path):
    readings = {10.0: (345.0, 37.0, "gpu_idle"), 11.0: (1980.0, 50.0, "none"), 12.0: (1605.0, 55.0, "sw_power_cap"),
                13.0: (1965.0, 56.0, "none"), 14.0: (345.0, 41.0, "gpu_idle")}
    ticks = iter(readings)
    sampler = Sampler(RunRoot(tmp_path), lambda: Series(readings), interval_s=3600, clock=lambda: next(ticks))
    assert sampler.start()
    for _ in readings:
        sampler.mark()
    sampler.stop()
    cell = _cell_with_windows(tmp_path / "cell", [(10.5, 11.5), (11.9, 13.1)])
    assert sampler.window(10.0, 14.0, cell) == telemetryfile.Summary(1605.0, 1965.0, 56.0)
    _cell_with_windows(tmp_path / "failed", [(9.0, 15.0)], status="failed")
    assert sampler.window(10.0, 14.0, tmp_path / "failed") == telemetryfile.Summary(None, None, 56.0), \
        "no timed row: the clock is not known, never the idle one"
    assert sampler.window(10.0, 14.0, tmp_path / "absent") == telemetryfile.Summary(None, None, 56.0)
    assert sampler.window(11.5, 14.0, cell) == telemetryfile.Summary(1605.0, 1785.0, 56.0), "only this cell's samples"


def test_the_default_interval_puts_a_sample_in_the_shortest_committed_timing_window():
    """An event row's window spans at least warmup_ms + rep_ms; the sampler must fire inside it."""
    shortest = min((m.timer.warmup_ms + m.timer.rep_ms) / 1000.0
                   for m in (yamlio.validate(Manifest, p) for p in sorted((PROJECT_ROOT / "manifests").glob("h200-*.yaml"))))
    parser = argparse.ArgumentParser()
    add_execution_arguments(parser)
    assert telemetry.INTERVAL_S < shortest and parser.parse_args([]).telemetry_interval == telemetry.INTERVAL_S


def test_a_compile_only_backend_says_there_is_nothing_to_sample_not_an_exception_name(tmp_path: Path):
    from campaign.backends import get_backend
    cpu = get_backend("cpu").capabilities
    sampler = Sampler(RunRoot(tmp_path), lambda: telemetry.make_source(cpu.telemetry, None, not cpu.executes))
    assert not sampler.start()
    assert sampler.reason == "no telemetry on this backend (compile-only): nothing executes, nothing is sampled"
    assert "Error" not in (tmp_path / "telemetry.err").read_text(encoding="utf-8")
    assert not (tmp_path / "telemetry.tsv").exists()
