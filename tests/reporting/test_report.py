"""The report: byte-exact golden markdown, JSON equal to the verdicts, ranges only where they mean something.

The golden file is regenerated only deliberately:
``CAMPAIGN_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/reporting/test_report.py -k golden``.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import rootbuilder as rb

from campaign.contract.errors import CampaignError
from campaign.judging.classify import classify_root
from campaign.reporting import report

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "report.md"


def campaign_root(tmp_path):
    aten = rb.pointwise("fft", "fft")
    aten.kernels = {"baseline": ()}
    topk = rb.mm("topk", effect=lambda r, i: 1.012 if (r + i) % 2 else 0.988, noise=0.0005)
    return rb.build(tmp_path, [rb.mm(), rb.pointwise(), rb.mm("mm_clean", effect=1.0), rb.mm("slow", effect=1.06),
                               topk, aten, rb.rng_inputs()],
                    rb.Options(floor=0, replay_fallbacks={"slow/r2/control": 1}))


def test_golden_markdown_is_byte_exact(tmp_path):
    text = report.markdown(classify_root(campaign_root(tmp_path)))
    if os.environ.get("CAMPAIGN_REGEN_GOLDEN") == "1":
        GOLDEN.write_text(text, encoding="utf-8", newline="\n")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_markdown_content(tmp_path):
    text = report.markdown(classify_root(campaign_root(tmp_path)))
    assert "| G | C | B | R | F | X |\n| --- | --- | --- | --- | --- | --- |\n| 1 | 3 | 1 | 0 | 0 | 2 |" in text
    assert "| add | B | NO_IR_DIFF | 0 → 0 | 0 → 0 | " in text and "(noise floor)" in text
    # nothing reached Triton: no range at all
    fft_row = next(line for line in text.splitlines() if line.startswith("| fft |"))
    assert fft_row == "| fft | X | NO_TRITON | 0 → 0 | 0 → 0 | — | — | — | — | none |"
    assert "- timing: no range printed (NO_TRITON)" in text
    assert "## What this campaign does not prove" in text and "`unchanged-off`" in text
    assert "AUTOTUNE_REPLAY_FALLBACK 1" in text


def test_cli_report_on_an_unsealed_complete_root(tmp_path, cli):
    root = campaign_root(tmp_path)
    md = cli("report", root)
    assert md.returncode == 0, md.stderr
    from campaign.flows.report import NOT_SEALED
    assert md.stdout == NOT_SEALED + report.markdown(classify_root(root))
    assert "is not sealed" in md.stderr
    js = cli("report", root, "--format", "json")
    assert js.returncode == 0, js.stderr
    assert json.loads(js.stdout) == classify_root(root)


def test_cli_report_refuses_a_folder_that_is_not_a_root(tmp_path, cli):
    done = cli("report", tmp_path)
    assert done.returncode == 2
    assert "no manifest.yaml: not a run root" in done.stderr


def test_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)       # as on a machine without the extra
    verdicts = classify_root(rb.build(tmp_path, [rb.mm()]))
    with pytest.raises(CampaignError) as raised:
        report.forest_plot(verdicts, tmp_path / "forest.png")
    assert raised.value.exit_code == 1
    assert "pip install 'campaign[plot]'" in raised.value.lines[0]
    assert not (tmp_path / "forest.png").exists()


def test_forest_plot_draws_every_timed_workload(tmp_path, cli):
    root = rb.build(tmp_path, [rb.mm(), rb.pointwise()])
    points = report.forest_points(classify_root(root))
    assert [(p["workload"], p["class"], p["noise_floor"]) for p in points] == [("matmul", "G", False), ("add", "B", True)]
    matmul = points[0]
    assert matmul["low"] <= matmul["point"] <= matmul["high"] and matmul["floor"] is not None
    done = cli("report", root, "--plot", tmp_path / "forest.png")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "forest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_forest_plot_says_why_when_nothing_was_timed(tmp_path):
    verdicts = classify_root(rb.build(tmp_path, [rb.mm()], rb.Options(backend="cpu", floor=0)))
    assert report.forest_points(verdicts) == []
    why = report.forest_plot(verdicts, tmp_path / "forest.png")
    assert why == (f"no plot written to {tmp_path / 'forest.png'}: no workload has timed rows to plot "
                   "(a compile-only backend times nothing)")
    assert not (tmp_path / "forest.png").exists()


def test_cpu_report_says_nothing_was_timed(tmp_path):
    text = report.markdown(classify_root(rb.build(tmp_path, [rb.mm()], rb.Options(backend="cpu", floor=0))))
    assert "| matmul | X | IR_CHANGED | 12 → 4 | 12 → 4 | — | — | — | — | none |" in text
    assert "This is a compile-only campaign: nothing was executed or timed" in text


def test_cli_report_on_a_sealed_root_matches_its_receipt(tmp_path, cli):
    from campaign.flows import session
    root = rb.build(tmp_path, [rb.mm(), rb.pointwise()])
    sealed = session.seal_root(root)
    done = cli("report", root, "--format", "json")
    assert done.returncode == 0 and done.stderr == ""
    assert json.loads(done.stdout) == sealed["verdicts"]
    assert sealed["verdicts"]["counts"] == {"G": 1, "C": 0, "B": 1, "R": 0, "F": 0, "X": 0}


def test_class_changes_name_each_workload_whose_verdict_moved(tmp_path):
    from campaign.contract.records import Verdicts
    from campaign.flows.report import class_changes
    sealed = Verdicts.read(classify_root(rb.build(tmp_path, [rb.mm(), rb.pointwise()])))
    mm = sealed.workloads["matmul"]
    moved = mm.model_copy(update={"klass": "F" if mm.klass != "F" else "R", "reason": "slower in both orders"})
    new = mm.model_copy(update={"klass": "X", "reason": "r"})
    derived = sealed.model_copy(update={"workloads": {**sealed.workloads, "matmul": moved, "new": new}})
    assert class_changes(sealed, derived) == [f"matmul: {mm.klass} -> {moved.klass} (slower in both orders)",
                                              "new: - -> X (r)"]
    assert class_changes(derived, sealed)[-1] == "new: X -> - (absent now)"
    assert class_changes(sealed, sealed) == []
