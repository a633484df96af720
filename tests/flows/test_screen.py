"""`campaign screen`: the demo's pinned pairs end to end, rescore, the emitted manifest, and the
verdict function on the traps (timeouts, nothing ran, nothing reached Triton, a recording
baseline that holds every autotune config's variants)."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, run_cli
from runroots import fault, manifest

from campaign.contract import canonical, status, yamlio
from campaign.contract.manifest import Manifest
from campaign.flows import freeze
from campaign.judging import caliber, screening, screenrange, screentable
from campaign.judging.screening import Facts, Side
from campaign.judging.stats import Sample

DEMO = PROJECT_ROOT / "manifests" / "demo-cpu.yaml"


def _table(root: Path) -> dict[str, dict[str, str]]:
    return {r["workload"]: r for r in screentable.parse((root / "screen.tsv").read_text(encoding="utf-8"))}


@pytest.fixture(scope="module")
def demo_screen(tmp_path_factory):
    base = tmp_path_factory.mktemp("screen")
    emitted = base / "emitted.yaml"
    start = time.monotonic()
    done = run_cli("screen", DEMO, "--runs-dir", base / "runs", "--scratch-dir", base, "--grace", "1",
                   "--emit-manifest", emitted)
    wall = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    table = Path(done.stdout.strip().splitlines()[-1])
    print(f"\ndemo screen wall time: {wall:.1f}s")
    return table.parent, done, emitted, wall


# -- the demo, as a real CLI subprocess -------------------------------------------------

def test_demo_screen_judges_each_pinned_pair(demo_screen):
    root, done, _, _ = demo_screen
    # A screen is the cheap step: asserted by what it ran (round 1 only where the IR changed, below),
    # never by its wall time, which a loaded machine doubles (200 s seen here against about 35 s idle).
    assert root.name.startswith("demo-cpu-screen-") and (root / "receipt.json").is_file()
    assert canonical.read_json(root / "prepare.json")["mode"] == "screen"
    assert (root / "manifest.yaml").read_bytes() == DEMO.read_bytes()
    matrix = canonical.read_json(root / "matrix.json")
    # The IR pass (round 0: baseline and candidate, untimed, each on its first config), then round 1.
    assert matrix["rounds"] == 1 and len(matrix["tasks"]) == 4 * 2 + 4 * 3 and "time_unchanged" not in matrix
    ir_pass = [t for t in matrix["tasks"] if t["round"] == 0]
    timed = [t for t in matrix["tasks"] if t["round"] == 1]
    assert {(t["cell"], t["timed"], t["autotune"]["mode"], t["autotune"]["policy"]) for t in ir_pass} == {
        ("baseline", False, "record", "first-config"), ("candidate", False, "record", "first-config")}
    assert not any("timed" in t for t in timed)
    assert max(t["order"] for t in ir_pass) < min(t["order"] for t in timed if not t["canary"])
    assert {t["autotune"]["mode"] for t in timed if t["cell"] == "baseline"} == {"record"}
    assert {t["autotune"]["mode"] for t in timed if t["cell"] != "baseline"} == {"replay"}

    table = _table(root)
    assert {name: r["verdict"] for name, r in table.items()} == {
        "add": "NO_IR_DIFF", "softmax": "NO_IR_DIFF", "row_sum": "NO_IR_DIFF", "matmul": "IR_CHANGED"}
    mm = table["matmul"]
    rows = status.latest(status.read(root / "status.tsv")[0])
    # cpu compiles only: round 1 would time nothing and compile again what round 0 compiled, so offline
    # it does not run where the IR changed either; the IR pass's pair is the verdict's evidence.
    for c in ("baseline", "control", "candidate"):
        assert rows[f"matmul/r1/{c}"].rc_name == "skipped"
        assert rows[f"matmul/r1/{c}"].note.startswith("IR_PASS_DECIDES: cpu compiles only: round 1 would time nothing")
    assert not (root / "cells" / "matmul" / "r1").exists()
    assert mm["fingerprint_baseline"] != mm["fingerprint_candidate"] != "" and mm["fingerprint_control"] == ""
    assert "baseline and candidate ttgir differ" in mm["note"]
    assert mm["note"].endswith(screening.compiles_only_note("cpu", "every"))
    assert (mm["range_label"], mm["weight_s"]) == ("not timed: cpu compiles only, no range", "")
    assert mm["elapsed_candidate"] == str(rows["matmul/r0/candidate"].elapsed_s)
    for name in ("add", "softmax", "row_sum"):
        r = table[name]
        assert {rows[f"{name}/r1/{c}"].rc_name for c in ("baseline", "control", "candidate")} == {"skipped"}
        assert rows[f"{name}/r1/control"].note.startswith("SWITCH_NO_IR_DIFF: ")
        assert rows[f"{name}/r1/control"].note.endswith("not timed: IR unchanged")
        assert not (root / "cells" / name / "r1").exists()
        # judged on the IR pass's pair: its fingerprints and seconds, no control, no range, no weight
        assert r["fingerprint_baseline"] == r["fingerprint_candidate"] and r["fingerprint_control"] == ""
        assert r["elapsed_baseline"] == str(rows[f"{name}/r0/baseline"].elapsed_s) and r["rc_control"] == ""
        assert (r["range"], r["range_label"], r["weight_s"]) == ("", screenrange.IR_PASS_RANGE, "")
        assert r["note"].endswith(screening.IR_PASS_NOTE)
        result = canonical.read_json(root / "cells" / name / "r0" / "candidate" / "result.json")
        assert result["timed"] is False and result["correctness"]["reason"] == "IR pass: untimed, correctness not run"
    for r in table.values():
        assert r["backend"] == "cpu" and r["device_target"] == "cuda:90" and r["autotune_policy"] == "first-config"
        assert r["dtypes"] and {r[f"rc_{c}"] for c in ("baseline", "candidate")} == {"0"}
    # The seal classifies the rounds that time (1 and up); the IR pass stands in only where none ran.
    verdicts = canonical.read_json(root / "receipt.json")["verdicts"]["workloads"]
    assert verdicts["add"]["screen"] == "NO_IR_DIFF" and verdicts["add"]["ir"]["from"] == {
        "baseline": "add/r0/baseline", "candidate": "add/r0/candidate"}
    assert "correctness not executed" in verdicts["add"]["reason"] and verdicts["add"]["ir"]["changed"] is False
    assert verdicts["matmul"]["ir"]["from"] == {"baseline": "matmul/r0/baseline", "candidate": "matmul/r0/candidate"}
    assert verdicts["matmul"]["ir"]["changed"] is True
    assert list(table["add"])[list(table["add"]).index("backend"):][:len(caliber.flatten({}))] == list(caliber.flatten({}))

    # Written before the seal: the receipt hashes the table, and the root verifies.
    assert "screen.tsv" in canonical.read_json(root / "receipt.json")["files"]
    verified = run_cli("verify", root)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "matmul: IR_CHANGED" in done.stdout and "add: NO_IR_DIFF (not timed: IR unchanged" in done.stdout
    report = run_cli("report", root)
    assert report.returncode == 0, report.stderr
    assert "from the IR pass (round 0: baseline, candidate" in report.stdout
    cost = run_cli("cost", root)
    assert cost.returncode == 0 and "| add/r0/baseline (IR pass) | ok |" in cost.stdout


def test_emitted_manifest_holds_the_changed_workloads(demo_screen, tmp_path: Path):
    root, _, emitted, _ = demo_screen
    assert run_cli("validate", emitted).returncode == 0
    loaded = yamlio.validate(Manifest, emitted)
    source = yamlio.validate(Manifest, DEMO)
    assert [w.name for w in loaded.workloads] == ["matmul"]
    # an offline IR pass's seconds are compile seconds, no campaign round's cost: no weight_s is written
    assert loaded.workloads[0].weight_s is None and _table(root)["matmul"]["weight_s"] == ""
    assert (loaded.sources, loaded.device, loaded.switch, loaded.timer, loaded.rounds) == \
        (source.sources, source.device, source.switch, source.timer, source.rounds)

    # Never overwritten, and refused before anything runs.
    before = emitted.read_bytes()
    again = run_cli("screen", DEMO, "--runs-dir", tmp_path / "runs", "--emit-manifest", emitted)
    assert again.returncode == 1 and "SCREEN_REFUSED check=emit_exists" in again.stderr
    assert emitted.read_bytes() == before and not (tmp_path / "runs").exists()


def test_an_offline_screens_emitted_manifest_pins_no_configs(demo_screen, tmp_path: Path):
    # A screen on a card pins its campaign to the configs its round 1 timed (defaults.autotune_from,
    # tests/planning/test_pinned_configs.py). cpu times nothing, so an offline screen has no winner to
    # hand on: its emitted campaign tunes afresh, and says nothing about replaying.
    root, _, emitted, _ = demo_screen
    text = emitted.read_text(encoding="utf-8")
    assert yamlio.validate(Manifest, emitted).defaults.autotune_from is None
    assert "autotune_from" not in text and "replays the configs" not in text
    done = run_cli("prepare", emitted, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    assert not (Path(done.stdout.strip().splitlines()[-1]) / "autotune_from").exists()


def test_rescore_writes_beside_the_sealed_root(demo_screen):
    root, _, _, _ = demo_screen
    original = (root / "screen.tsv").read_bytes()
    same = run_cli("screen", "--rescore", root)
    assert same.returncode == 0, same.stderr
    first = Path(same.stdout.strip().splitlines()[-1]).parent
    assert first.parent == root.parent and first.name.startswith(f"{root.name}.rescore-")
    # The same rule on the same evidence gives the same table, byte for byte.
    assert (first / "screen.tsv").read_bytes() == original == (first / "screen.original.tsv").read_bytes()
    assert canonical.read_json(first / "rescore.json")["changes"] == []

    # A rule that strips everything leaves only kernel names: matmul's pair becomes equal.
    erased = run_cli("screen", "--rescore", root, "--strip-annotation", "(?s).*")
    assert erased.returncode == 0, erased.stderr
    second = Path(erased.stdout.strip().splitlines()[-1]).parent
    assert second != first and (second / "screen.original.tsv").read_bytes() == original
    assert _table(second)["matmul"]["verdict"] == "NO_IR_DIFF"
    record = canonical.read_json(second / "rescore.json")
    assert record["rule"]["strip_annotations_added"] == ["(?s).*"]
    assert record["changes"] == [{"workload": "matmul", "before": "IR_CHANGED", "after": "NO_IR_DIFF"}]
    assert record["receipt_sha256"] == canonical.sha256_file(root / "receipt.json")
    assert record["rule"]["code"]["campaign/judging/screening.py"] == canonical.sha256_file(
        PROJECT_ROOT / "campaign" / "judging" / "screening.py")
    assert (root / "screen.tsv").read_bytes() == original and run_cli("verify", root).returncode == 0

    not_a_screen = run_cli("screen", "--rescore", first)
    assert not_a_screen.returncode == 2 and "check=screen_root" in not_a_screen.stderr
    bad_regex = run_cli("screen", "--rescore", root, "--strip-annotation", "(")
    assert bad_regex.returncode == 2 and "does not compile" in bad_regex.stderr


def test_a_timeout_and_an_empty_workload_end_to_end(tmp_path: Path):
    path = manifest(tmp_path, [fault("noop", "test_bench_noop"), fault("hang", "test_bench_hang", timeout_s=3)],
                    campaign="screen-faults")
    done = run_cli("screen", path, "--runs-dir", tmp_path / "runs", "--scratch-dir", tmp_path, "--grace", "1")
    assert done.returncode == 0, done.stderr
    root = Path(done.stdout.strip().splitlines()[-1]).parent
    table = _table(root)
    assert table["hang"]["verdict"] == "TIMEOUT" and table["hang"]["rc_candidate"] == "124"
    assert "a cost problem, not a verdict" in table["hang"]["note"] and table["hang"]["range"] == ""
    assert table["noop"]["verdict"] == "NO_ROWS" and "usually the dtype" in table["noop"]["note"]
    # Decided by the IR pass: no side had IR, so round 1 was skipped as not comparable, never as "equal";
    # offline the table's note says round 1 is not run there at all.
    latest = status.latest(status.read(root / "status.tsv")[0])
    for name in ("hang", "noop"):
        assert table[name]["note"].endswith(screening.compiles_only_note("cpu", "every"))
        assert latest[f"{name}/r1/baseline"].rc_name == "skipped"
        assert latest[f"{name}/r1/baseline"].note.startswith("NO_COMPARABLE_IR: the IR pass (round 0) baseline and ")
    assert latest["hang/r0/candidate"].rc == 124


def test_run_leaves_screen_roots_to_the_screen(tmp_path: Path):
    checked = freeze.check(DEMO)
    root = freeze.freeze(checked, tmp_path / "runs", mode="screen")
    assert root.name.startswith("demo-cpu-screen-")
    named = run_cli("run", root)
    assert named.returncode == 1 and "RUN_REFUSED check=mode" in named.stderr
    newest = run_cli("run", "--runs-dir", tmp_path / "runs")
    assert newest.returncode == 1 and "check=prepared" in newest.stderr


# -- the verdict function ---------------------------------------------------------------

def _side(cell: str, fp: str | None = "f0", **kw) -> Side:
    defaults = dict(rc=0, rc_name="ok", elapsed_s=2.0, rows=4, fingerprint=fp, ir_files=0 if fp is None else 2,
                    scoped=3, unscoped=5)
    return Side(cell=cell, **{**defaults, **kw})


def _facts(*sides: Side, backend: str = "cuda", findings: tuple[str, ...] = ()) -> Facts:
    return Facts(workload="mm", op="mm", backend=backend, ir_stage="ttgir", dtypes=("float16",), dtypes_own=True,
                 sides={s.cell: s for s in sides}, caliber={"backend": backend}, caliber_findings=findings)


def test_timeout_is_a_cost_not_a_verdict():
    f = _facts(_side("baseline"), _side("candidate", "f1", rc=124, rc_name="timed_out", rows=0, elapsed_s=600.0))
    v = screening.verdict(f)
    assert v.name == "TIMEOUT" and "candidate ended by its timeout (rc 124 timed_out, 600.0s)" in v.note
    assert screening.verdict(_facts(_side("baseline", rc=137, rc_name="killed", rows=None),
                                    _side("candidate", rows=0))).name == "TIMEOUT"
    assert screentable.row(f)["range"] == "" and screentable.row(f)["weight_s"] == "602.0"


def test_a_death_by_a_signal_from_outside_is_killed_never_a_timeout():
    """rc 137 is also what a process the host's out-of-memory killer ended exits with (a 2-core suite screen:
    soft_margin_loss's baseline, killed twice beside the other lane, read TIMEOUT "ended by its timeout" at
    66 s of a 2,400 s timeout). Only the runner's own kill at the timeout (killed, timed_out) is a timeout."""
    dead = _facts(_side("baseline", rc=137, rc_name="signal_SIGKILL", rows=None, elapsed_s=66.37), _side("candidate"))
    v = screening.verdict(dead)
    assert v.name == "KILLED" and "ended by its timeout" not in v.note
    assert v.note.startswith("baseline died by SIGKILL from outside the runner, not by its timeout (rc 137 signal_SIGKILL, 66.37s)")
    assert "out-of-memory killer" in v.note and "not a verdict about the switch" in v.note
    assert screentable.row(dead)["verdict"] == "KILLED" and screentable.row(dead)["range"] == ""
    # the runner's own kills stay timeouts; a timeout beside a death is said first, as a cost
    for rc, name in ((137, "killed"), (124, "timed_out")):
        late = _facts(_side("baseline", rc=rc, rc_name=name, rows=None), _side("candidate"))
        assert screening.verdict(late).name == "TIMEOUT"
    both = _facts(_side("baseline", rc=137, rc_name="killed", rows=None), _side("candidate", rc=137, rc_name="signal_SIGKILL"))
    assert screening.verdict(both).name == "TIMEOUT"


def test_no_rows_and_no_triton():
    empty = screening.verdict(_facts(_side("baseline", None, rows=0), _side("candidate", None, rows=None, rc=None,
                                                                            rc_name="not_started")))
    assert empty.name == "NO_ROWS" and "usually the dtype (float16: the op's own set)" in empty.note
    aten = _facts(_side("baseline", None), _side("candidate", None), _side("control", None))
    v = screening.verdict(aten)
    assert v.name == "NO_TRITON" and "aten or a vendor library" in v.note and "own TRITON_CACHE_DIR" in v.note
    assert screenrange.shape_range(aten, v) == screenrange.Range()


def test_a_recording_baseline_is_compared_through_the_control():
    # The recording baseline compiled every config it benchmarked: its set differs from any replay's.
    base = _side("baseline", "every-config", tuning_variants=True, scoped=40)
    same = screening.verdict(_facts(base, _side("control", "winner"), _side("candidate", "winner")))
    assert same.name == "NO_IR_DIFF" and same.compared == ("control", "candidate")
    assert "compared with the control" in same.note
    changed = screening.verdict(_facts(base, _side("control", "winner"), _side("candidate", "winner-v2")))
    assert changed.name == "IR_CHANGED" and changed.compared == ("control", "candidate")

    alone = _facts(base, _side("candidate", "winner"))
    v = screening.verdict(alone)
    assert v.name == "NO_COMPARABLE_IR" and v.compared is None and "add a control cell" in v.note
    r = screenrange.shape_range(alone, v)
    assert r.span == "" and r.label.startswith("range vs recording baseline (not comparable: baseline tuned)")


def test_comparable_ir_and_leaks():
    one_sided = screening.verdict(_facts(_side("baseline"), _side("candidate", None)))
    assert one_sided.name == "NO_COMPARABLE_IR" and "candidate has no *.ttgir" in one_sided.note
    leak = screening.verdict(_facts(_side("baseline", "a"), _side("control", "b"), _side("candidate", "a")))
    assert leak.name == "NO_IR_DIFF" and "switch leaks" in leak.note
    broken = screening.verdict(_facts(_side("baseline", "a"), _side("candidate", "b", rows=0, rc=1,
                                                                    rc_name="tests_failed")))
    assert broken.name == "IR_CHANGED" and "candidate ran nothing (rc 1 tests_failed)" in broken.note


def test_ranges_only_for_judged_pairs():
    key_a, key_b = ("f", (1,), "float16", 0), ("f", (2,), "float16", 0)
    timed = dict(timed=True, samples={key_a: Sample(1.0, "graph"), key_b: Sample(2.0, "graph")})
    faster = dict(timed=True, samples={key_a: Sample(0.9, "graph"), key_b: Sample(2.1, "graph")})
    changed = _facts(_side("baseline", "a", **timed), _side("candidate", "b", **faster))
    assert screenrange.shape_range(changed, screening.verdict(changed)) == screenrange.Range(
        "-10.00%…+5.00%", "candidate/baseline-1 over 2 graph shapes, one measurement", "baseline", "graph", 0)
    noise = _facts(_side("baseline", "a", **timed), _side("candidate", "a", **faster))
    r = screenrange.shape_range(noise, screening.verdict(noise))
    assert r.span == "-10.00%…+5.00%" and r.label.startswith("noise floor of one measurement")
    cpu = dataclasses.replace(noise, backend="cpu")
    assert screenrange.shape_range(cpu, screening.verdict(cpu)) == screenrange.Range(
        label="not timed: cpu compiles only, no range")
    mismatch = dataclasses.replace(changed, caliber_findings=("!!! [caliber] timer.kind: graph vs event",))
    assert screenrange.shape_range(mismatch, screening.verdict(mismatch)).span == ""
    assert "caliber: !!! [caliber] timer.kind" in screentable.row(mismatch)["note"]


def test_table_round_trips():
    rows = [screentable.row(_facts(_side("baseline", "a"), _side("candidate", "b", elapsed_s=1.5)))]
    text = screentable.render(rows)
    assert text.splitlines()[0].split("\t") == list(screentable.COLUMNS)
    assert screentable.parse(text) == rows
    assert rows[0]["fingerprint_control"] == "" and rows[0]["weight_s"] == "3.5"
