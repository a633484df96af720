"""`campaign compare`: sealed roots side by side, as a subprocess over built roots.

Two roots of overlapping workloads, the second under another Triton build (every cell's
run identity says 3.7.0): the difference is named, each workload's class and geomean are
the sealed ones, a workload held by one root only is listed, and the JSON form validates
against its committed schema. An unsealed root and one that no longer verifies are refused
with the wording and exit codes the other commands use.
"""
from __future__ import annotations

import json

import jsonschema
import pytest
import rootbuilder as rb
from conftest import PROJECT_ROOT, run_cli

from campaign.contract.comparison import Comparison
from campaign.contract.runroot import RunRoot


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    base = tmp_path_factory.mktemp("compare")
    from campaign.flows import session
    first = rb.build(base, [rb.mm(), rb.pointwise()], name="triton-3.6")
    session.seal_root(first)
    second = rb.build(base, [rb.mm(effect=0.97), rb.rng_inputs()],
                      rb.Options(every_identity={"triton": "3.7.0"}), name="triton-3.7")
    session.seal_root(second)
    return first, second


def _sealed(root):
    return json.loads((root / "receipt.json").read_text(encoding="utf-8"))["verdicts"]["workloads"]


def test_markdown_names_the_caliber_difference_and_lists_every_workload(roots):
    first, second = roots
    done = run_cli("compare", first, second)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "| triton | 3.6.0 | 3.7.0 |" in out
    legend = [line for line in out.splitlines() if line.startswith("| 2 | ")]
    assert len(legend) == 1 and "triton" in legend[0].rsplit("|", 2)[-2]
    # the workloads both hold, and each held by one root only: listed, never dropped
    side = out.split("## Workloads side by side")[1].split("## History")[0]
    rows = {line.split(" | ")[0].strip("| "): line for line in side.splitlines() if line.startswith("| ")}
    assert {"matmul", "add", "gelu_backward"} <= set(rows)
    assert "not in #2" in rows["add"] and "not in #1" in rows["gelu_backward"]
    assert "- `add`: only in #1" in out and "- `gelu_backward`: only in #2" in out
    # the sealed classes and geomeans, not re-judged ones
    a, b = _sealed(first)["matmul"], _sealed(second)["matmul"]
    pa, pb = a["timing"]["primary"]["point"], b["timing"]["primary"]["point"]
    assert rows["matmul"].startswith(f"| matmul | {a['class']} | {pa * 100:+.2f}% |")
    history = out.split("## History: each root against the previous one")[1]
    line = next(row for row in history.splitlines() if row.startswith("| matmul |"))
    assert f"{b['class']} {pb * 100:+.2f}% ({(pb - pa) * 100:+.2f} pp" in line and "vs #1)" in line


def test_json_validates_against_its_schema_and_holds_both_changes(roots):
    first, second = roots
    done = run_cli("compare", first, second, "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    schema = json.loads((PROJECT_ROOT / "schemas" / "comparison.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, schema)
    Comparison.model_validate(data)
    assert {"field": "triton", "values": ["3.6.0", "3.7.0"]} in data["differences"]
    assert "triton" not in data["same"] and data["same"]["device_name"] == "NVIDIA H200"
    assert data["roots"][1]["differs_from_first"] == [d["field"] for d in data["differences"]
                                                       if d["values"][0] != d["values"][1]]
    assert data["not_in_every_root"] == {"add": [1], "gelu_backward": [2]}
    rows = {r["workload"]: r for r in data["workloads"]}
    pa = _sealed(first)["matmul"]["timing"]["primary"]["point"]
    pb = _sealed(second)["matmul"]["timing"]["primary"]["point"]
    change = rows["matmul"]["vs_first"][1]
    assert change["against"] == 1 and change["points"] == pytest.approx((pb - pa) * 100, abs=1e-4)
    assert rows["matmul"]["vs_previous"][1] == change          # two roots: the previous one is the first
    assert rows["add"]["entries"][1] is None and rows["add"]["vs_first"] == [None, None]


def test_three_roots_take_the_history_against_the_first_or_the_previous(roots, tmp_path):
    first, second = roots
    by_first = run_cli("compare", first, second, first, "--against", "first")
    by_previous = run_cli("compare", first, second, first)
    assert by_first.returncode == 0 and by_previous.returncode == 0, by_first.stderr + by_previous.stderr
    line = next(r for r in by_first.stdout.splitlines() if r.startswith("| matmul |") and "pp" in r)
    assert line.rstrip(" |").endswith("(+0.00 pp, intervals overlap vs #1)")   # #3 is #1 again
    line = next(r for r in by_previous.stdout.splitlines() if r.startswith("| matmul |") and "pp" in r)
    assert line.rstrip(" |").endswith("vs #2)")


def test_an_unsealed_root_is_refused_by_name(roots, tmp_path):
    first, _ = roots
    unsealed = rb.build(tmp_path, [rb.pointwise()], name="unsealed")
    done = run_cli("compare", first, unsealed)
    assert done.returncode == 2, done.stdout
    assert f"COMPARE_REFUSED check=sealed: {unsealed}: no receipt.json: not a sealed root" in done.stderr
    assert done.stdout == ""
    missing = run_cli("compare", tmp_path / "nowhere")
    assert missing.returncode == 2 and "check=sealed" in missing.stderr and "no such directory" in missing.stderr


def test_a_root_that_no_longer_verifies_is_refused(tmp_path):
    root = rb.sealed(tmp_path)
    rb.edit_sealed(root / "status.tsv", "edited\n")
    done = run_cli("compare", root)
    assert done.returncode == 5, done.stdout
    assert "COMPARE_REFUSED check=verify:" in done.stderr and "changed: status.tsv" in done.stderr


def test_a_screen_root_is_compared_beside_a_campaign_root(roots, tmp_path):
    first, _ = roots
    screened = rb.screen_root(tmp_path, [rb.mm()])
    done = run_cli("compare", first, screened, "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [r["mode"] for r in data["roots"]] == ["campaign", "screen"]
    assert {"field": "mode", "values": ["campaign", "screen"]} in data["differences"]
    sealed = json.loads((screened / "receipt.json").read_text(encoding="utf-8"))["verdicts"]["workloads"]["matmul"]
    entry = next(r for r in data["workloads"] if r["workload"] == "matmul")["entries"][1]
    assert (entry["class"], entry["screen"]) == (sealed["class"], sealed["screen"])
    assert data["not_in_every_root"] == {"add": [1]}


def test_a_root_whose_sides_tuned_for_themselves_is_named_beside_a_pinned_one(roots, tmp_path):
    from campaign.flows import session
    first, _ = roots
    per_side = rb.build(tmp_path, [rb.mm()], rb.Options(tuning="per_side"), name="per-side")
    session.seal_root(per_side)
    done = run_cli("compare", first, per_side, "--format", "json")
    assert done.returncode == 0, done.stderr
    differences = json.loads(done.stdout)["differences"]
    assert {"field": "tuning", "values": ["pinned", "per_side"]} in differences
    assert {"field": "manifest.defaults.tuning", "values": ["pinned", "per_side"]} in differences


def test_a_receipt_without_verdicts_is_refused(tmp_path):
    from campaign.sealing import receipt
    root = rb.build(tmp_path, [rb.pointwise()])
    receipt.seal(RunRoot(root), receipt.Judgement(None, "the classifier raised ValueError", ()))
    done = run_cli("compare", root)
    assert done.returncode == 1, done.stdout
    assert (f"COMPARE_REFUSED check=verdicts: {root / 'receipt.json'}: verdicts is null "
            "(the classifier raised ValueError)") in done.stderr
