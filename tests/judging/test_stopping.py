"""Adaptive rounds that stop when the answer is known (`campaign.judging.stopping`), on built roots
whose every round goes through the runner's own decision (`campaign.running.rounds.Rounds.skip`)."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import rootbuilder as rb
from conftest import FIXTURES

from campaign.contract import status, yamlio
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest
from campaign.contract.plans import Stopping
from campaign.contract.runroot import RunRoot
from campaign.flows import session
from campaign.judging import stopping
from campaign.judging.classify import classify_root
from campaign.running.rounds import Rounds


def _changed(w: rb.Workload) -> rb.Workload:
    """The candidate compiles other code (its rounds are timed), with the workload's timing effect."""
    k = w.kernels["baseline"][0]
    w.kernels = {"baseline": (k,), "candidate": (rb.Kernel(k.name, k.converts, k.launches, "pointwise_v2"),)}
    return w


def _three(tmp_path: Path) -> Path:
    # mm: 8 % faster, decided at the first look; flat: no effect, its interval inside the floor by round 6;
    # edge: +0.4 % in odd rounds only, straddling the floor's edge to the maximum
    edge = _changed(rb.pointwise("edge", "mul", effect=lambda r, k: 1.004 if r % 2 else 1.0))
    return rb.build(tmp_path, [rb.mm(), _changed(rb.pointwise("flat", "add")), edge], rb.Options(stopping=(4, 8)))


def test_decided_early_undecided_to_max_and_the_reason_frozen(tmp_path: Path, cli):
    root = _three(tmp_path)
    found = status.latest(status.read(root / "status.tsv")[0])
    assert {found[f"matmul/r{r}/{c}"].rc_name for r in (5, 6, 7, 8) for c in ("baseline", "control", "candidate")} == {"skipped"}
    assert found["matmul/r5/baseline"].note.startswith("DECIDED: decided at round 4: faster")
    assert found["matmul/r5/baseline"].note.endswith("rounds 5-8 not run")
    assert [found[f"flat/r{r}/baseline"].rc_name == "skipped" for r in (5, 6, 7, 8)] == [False, False, True, True]
    assert found["flat/r7/baseline"].note.startswith("DECIDED: decided at round 6: neutral (95% t-interval of 6 rounds")
    assert not any(found[f"edge/r{r}/{c}"].rc_name == "skipped" for r in range(1, 9) for c in ("baseline", "candidate"))
    verdicts = classify_root(root)["workloads"]
    taken = {n: (w["class"], w["rounds"]["taken"], w["rounds"]["stopped"].split(":")[0]) for n, w in verdicts.items()}
    assert taken == {"matmul": ("G", 4, "DECIDED"), "flat": ("B", 6, "DECIDED"), "edge": ("B", 8, "undecided at the maximum, round 8")}
    # the look's level is spent, never the whole one: 4 of 8 rounds spends ln(1 + (e - 1) / 2) of it
    mm = verdicts["matmul"]["timing"]["primary"]
    assert mm["alpha_share"] == pytest.approx(math.log(1 + (math.e - 1) / 2), abs=1e-6)
    assert "sequential looks: nominal p" in mm["reason"]
    session.seal_root(root)
    report = cli("report", root)
    assert report.returncode == 0, report.stderr
    assert "- rounds: 4 taken; DECIDED: decided at round 4: faster" in report.stdout
    assert "- rounds: 8 taken; undecided at the maximum, round 8:" in report.stdout
    # past 4 rounds the floor is not the largest |A/A|, and the report says which it is
    edge = next(line for line in report.stdout.split("\n### ") if line.startswith("edge "))
    assert "A/A floor" in edge and "(workload; the 80th-percentile |A/A| of 8 rounds: their 2nd largest)" in edge, edge
    matmul = next(line for line in report.stdout.split("\n### ") if line.startswith("matmul "))
    assert "% (workload), per-shape" in matmul


def test_a_resumed_runner_decides_every_round_as_the_first_did(tmp_path: Path):
    """A decision is a function of the root's settled cells: a fresh runner (a resume) skips exactly the
    rounds the first one skipped, for the same reason, and runs the rest."""
    root = _three(tmp_path)
    frame = RunRoot(root)
    manifest, matrix = frame.frame()
    rows = status.read(root / "status.tsv")[0]
    settled = status.settled(rows)
    fresh = Rounds(root, matrix, manifest, lambda text: None)
    for task in matrix.tasks:
        again = fresh.skip(task, settled)
        row = settled[task.id]
        assert (again is not None) == (row.rc_name == status.SKIPPED), task.id
        if again is not None:
            assert row.note == f"{again[0]}: {again[1]}"


def test_an_unfinished_earlier_round_runs_the_pair(tmp_path: Path):
    root = _three(tmp_path)
    frame = RunRoot(root)
    manifest, matrix = frame.frame()
    notes: list[str] = []
    settled = status.settled(status.read(root / "status.tsv")[0])
    settled.pop("matmul/r4/candidate")
    task = next(t for t in matrix.tasks if t.id == "matmul/r5/baseline")
    assert Rounds(root, matrix, manifest, notes.append).skip(task, settled) is None
    assert notes == ["matmul: matmul/r4/candidate has not finished; round 5 runs"]


def test_spending_adds_up_to_the_level_and_fixed_rounds_spend_it_whole():
    stops = Stopping(min=4, max=12)
    assert stopping.looks(stops) == (4, 6, 8, 10, 12)
    shares = [stopping.share(n, stops) for n in stopping.looks(stops)]
    assert sum(shares) == pytest.approx(1.0, abs=1e-12)
    assert shares == sorted(shares, reverse=True)          # Pocock type: spends early
    assert shares[0] == pytest.approx(math.log(1 + (math.e - 1) / 3))
    assert stopping.share(5, stops) == stopping.share(6, stops)   # between looks: the next look's share
    assert stopping.share(4, None) == 1.0
    assert stopping.adjusted_p(0.0002, 0.5) == 0.0004 and stopping.adjusted_p(0.9, 0.5) == 1.0
    assert [stopping.pair_start(r, stops) for r in (5, 6, 7, 8, 11, 12)] == [5, 5, 7, 7, 11, 11]


def _manifest(tmp_path: Path, rounds: str) -> Path:
    text = (FIXTURES / "manifests" / "valid" / "minimal.yaml").read_text(encoding="utf-8")
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("timer: {kind: event}\n", f"timer: {{kind: event}}\nrounds: {rounds}\n"), encoding="utf-8")
    return path


@pytest.mark.parametrize("rounds, key, words", [
    ("{stop: decided, max: 12}", "rounds -> min", "stop: decided needs min"),
    ("{stop: decided, min: 4}", "rounds -> max", "stop: decided needs max"),
    ("{stop: decided, min: 4, max: 12, count: 4}", "rounds -> count", "not count: remove count"),
    ("{stop: decided, min: 3, max: 11}", "rounds -> min", "min is at least 4"),
    ("{stop: decided, min: 4, max: 11}", "rounds -> max", "rounds are added in pairs"),
    ("{stop: decided, min: 4, max: 4}", "rounds -> max", "max is min + 2"),
    ("{stop: decided, min: 4, max: 8, alternate_order: false}", "rounds -> alternate_order", "must be true"),
    ("{count: 4, max: 12}", "rounds -> max", "add `stop: decided`"),
    ("{stop: sometimes, min: 4, max: 8}", "rounds -> stop", "'fixed' or 'decided'"),
])
def test_refusals_name_the_key_and_the_fix(tmp_path: Path, rounds: str, key: str, words: str):
    with pytest.raises(InputError) as raised:
        yamlio.validate(Manifest, _manifest(tmp_path, rounds))
    assert key in str(raised.value) and words in str(raised.value), str(raised.value)


def test_adaptive_matrix_holds_max_rounds_and_the_frozen_policy(tmp_path: Path):
    root = rb.build(tmp_path, [rb.mm()], rb.Options(stopping=(4, 6)))
    matrix = RunRoot(root).matrix
    assert matrix.rounds == 6 and matrix.stopping == Stopping(min=4, max=6)
    assert max(t.round for t in matrix.tasks) == 6
    fixed = yamlio.validate(Manifest, _manifest(tmp_path, "{count: 3}"))
    assert (fixed.rounds.planned, fixed.rounds.stop) == (3, "fixed")
