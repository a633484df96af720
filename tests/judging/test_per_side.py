"""``defaults.tuning: per_side`` on built roots: every timed cell tunes for itself, the IR rule judges
every config each side compiled (a different winner is no code change), the timing is taken against
the baseline in every round, the caliber names the mode, and the report names each side's winners.

One root holds the cases: matmul, whose candidate lowers every config to mma v2 (IR changed, 8 %
faster) and picks another winner (BLOCK_M 64 where the sides agree on the rest); add, whose code is
the same for every config on both sides but whose candidate picks another winner and times 5 %
faster (identical code: never G, the X saying a different winner may have moved it).
"""
from __future__ import annotations

import pytest
import rootbuilder as rb

from campaign.contract.artifacts import AUTOTUNE_FILE, IDENTITY_FILE
from campaign.contract.canonical import read_json
from campaign.contract.cellfiles import AutotuneFile
from campaign.contract.records import Verdicts
from campaign.contract.runroot import RunRoot
from campaign.judging import caliber, evidence
from campaign.judging.classify import classify_root
from campaign.reporting import workloadtext
from campaign.running.rounds import Rounds

OTHER = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}
KEY = "matmul_kernel (4096, 4096, 4096, 'torch.float16')"


def _workloads() -> list[rb.Workload]:
    return [rb.mm(winners={"candidate": OTHER}, recording_bias=1.03),
            rb.pointwise(effect=0.95, tuning_configs=3, winners={"candidate": OTHER})]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return rb.build(tmp_path_factory.mktemp("per-side"), _workloads(), rb.Options(tuning="per_side"))


@pytest.fixture(scope="module")
def verdicts(root) -> Verdicts:
    return Verdicts.model_validate(classify_root(root))


def test_every_timed_cell_records_its_own_winners_and_the_terms_say_per_side(root):
    matrix = read_json(root / "matrix.json")
    assert matrix["terms"]["tuning"] == "per_side"
    assert {(t["autotune"]["mode"], t["autotune"]["source"]) for t in matrix["tasks"]} == {("record", None)}
    identity = read_json(RunRoot(root).cell("matmul/r3/candidate") / IDENTITY_FILE)
    assert (identity["tuning"], identity["autotune_mode"]) == ("per_side", "record")


def test_a_screens_ir_pass_stays_first_config_and_its_round_one_tunes_on_every_side(tmp_path):
    options = rb.Options(tuning="per_side", ir_pass=True, rounds=1, mode="screen")
    tasks = read_json(rb.build(tmp_path, [rb.mm()], options) / "matrix.json")["tasks"]
    assert {(t["round"], t["autotune"]["mode"], t["autotune"]["policy"]) for t in tasks} == {
        (0, "record", "first-config"), (1, "record", "measured")}


def test_the_runner_judges_round_one_ir_baseline_against_candidate(tmp_path):
    """Later rounds run only where round 1's IR changed: under per_side the tuning baseline is compared
    with the candidate directly (pinned, with no control, nothing replays beside the candidate)."""
    said = {}
    for tuning in ("per_side", "pinned"):
        options = rb.Options(tuning=tuning, control=False, rounds=2)
        root = rb.build(tmp_path, [rb.pointwise(tuning_configs=3)], options, name=tuning)
        frame = RunRoot(root)
        rounds = Rounds(root, frame.matrix, frame.manifest, lambda line: None)
        said[tuning] = rounds.verdict("add", {t.id: None for t in rounds.matrix.tasks if t.round == 1})
    assert said["pinned"] is None
    marker, why = said["per_side"]
    assert marker == "SWITCH_NO_IR_DIFF" and why.startswith("round 1 baseline and candidate ttgir fingerprints are equal")


def test_a_pinned_matrix_keeps_its_bytes_and_replays_round_one(tmp_path):
    matrix = read_json(rb.build(tmp_path, [rb.mm()]) / "matrix.json")
    assert "tuning" not in matrix["terms"]
    recorders = [t["id"] for t in matrix["tasks"] if t["autotune"]["mode"] == "record"]
    assert recorders == ["matmul/r1/baseline"]


def test_no_cell_stands_apart_so_ir_and_timing_compare_baseline_with_candidate(verdicts):
    mm = verdicts.workloads["matmul"]
    assert mm.klass == "G", mm.reason
    assert mm.ir.reference == "baseline" and mm.ir.changed is True and mm.ir.control_matches is True
    # every round against the baseline: it tuned as the candidate did (pinned: round 1 against the control)
    assert mm.timing.references == {}
    assert set(mm.caliber) == set() and verdicts.caliber.findings == ()
    # the IR of each side holds every config it tuned over: 3 configs besides the winner, 2 kernels
    assert mm.ir.files == {"baseline": 5, "control": 5, "candidate": 5}


def test_identical_code_with_another_winner_is_never_faster(verdicts):
    add = verdicts.workloads["add"]
    assert add.ir.changed is False and add.klass == "X", add.reason
    assert add.reason.startswith("IR equal at ttgir but timing moved: faster")
    assert add.reason.endswith("every config compiled alike on both sides, so a different winner, not the "
                               "switch's code, may have moved the timing")


def test_the_report_names_the_config_each_side_chose_where_they_differ(verdicts):
    mm = verdicts.workloads["matmul"]
    assert [(c.kernel, c.key) for c in mm.chosen] == [("matmul_kernel", KEY.split(" ", 1)[1])]
    lines = workloadtext.details("matmul", mm, verdicts.backend)
    shown = [line for line in lines if line.startswith(("- autotune", "  - matmul_kernel"))]
    assert shown == [
        "- autotune, each side tuned for itself: 1 key(s) chose differently",
        f"  - {KEY}: baseline BLOCK_K=64 BLOCK_M=128 BLOCK_N=128 num_warps=8 num_stages=3 (r1, r2, r3, r4); "
        "control BLOCK_K=64 BLOCK_M=128 BLOCK_N=128 num_warps=8 num_stages=3 (r1, r2, r3, r4); "
        "candidate BLOCK_K=64 BLOCK_M=64 BLOCK_N=128 num_warps=8 num_stages=3 (r1, r2, r3, r4)"]
    assert "chose differently for 1 key(s)" in mm.reason


def test_sides_that_chose_alike_name_nothing(tmp_path):
    w = Verdicts.model_validate(classify_root(rb.build(tmp_path, [rb.mm()], rb.Options(tuning="per_side"))))
    mm = w.workloads["matmul"]
    assert mm.chosen == () and "chose" not in mm.reason
    assert "chosen" not in mm.dump()
    assert not [line for line in workloadtext.details("matmul", mm, w.backend) if "tuned for itself" in line]


def test_the_caliber_names_per_side_and_refuses_a_cell_that_was_pinned(tmp_path, verdicts):
    assert verdicts.caliber.fields["tuning"] == "per_side"
    options = rb.Options(tuning="per_side", identity={"matmul/r2/control": {"tuning": "pinned"}})
    mixed = Verdicts.model_validate(classify_root(rb.build(tmp_path, [rb.mm()], options)))
    line = ("!!! [caliber] tuning: per_side vs pinned (matmul/r1/baseline vs matmul/r2/control)")
    assert line in mixed.caliber.findings
    mm = mixed.workloads["matmul"]
    assert mm.klass == "X" and line in mm.caliber and mm.timing is None


def test_a_root_sealed_before_the_mode_reads_as_pinned():
    # identities written before the key existed: pinned was then the only way configs reached the sides
    assert caliber.flatten({})["tuning"] == "pinned"
    assert caliber.flatten({"tuning": "per_side"})["tuning"] == "per_side"


def test_a_tuning_cell_stands_apart_only_where_the_others_replay(root):
    record = AutotuneFile.model_validate(read_json(RunRoot(root).cell("matmul/r1/baseline") / AUTOTUNE_FILE))
    assert record.tuning_runs > 0
    assert evidence.apart(record, "pinned") is True
    assert evidence.apart(record, "per_side") is False
