"""Reaccount cannot erase a regression: a floor that excludes every launched variant leaves nothing to
judge (X, not B), and a sealed R becomes B only when the timing, not the floor alone, carries it."""
from __future__ import annotations

import rootbuilder as rb

from campaign.contract.canonical import read_json
from campaign.contract.runroot import RunRoot
from campaign.flows import session
from campaign.judging.classify import classify_root
from campaign.reaccount.derive import demote, reaccount, says_slower
from campaign.sealing import receipt


def sealed(tmp_path, workload, floor=0):
    root = rb.build(tmp_path, [workload], rb.Options(floor=floor))
    session.seal_root(root)
    return root


def _changes(derived):
    return [(c["workload"], c["before"], c["after"]) for c in derived["changes"]]


def test_a_floor_excluding_every_variant_does_not_erase_a_sealed_regression(tmp_path):
    # The reproduction: scoped topology 4 -> 9 is sealed R; at floor 1000 no variant is counted on
    # either side: it read "0 -> 0: not reduced; correct" -- a B -- before the classifier made it X.
    root = sealed(tmp_path, rb.mm(before=4, after=9, effect=1.0))
    assert read_json(root / "receipt.json")["verdicts"]["workloads"]["matmul"]["reason"].startswith(
        "scoped topology 4 -> 9: increased (IR evidence alone)")
    assert classify_root(root, 1000)["workloads"]["matmul"]["class"] == "X"
    _, derived = reaccount(RunRoot(root), 1000)
    assert _changes(derived) == [("matmul", "R", "X")]
    assert derived["changes"][0]["why"].startswith(
        "floor 1000 excludes every launched variant: nothing to judge (baseline and candidate scope none)")
    assert derived["verdicts"]["counts"]["B"] == 0 and derived["verdicts"]["counts"]["X"] == 1


def test_a_floor_excluding_one_side_only_is_x_too(tmp_path):
    # The candidate's kernel is launched 300 times, the baseline's once: at floor 10 the baseline scopes none.
    w = rb.pointwise()
    w.kernels = {"baseline": (rb.Kernel("add_kernel", 2, 1, "v3"),),
                 "candidate": (rb.Kernel("add_kernel", 0, 300, "v2"),)}
    root = sealed(tmp_path, w)
    assert read_json(root / "receipt.json")["verdicts"]["workloads"]["add"]["class"] == "C"
    _, derived = reaccount(RunRoot(root), 10)
    assert derived["verdicts"]["workloads"]["add"]["class"] == "X"
    assert "excludes every launched variant: nothing to judge (baseline scope none" in \
        derived["verdicts"]["workloads"]["add"]["reason"]


def test_r_to_b_with_neutral_timing_at_a_floor_that_still_scopes_both_sides(tmp_path):
    # The increase lives in the once-launched RNG kernel that builds inputs; the timed kernel is untouched.
    root = sealed(tmp_path, rb.rng_increase())
    assert read_json(root / "receipt.json")["verdicts"]["workloads"]["dropout"]["class"] == "R"
    _, derived = reaccount(RunRoot(root), 1)
    assert _changes(derived) == [("dropout", "R", "B")]
    assert derived["scoped"]["dropout"]["baseline"] == derived["scoped"]["dropout"]["candidate"] == 0


def test_r_to_b_refused_when_one_order_says_slower(tmp_path):
    root = sealed(tmp_path, rb.rng_increase(effect=lambda r, i: 1.05 if r % 2 else 1.0))
    assert classify_root(root, 1)["workloads"]["dropout"]["class"] == "B"
    _, derived = reaccount(RunRoot(root), 1)
    assert _changes(derived) == [("dropout", "R", "X")]
    assert derived["changes"][0]["why"].startswith(
        "sealed R needs evidence, not only a floor, to become B: the timing says slower baseline-first")


def test_shapes_that_disagree_are_x_at_every_floor_never_b(tmp_path):
    # One shape +10 %, one -10 %: the aggregate is neutral, the slower shape is still evidence. Sealed R
    # by the topology and B at floor 1 before issue 37 (the refusal of that B was `says_slower`'s, below);
    # the classifier now names the two shapes at the seal and at the derived floor alike.
    root = sealed(tmp_path, rb.rng_increase(effect=lambda r, i: {0: 1.1, 1: 0.9}.get(i, 1.0)))
    seal = read_json(root / "receipt.json")["verdicts"]["workloads"]["dropout"]
    assert seal["class"] == "X" and seal["reason"].startswith("shapes disagree: faster test_bench_dropout[16777216,")
    _, derived = reaccount(RunRoot(root), 1)
    assert _changes(derived) == [] and derived["verdicts"]["workloads"]["dropout"]["class"] == "X"


def _timing(verdict="neutral", orders=("neutral", "neutral"), slower_shapes=0, leaning="neutral"):
    return {"primary": {"verdict": verdict, "leaning": leaning,
                        "order_verdicts": dict(zip(("baseline-first", "candidate-first"), orders)),
                        "counts": {"faster": 0, "slower": slower_shapes, "neutral": 3, "sign_flipping": 0}}}


def test_says_slower_names_each_piece_of_evidence():
    assert says_slower(_timing()) is None
    assert says_slower(None) == says_slower({"primary": None}) == "no timed evidence"
    assert says_slower(_timing("slower")) == "the timing says slower overall"
    assert says_slower(_timing(orders=("neutral", "slower"))) == "the timing says slower candidate-first"
    assert says_slower(_timing(slower_shapes=2)) == "the timing says 2 shape(s) slower"
    assert says_slower(_timing(leaning="slower")) == "the timing says an interval above the A/A floor"


def test_demote_keeps_failures_and_a_regression_needs_evidence_to_fall():
    before = {n: {"class": k, "reason": "sealed"} for n, k in (("a", "R"), ("b", "F"), ("c", "R"), ("d", "G"))}
    after = {"a": {"class": "B", "reason": "not reduced", "timing": None},
             "b": {"class": "F", "reason": "candidate incorrect"},
             "c": {"class": "B", "reason": "not reduced", "timing": _timing(leaning="slower")},
             "d": {"class": "B", "reason": "not reduced", "timing": _timing()}}
    final, _ = demote(before, after, 50)
    assert {n: v["class"] for n, v in final.items()} == {"a": "X", "b": "F", "c": "X", "d": "B"}
    assert final["a"]["reason"].endswith("no timed evidence (not reduced)")


def test_cli_reaccount_turns_the_erased_regression_into_x(tmp_path, cli):
    root = sealed(tmp_path, rb.mm(before=4, after=9, effect=1.0))
    done = cli("reaccount", root, "--floor", "1000")
    assert done.returncode == 0, done.stderr
    assert "  matmul: R -> X: floor 1000 excludes every launched variant: nothing to judge" in done.stdout
    # a count and the kernels per task, not every variant hash on one line
    assert "excluded by the floor: matmul/r2/baseline: 2 file(s) of matmul_kernel.ttgir, randn_kernel.ttgir" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) < 400
    report = (tmp_path / "root.reaccount-floor1000" / "report.md").read_text(encoding="utf-8")
    assert "matmul: R → X: floor 1000 excludes every launched variant" in report
    assert receipt.verify_root(RunRoot(root)) == []
