"""Reaccount: demote-only re-derivation of a sealed root under another launch floor, written outside it."""
from __future__ import annotations

import json
import os

import rootbuilder as rb

from campaign.contract.canonical import read_json, sha256_file
from campaign.contract.runroot import RunRoot
from campaign.flows import session
from campaign.reaccount.derive import default_out, demote, reaccount
from campaign.sealing import receipt


def sealed_root(tmp_path, floor=0, name="root"):
    root = rb.build(tmp_path, [rb.mm(), rb.pointwise(), rb.rng_inputs()], rb.Options(floor=floor), name=name)
    session.seal_root(root)
    return root


def test_sealed_floor_reproduces_the_sealed_verdicts_exactly(tmp_path):
    root = sealed_root(tmp_path)
    out, derived = reaccount(RunRoot(root), 0)
    assert derived["changes"] == []
    assert derived["verdicts"] == read_json(root / "receipt.json")["verdicts"]
    assert out == default_out(RunRoot(root), 0) == tmp_path / "root.reaccount-floor0"


def test_higher_floor_demotes_exactly_the_rng_built_reduction(tmp_path):
    root = sealed_root(tmp_path)
    out, derived = reaccount(RunRoot(root), 1)
    assert [(c["workload"], c["before"], c["after"]) for c in derived["changes"]] == [("gelu_backward", "C", "B")]
    assert derived["changes"][0]["why"].startswith("scoped topology 0 -> 0: not reduced")
    excluded = {f for files in derived["excluded"].values() for f in files}
    assert excluded and all(f.endswith("-randn_kernel.ttgir") for f in excluded)
    assert len(derived["excluded"]) == 2 * rb.Options().rounds * 3   # workloads with an RNG kernel x rounds x cells
    assert derived["unscoped"]["gelu_backward"] == {"baseline": 3, "control": 3, "candidate": 1}
    assert derived["rule"] == {"name": "measured_launch_floor", "sealed": 0, "derived": 1, "demote_only": True}
    assert derived["sealed_receipt_sha256"] == sha256_file(root / "receipt.json")
    on_disk = read_json(out / "receipt.json")
    assert on_disk["files"]["report.md"] == sha256_file(out / "report.md")
    assert (out / "matrix.json").read_bytes() == (root / "matrix.json").read_bytes()
    assert "gelu_backward: C → B" in (out / "report.md").read_text(encoding="utf-8")
    assert receipt.verify_root(RunRoot(root)) == []       # nothing written inside the sealed root


def test_a_reduction_appearing_first_is_x_not_a_promotion(tmp_path):
    root = sealed_root(tmp_path, floor=1)
    assert read_json(root / "receipt.json")["verdicts"]["workloads"]["gelu_backward"]["class"] == "B"
    _, derived = reaccount(RunRoot(root), 0)
    change = derived["changes"][0]
    assert (change["workload"], change["before"], change["after"]) == ("gelu_backward", "B", "X")
    assert change["why"].startswith("no reversed-order evidence: the reduction appears first at launch floor 0")


def test_demote_only_rule():
    def w(klass):
        # R -> B needs timing that does not say slower (test_reaccount_integrity): a neutral one here
        neutral = {"verdict": "neutral", "order_verdicts": {}, "counts": {}}
        return {"class": klass, "reason": f"would be {klass}", "timing": {"primary": neutral}}
    before = {"a": w("G"), "b": w("C"), "c": w("B"), "d": w("B"), "e": w("R"), "f": w("X")}
    after = {"a": w("C"), "b": w("B"), "c": w("G"), "d": w("R"), "e": w("B"), "f": w("B")}
    final, changes = demote(before, after, 3)
    assert {n: v["class"] for n, v in final.items()} == {"a": "C", "b": "B", "c": "X", "d": "X", "e": "B", "f": "X"}
    assert final["d"]["reason"] == "R at launch floor 3 would not demote sealed B: would be R"
    assert [c["workload"] for c in changes] == ["a", "b", "c", "d", "e"]


def test_cli_refuses_a_root_without_receipt(tmp_path, cli):
    root = rb.build(tmp_path, [rb.mm()])
    done = cli("reaccount", root, "--floor", "1")
    assert done.returncode == 2
    assert "REACCOUNT_REFUSED check=sealed" in done.stderr


def test_cli_refuses_a_root_that_does_not_verify(tmp_path, cli):
    root = sealed_root(tmp_path)
    rows = root / "cells/matmul/r1/candidate/rows.json"
    os.chmod(rows.parent, 0o755)
    os.chmod(rows, 0o644)
    data = json.loads(rows.read_text(encoding="utf-8"))
    data["rows"][0]["latency_ms"] = 0.0101
    rows.write_text(json.dumps(data), encoding="utf-8")
    done = cli("reaccount", root, "--floor", "1")
    assert done.returncode == 5
    assert "REACCOUNT_REFUSED check=verify" in done.stderr and "changed: cells/matmul/r1/candidate/rows.json" in done.stderr
    assert not default_out(RunRoot(root), 1).exists()


def test_cli_refuses_an_out_dir_inside_the_root_or_holding_a_receipt(tmp_path, cli):
    root = sealed_root(tmp_path)
    inside = cli("reaccount", root, "--floor", "1", "--out", root / "derived")
    assert inside.returncode == 1 and "REACCOUNT_REFUSED check=out_inside_root" in inside.stderr
    first = cli("reaccount", root, "--floor", "1")
    assert first.returncode == 0, first.stderr
    again = cli("reaccount", root, "--floor", "1")
    assert again.returncode == 1 and "REACCOUNT_REFUSED check=out_has_receipt" in again.stderr


def test_cli_defaults_to_the_newest_sealed_root_under_runs(tmp_path, cli):
    runs = tmp_path / "runs"
    older = sealed_root(runs, name="a-older")
    newer = sealed_root(runs, name="b-newer")
    stamp = read_json(older / "receipt.json")["sealed_utc"]
    assert stamp <= read_json(newer / "receipt.json")["sealed_utc"]
    done = cli("reaccount", "--floor", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "reaccounted runs/b-newer at launch floor 1 (sealed at 0) -> runs/b-newer.reaccount-floor1" in done.stdout
    assert "gelu_backward: C -> B" in done.stdout
    assert (runs / "b-newer.reaccount-floor1" / "receipt.json").is_file()
    assert not (runs / "a-older.reaccount-floor1").exists()
