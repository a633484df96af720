"""A campaign in shards: `campaign prepare --shards`, each shard run and sealed on its own, and
`campaign report` over the set as one answer, or a named refusal; the CLI as a subprocess throughout.

One set of two real shards (add | row_sum, float16, one round, compile-only) is prepared, run and
sealed once for the module; each refusal reads it, or a copy it edits, or a second set prepared unrun.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import runroots
from conftest import PROJECT_ROOT, run_cli
from readmewalk import walkthrough

from campaign.contract import canonical
from campaign.contract.errors import EXIT_INPUT, EXIT_REFUSED, EXIT_VERIFY
from campaign.contract.rootrecords import Prepare
from campaign.planning import harness

WORKLOADS = [runroots.demo("add", canary=True, float16=True), runroots.demo("row_sum", float16=True)]


def _prepare(base: Path, *split: str, workloads=WORKLOADS, campaign: str = "shards") -> list[Path]:
    done = run_cli("prepare", runroots.manifest(base, workloads, campaign=campaign), "--runs-dir", base / "runs", *split)
    assert done.returncode == 0, done.stderr
    count = sum(line.startswith("shard ") for line in done.stdout.splitlines())
    return [Path(line) for line in done.stdout.strip().splitlines()[-count:]]


def _prepared(root: Path) -> Prepare:
    return Prepare.model_validate(canonical.read_json(root / "prepare.json"))


@pytest.fixture(scope="module")
def sealed_set(tmp_path_factory) -> list[Path]:
    base = tmp_path_factory.mktemp("shard-set")
    roots = _prepare(base, "--shards", "2")
    for root in roots:
        done = runroots.run(root)
        assert done.returncode == 0, done.stderr
    return roots


def test_each_shard_is_a_prepared_root_of_whole_workloads_recording_its_set(sealed_set):
    records = [_prepared(root) for root in sealed_set]
    shards = [r.shard for r in records]
    assert [(s.index, s.of) for s in shards] == [(1, 2), (2, 2)]
    assert len({(s.set_id, s.manifest_sha256, s.workloads) for s in shards}) == 1
    assert sorted(shards[0].workloads) == [("add",), ("row_sum",)]        # disjoint, together the manifest's
    for root, record in zip(sealed_set, records):
        own = record.shard.workloads[record.shard.index - 1]
        assert sorted(record.resolved_targets) == list(own)
        tasks = canonical.read_json(root / "matrix.json")["tasks"]
        assert {t["workload"] for t in tasks} == set(own) and len(tasks) == record.tasks == 2   # both cells, one round
        assert record.manifest_sha256 == canonical.sha256_file(root / "manifest.yaml") != record.shard.manifest_sha256
        assert run_cli("verify", root).returncode == 0


def test_report_renders_the_set_as_one_table_each_row_naming_its_shard(sealed_set):
    done = run_cli("report", *sealed_set)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("## Workloads") == 1 and out.count("## Classes") == 1
    rows = [line for line in out.splitlines() if line.startswith("| 1/2 |") or line.startswith("| 2/2 |")]
    assert [row.split(" | ")[:2] for row in rows] == [["| 1/2", "add"], ["| 2/2", "row_sum"]]
    for index, root in enumerate(sealed_set, start=1):
        assert f"| shard {index} of 2 | `{root}` |" in out
    as_json = json.loads(run_cli("report", *sealed_set, "--format", "json").stdout)
    assert sorted(as_json["verdicts"]["workloads"]) == ["add", "row_sum"]
    assert sum(as_json["verdicts"]["counts"].values()) == 2                 # counted over the whole set
    assert [(s["shard"], s["workloads"]) for s in as_json["shards"]] == [(1, ["add"]), (2, ["row_sum"])]
    # given in any order, the same answer
    assert run_cli("report", *reversed(sealed_set)).stdout == out


def test_a_missing_shard_is_named_never_dropped(sealed_set):
    done = run_cli("report", sealed_set[0])
    assert done.returncode == EXIT_REFUSED
    assert "REPORT_REFUSED check=shard_missing: shard 2 of 2 not given (row_sum)" in done.stderr
    assert done.stdout == ""


def test_a_shard_given_twice_is_refused(sealed_set):
    done = run_cli("report", sealed_set[0], sealed_set[1], sealed_set[0])
    assert done.returncode == EXIT_REFUSED
    assert f"REPORT_REFUSED check=shard_twice: shard 1 of 2 given twice: {sealed_set[0]}" in done.stderr


def test_shards_of_two_sets_are_refused_before_either_is_read_as_one(sealed_set, tmp_path):
    other = _prepare(tmp_path, "--shards", "2", workloads=WORKLOADS[::-1])     # another manifest's bytes: another set
    done = run_cli("report", sealed_set[0], other[1])
    assert done.returncode == EXIT_REFUSED
    assert "REPORT_REFUSED check=shard_set: the roots are shards of 2 sets, not one" in done.stderr


def test_an_unsealed_shard_is_named(tmp_path):
    roots = _prepare(tmp_path, "--shards", "2")
    done = run_cli("report", *roots)
    assert done.returncode == EXIT_REFUSED
    for index, root in enumerate(roots, start=1):
        assert f"check=shard_unsealed: shard {index} of 2 not sealed: {root}; `campaign run {root}`" in done.stderr


def test_a_hand_edited_shard_record_claiming_anothers_workload_fails_verify(sealed_set, tmp_path):
    copy = runroots.copy_root(sealed_set[1], tmp_path)
    record = canonical.read_json(copy / "prepare.json")
    record["shard"]["workloads"] = [["add"], ["add", "row_sum"]]          # a cell of add "run twice"
    (copy / "prepare.json").chmod(0o644)
    (copy / "prepare.json").write_text(canonical.dumps(record), encoding="utf-8")
    done = run_cli("report", sealed_set[0], copy)
    assert done.returncode == EXIT_VERIFY
    assert f"REPORT_REFUSED check=verify: {copy} does not verify" in done.stderr and "prepare.json" in done.stderr


def test_each_shard_records_the_harness_its_run_digests_so_a_shard_of_other_files_runs(tmp_path):
    # found on an H100: shard 1 (test_blas_perf.py) refused `run` with `check=harness` naming shard 2's
    # files "removed since prepare", its prepare.json having kept the whole manifest's digests
    files, _ = walkthrough()
    kernel = tmp_path / "kernels" / "scaled_add.py"
    kernel.parent.mkdir()
    kernel.write_text(files["kernels/scaled_add.py"], encoding="utf-8")
    own = ("  - {name: scaled-add, provider: pytest, benchmark: ./kernels/scaled_add.py::test_bench_scaled_add,\n"
           '     correctness: {node_ids: ["./kernels/scaled_add.py::test_scaled_add"]}}\n')
    roots = _prepare(tmp_path, "--shards", "2", workloads=[WORKLOADS[0], own], campaign="own-shards")
    records = [_prepared(root) for root in roots]
    assert [r.shard.workloads[r.shard.index - 1] for r in records] == [("add",), ("scaled-add",)]
    for record in records:
        assert dict(record.harness) == harness.prepared_digests(PROJECT_ROOT, record)   # what `run` compares
    assert str(kernel) not in records[0].harness and str(kernel) in records[1].harness
    assert set(records[0].harness) - {"ops/workloads/demo/bench_demo.py", "ops/workloads/demo/test_demo.py"} \
        <= set(records[1].harness), "the code both shards run is recorded alike in each"
    done = runroots.run(roots[0])
    assert done.returncode == 0, done.stderr
    assert "check=harness" not in done.stderr


def test_shard_budget_takes_the_fewest_shards_within_it_and_refuses_a_workload_over_it(tmp_path):
    weighed = [line.replace("}", f", weight_s: {s}}}") for line, s in zip(WORKLOADS + [runroots.demo("softmax")],
                                                                          (900, 500, 400))]
    roots = _prepare(tmp_path, "--shard-budget", "1000", workloads=weighed)      # 900 | 500 + 400
    assert [_prepared(r).shard.workloads for r in roots][0] == (("add",), ("row_sum", "softmax"))
    said = run_cli("prepare", tmp_path / "shards.yaml", "--runs-dir", tmp_path / "said", "--shard-budget", "1000").stdout
    assert "shard 2 of 2: row_sum, softmax (predicted 900 s: weight_s x 1 round, the most the manifest plans): " in said
    done = run_cli("prepare", tmp_path / "shards.yaml", "--runs-dir", tmp_path / "over", "--shard-budget", "800")
    assert done.returncode == EXIT_REFUSED
    assert "PREPARE_REFUSED check=shard_budget: --shard-budget 800: add (900 s) alone exceeds 800 s" in done.stderr
    assert not (tmp_path / "over").exists() or not any((tmp_path / "over").iterdir())
    done = run_cli("prepare", tmp_path / "shards.yaml", "--runs-dir", tmp_path / "over", "--shards", "4")
    assert done.returncode == EXIT_REFUSED and "check=shards: --shards 4: the manifest has 3 workloads" in done.stderr
    assert run_cli("prepare", tmp_path / "shards.yaml", "--shards", "0").returncode == EXIT_INPUT


def test_a_caliber_field_that_differs_between_shards_refuses_unless_released(sealed_set):
    from campaign.contract.errors import EXIT_CALIBER, CampaignError
    from campaign.contract.records import Verdicts
    from campaign.flows import shardset
    members = shardset.gather(sealed_set)
    own = [Verdicts.model_validate(canonical.read_json(root / "receipt.json")["verdicts"]) for root in sealed_set]
    # as if shard 2's job ran another Triton: one field of its sealed caliber table, in memory
    other = own[1].model_copy(update={"caliber": own[1].caliber.model_copy(
        update={"fields": {**own[1].caliber.fields, "triton": "3.5.0", "device_uuid": "GPU-other"}})})
    with pytest.raises(CampaignError) as refused:
        shardset.merged(members, [own[0], other], allow_caliber_mismatch=False)
    assert refused.value.exit_code == EXIT_CALIBER
    assert refused.value.lines[0] == ("!!! [caliber] between shards: triton differs between shards: "
                                      "shard 1 of 2: 3.6.0; shard 2 of 2: 3.5.0")     # device_uuid may differ
    one, origin = shardset.merged(members, [own[0], other], allow_caliber_mismatch=True)
    assert one.caliber.released and one.caliber.fields["triton"] == "3.6.0 | 3.5.0"
    assert origin == {"add": "1/2", "row_sum": "2/2"} and one.counts["X"] == 2


def test_compare_reads_a_shard_set_as_one_root_beside_a_whole_one(sealed_set, tmp_path):
    whole = runroots.prepare(tmp_path, WORKLOADS, campaign="shards")          # the same manifest, unsharded
    assert runroots.run(whole).returncode == 0
    done = run_cli("compare", whole, *reversed(sealed_set), "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert len(out["roots"]) == 2                                # the set is one column, not two
    column = out["roots"][1]
    assert [s["root"] for s in column["shards"]] == [str(r) for r in sealed_set]           # in shard order
    assert [s["receipt_sha256"] for s in column["shards"]] == [canonical.sha256_file(r / "receipt.json")
                                                               for r in sealed_set]
    assert out["roots"][0]["shards"] == []
    rows = {row["workload"]: row["entries"] for row in out["workloads"]}
    assert sorted(rows) == ["add", "row_sum"] and all(None not in entries for entries in rows.values())
    sealed = {name: v["class"] for root in sealed_set
              for name, v in canonical.read_json(root / "receipt.json")["verdicts"]["workloads"].items()}
    assert {name: entries[1]["class"] for name, entries in rows.items()} == sealed        # as each shard sealed it
    text = run_cli("compare", whole, *sealed_set).stdout
    assert f"#2 is a shard set read as one root: shard 1 of 2 `{sealed_set[0]}`" in text


def test_compare_refuses_an_incomplete_shard_set_with_its_own_prefix(sealed_set):
    done = run_cli("compare", sealed_set[1])
    assert done.returncode == EXIT_REFUSED
    assert "COMPARE_REFUSED check=shard_missing: shard 1 of 2 not given (add)" in done.stderr
