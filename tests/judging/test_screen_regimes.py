"""The screen's timing range: one regime at a time (graph deltas never share a min…max with
direct+fallback ones), and candidate against control when the baseline recorded autotune configs,
with the control's own A/A beside it."""
from __future__ import annotations

import tarfile
from pathlib import Path

import rootbuilder as rb
from conftest import PROJECT_ROOT, run_cli

from campaign.commands.screen import line
from campaign.judging import screening, screenrange, screentable
from campaign.judging.screening import Facts, Side
from campaign.judging.screenrange import NOT_COMPARABLE, Range
from campaign.judging.stats import Sample

KEYS = [("f", (n,), "float16", 0) for n in (1, 2, 3, 4)]
H200_SCREEN = PROJECT_ROOT / "receipts" / "h200-disable-mma-v3-small-screen-20261129T094550Z"


def _side(cell: str, fp: str, latencies: dict, tuned: bool = False, timed: bool = True) -> Side:
    samples = {KEYS[i]: Sample(ms, regime) for i, (ms, regime) in latencies.items()}
    return Side(cell=cell, rc=0, rc_name="ok", elapsed_s=1.0, rows=4, fingerprint=fp, ir_files=2, scoped=1,
                unscoped=1, tuning_variants=tuned, timed=timed, samples=samples)


def _facts(*sides: Side) -> Facts:
    return Facts(workload="w", op="w", backend="cuda", ir_stage="ttgir", dtypes=("float16",), dtypes_own=True,
                 sides={s.cell: s for s in sides}, caliber={"backend": "cuda"})


def _range(f: Facts) -> Range:
    return screenrange.shape_range(f, screening.verdict(f))


GRAPH = {0: (1.0, "graph"), 1: (2.0, "graph")}


def test_direct_fallback_deltas_stay_out_of_a_graph_range():
    # Shape 2 fell back to direct timing on both sides (+40 %: a different clock); shape 3 only on one.
    base = _side("baseline", "a", {**GRAPH, 2: (1.0, "direct+fallback"), 3: (1.0, "graph")})
    cand = _side("candidate", "b", {0: (1.01, "graph"), 1: (1.96, "graph"), 2: (1.4, "direct+fallback"),
                                    3: (1.3, "direct+fallback")})
    r = _range(_facts(base, cand))
    assert (r.span, r.vs, r.regime, r.left_out) == ("-2.00%…+1.00%", "baseline", "graph", 2)
    assert r.label == ("candidate/baseline-1 over 2 graph shapes, one measurement; "
                       "left out: 1 direct+fallback, 1 timed differently on the two sides")


def test_fallback_rows_give_a_range_only_when_nothing_else_was_timed():
    base = _side("baseline", "a", {0: (1.0, "direct+fallback"), 1: (2.0, "direct+fallback")})
    cand = _side("candidate", "a", {0: (1.1, "direct+fallback"), 1: (2.0, "direct+fallback")})
    r = _range(_facts(base, cand))
    assert (r.span, r.regime, r.left_out) == ("+0.00%…+10.00%", "direct+fallback", 0)
    assert r.label.startswith("noise floor of one measurement (IR unchanged), candidate/baseline-1 over 2 "
                              "direct+fallback shapes")
    untimed = _facts(base, _side("candidate", "a", {0: (1.1, "graph")}))
    assert _range(untimed) == Range(label="no range: no shape timed alike on both sides (1 timed differently)")


def test_a_recording_baseline_is_timed_through_the_control_with_its_aa_beside():
    # As on the H200: the recording baseline reads 11.4 % slow against replaying cells with identical code.
    base = _side("baseline", "every-config", {0: (1.0, "graph"), 1: (2.0, "graph")}, tuned=True)
    ctrl = _side("control", "winner", {0: (0.886, "graph"), 1: (1.772, "graph")})
    cand = _side("candidate", "winner", {0: (0.886 * 1.001, "graph"), 1: (1.772 * 0.999, "graph")})
    f = _facts(base, ctrl, cand)
    r = _range(f)
    assert (r.span, r.vs, r.regime) == ("-0.10%…+0.10%", "control", "graph")
    assert r.label == ("noise floor of one measurement (IR unchanged), candidate/control-1 over 2 graph shapes "
                       "(baseline tuned: both sides replay)")
    assert r.aa == "-11.40%…-11.40%"
    assert r.aa_label.startswith("control/baseline-1 (A/A) over 2 graph shapes: against the recording baseline")
    row = screentable.row(f)
    assert (row["range_vs"], row["aa_range"]) == ("control", "-11.40%…-11.40%")
    shown = line(row)
    assert shown.startswith("w: NO_IR_DIFF -0.10%…+0.10% (noise floor")
    assert "; A/A -11.40%…-11.40% (control/" in shown


def test_a_replaying_baseline_keeps_the_baseline_and_shows_the_aa():
    base = _side("baseline", "a", GRAPH)
    ctrl = _side("control", "a", {0: (1.002, "graph"), 1: (1.99, "graph")})
    cand = _side("candidate", "b", {0: (0.9, "graph"), 1: (1.8, "graph")})
    r = _range(_facts(base, ctrl, cand))
    assert (r.span, r.vs, r.aa, r.aa_label) == ("-10.00%…-10.00%", "baseline", "-0.50%…+0.20%",
                                                "control/baseline-1 (A/A) over 2 graph shapes")
    quiet = _range(_facts(base, _side("control", "a", GRAPH, timed=False), cand))
    assert quiet.span and quiet.aa == "" and quiet.aa_label == "no A/A: the control or the baseline ran untimed"


def test_a_tuned_baseline_without_a_timed_control_prints_no_range():
    base = _side("baseline", "every-config", GRAPH, tuned=True)
    cand = _side("candidate", "winner", {0: (0.9, "graph"), 1: (1.8, "graph")})
    alone = _range(_facts(base, cand))
    assert alone.span == "" and alone.label.startswith(NOT_COMPARABLE)
    assert NOT_COMPARABLE == "range vs recording baseline (not comparable: baseline tuned)"
    silent = _range(_facts(base, _side("control", "winner", GRAPH, timed=False), cand))
    assert silent.span == "" and NOT_COMPARABLE in silent.label


def _rescored(root: Path, *extra: str) -> tuple[dict[str, dict[str, str]], str]:
    done = run_cli("screen", "--rescore", root, *extra)
    assert done.returncode == 0, done.stderr
    table = Path(done.stdout.strip().splitlines()[-1])
    rows = screentable.parse(table.read_text(encoding="utf-8"))
    return {r["workload"]: r for r in rows}, done.stdout


def test_rescore_of_a_built_screen_root_keeps_regimes_apart_and_times_through_the_control(tmp_path):
    root = rb.screen_root(tmp_path, [rb.mm(effect=1.0, recording_bias=1.129),
                                     rb.pointwise(fallback_rows={"baseline": (0,), "candidate": (0,)})])
    table, stdout = _rescored(root)
    mm, add = table["matmul"], table["add"]
    assert (mm["range_vs"], mm["range_regime"], mm["range_left_out"]) == ("control", "graph", "0")
    low, high = (float(x.rstrip("%")) for x in mm["range"].split("…"))
    assert -0.5 < low <= high < 0.5                 # identical timing apart from noise, not the recording's +12.9 %
    aa_low, aa_high = (float(x.rstrip("%")) for x in mm["aa_range"].split("…"))
    assert -12.0 < aa_low <= aa_high < -11.0        # the recording cell's offset, shown and labelled
    assert "against the recording baseline" in mm["aa_label"]
    assert (add["range_vs"], add["range_regime"], add["range_left_out"]) == ("baseline", "graph", "1")
    assert add["range_label"].endswith("over 2 graph shapes; left out: 1 direct+fallback")
    assert "matmul: IR_CHANGED" in stdout and "(baseline tuned: both sides replay)" in stdout
    assert "; A/A " in stdout


def test_rescore_of_the_committed_h200_screen_times_mm_against_its_control(tmp_path):
    with tarfile.open(H200_SCREEN / "root.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    sealed = {r["workload"]: r for r in screentable.parse((H200_SCREEN / "screen.tsv").read_text(encoding="utf-8"))}
    assert sealed["mm"]["range"] == "+37.45%…+71.40%"            # candidate over the recording baseline
    # sealed under receipt schema 1, which every command reads only when asked, as verify does
    assert run_cli("screen", "--rescore", tmp_path / H200_SCREEN.name).returncode == 5
    table, stdout = _rescored(tmp_path / H200_SCREEN.name, "--allow-schema", "1")
    mm = table["mm"]
    assert (mm["range"], mm["range_vs"], mm["aa_range"]) == ("+36.90%…+73.83%", "control", "-1.40%…+0.40%")
    assert table["add"]["range_vs"] == "baseline" and table["add"]["range"] == sealed["add"]["range"]
    assert "mm: IR_CHANGED +36.90%…+73.83% (candidate/control-1 over 2 graph shapes" in stdout


def test_a_backtracking_strip_annotation_is_refused_like_a_manifest_pattern(cli, tmp_path):
    done = cli("screen", "--rescore", tmp_path / "absent", "--strip-annotation", "([^Z]|.)*\x01")
    assert done.returncode == 2, done.stderr
    assert "--strip-annotation: regex" in done.stderr and "backtracks" in done.stderr
