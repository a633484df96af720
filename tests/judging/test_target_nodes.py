"""Correctness scoped by pytest's node-id grammar (`campaign.contract.nodeids.belongs`), on built roots.

Each root names its correctness target the way a person writes it in a manifest (a parametrized
function, a plain test beside one, the README walkthrough's own file) and records the nodes pytest
names under the rootdir; before the one rule, the first read X "no node of the target passed" though
every node passed, and a candidate failing one parametrization in every round read G "correct".
"""
from __future__ import annotations

import rootbuilder as rb

from campaign.contract.plans import Targets
from campaign.judging.classify import classify_root

OWN = "/home/me/blas"    # an own file's rootdir (`campaign.planning.ownfile.rootdir`); its files need not exist here


def own_targets(benchmark: str, *node_ids: str, rootdir: str = OWN) -> Targets:
    """An own file's targets as `campaign.planning.owntargets.resolve` records them: absolute, with its rootdir."""
    return Targets(benchmark=f"{rootdir}/{benchmark}", correctness=f"{rootdir}/{node_ids[0].partition('::')[0]}",
                   correctness_node_ids=tuple(f"{rootdir}/{n}" for n in node_ids), rootdir=rootdir)


def one(tmp_path, workload: rb.Workload, **options) -> dict:
    root = rb.build(tmp_path, [workload], rb.Options(**options))
    return classify_root(root)["workloads"][workload.name]


BIG_BLAS = own_targets("kernels/big_blas.py::test_bench_big_blas", "kernels/big_blas.py::test_big_blas_matches_torch")
PARAMETRIZATIONS = ("kernels/big_blas.py::test_big_blas_matches_torch[bmm]",
                    "kernels/big_blas.py::test_big_blas_matches_torch[baddbmm-8::2048/x [a]]",
                    "kernels/big_blas.py::test_big_blas_matches_torch[addmm-é]")


def test_a_parametrized_function_named_as_correctness_reads_its_timing_class(tmp_path):
    # the issue's own file: every node passed, and it read X "no correctness evidence"
    named = one(tmp_path / "named", rb.mm(targets=BIG_BLAS, nodes=PARAMETRIZATIONS))
    demo = one(tmp_path / "demo", rb.mm())
    assert named["class"] == demo["class"] == "G", named["reason"]
    assert named["reason"] == demo["reason"]
    assert named["correctness"]["baseline"] | {"outside_target": 0} == {
        "state": "run", "reason": None, "passed": 3 * 4, "failed": 0, "error": 0, "skipped": 0, "outside_target": 0}


def test_a_candidate_failing_one_parametrization_in_every_round_is_f(tmp_path):
    # one plain test and one parametrized function named: the failing [mm] read G "...; correct"
    targets = own_targets("k.py::test_bench", "k.py::test_plain", "k.py::test_param")
    nodes = ("k.py::test_plain", "k.py::test_param[mm]", "k.py::test_param[bmm]")
    w = one(tmp_path, rb.mm(targets=targets, nodes=nodes, failing_nodes={"candidate": (1,)}))
    assert (w["class"], w["reason"]) == ("F", "candidate incorrect: 1 correctness node(s) fail where baseline passes: "
                                              "k.py::test_param[mm]")


def test_a_correctness_file_that_fails_to_import_on_the_candidate_only_is_f(tmp_path):
    # outcomes.json holds one error row for the file's collector: it read X, the error outside the target
    w = one(tmp_path, rb.mm(targets=BIG_BLAS, nodes=PARAMETRIZATIONS, import_error={"candidate": "kernels/big_blas.py"}))
    assert (w["class"], w["reason"]) == ("F", "candidate incorrect: 1 correctness node(s) fail where baseline passes: "
                                              "big_blas.py")


def test_a_correctness_file_failing_to_import_everywhere_is_x_naming_it(tmp_path):
    errors = {cell: "kernels/big_blas.py" for cell in ("baseline", "control", "candidate")}
    w = one(tmp_path, rb.mm(targets=BIG_BLAS, nodes=PARAMETRIZATIONS, import_error=errors))
    assert (w["class"], w["reason"]) == ("X", "baseline fails 1 node(s) of its correctness target: big_blas.py: "
                                              "nothing to compare against")


def test_the_readme_walkthrough_shape_reads_its_class(tmp_path):
    # `correctness: {node_ids: ["./kernels/scaled_add.py::test_scaled_add"]}` beside no pytest configuration:
    # the rootdir is the file's folder, so pytest names its nodes scaled_add.py::test_scaled_add[4096]
    rootdir = "/home/me/work/kernels"
    targets = own_targets("scaled_add.py::test_bench_scaled_add", "scaled_add.py::test_scaled_add", rootdir=rootdir)
    nodes = ("scaled_add.py::test_scaled_add[4096]", "scaled_add.py::test_scaled_add[1048576]")
    fused, split = rb.Kernel("scaled_add_kernel", 0, 300, "fma"), rb.Kernel("scaled_add_kernel", 0, 300, "mul_add")
    w = one(tmp_path, rb.Workload("scaled-add", "scaled_add", rb.pointwise().shapes, {"baseline": (fused,), "candidate": (split,)},
                                  effect=1.06, targets=targets, nodes=nodes))
    assert w["class"] == "R" and w["reason"].endswith("; correct"), w["reason"]
    assert w["correctness"]["candidate"]["passed"] == 2 * 4 and w["correctness"]["candidate"]["outside_target"] == 0


def test_a_benchmark_named_as_one_node_keeps_that_node_as_its_correctness(tmp_path):
    # provider pytest, `benchmark: file::test_x[4096]`: the correctness target is the benchmark node itself
    node = "tests/data/dobench/dobench_my_kernel.py::test_x[4096]"
    targets = Targets(benchmark=node, correctness=node)
    w = one(tmp_path, rb.mm(targets=targets, nodes=(node, "tests/data/dobench/dobench_my_kernel.py::test_x[8192]"),
                            failing_nodes={"candidate": (1,)}))
    assert w["class"] == "G", w["reason"]
    assert w["correctness"]["candidate"] | {} == {"state": "run", "reason": None, "passed": 4, "failed": 0, "error": 0,
                                                  "skipped": 0, "outside_target": 4}


def test_a_flaggems_mark_spanning_two_files_scopes_both(tmp_path):
    # upstreamtargets gives the files carrying the mark as node ids: a file names every test in it
    checkout = "/opt/FlagGems"
    targets = Targets(benchmark=f"{checkout}/benchmark/test_blas_perf.py::test_mm", correctness=f"{checkout}/tests/test_a.py",
                      correctness_node_ids=(f"{checkout}/tests/test_a.py", f"{checkout}/tests/test_b.py"),
                      checkout=checkout)
    nodes = ("tests/test_a.py::test_mm[dtype0]", "tests/test_b.py::TestMM::test_mm[dtype0]", "tests/test_c.py::test_mm")
    w = one(tmp_path, rb.mm(targets=targets, nodes=nodes, failing_nodes={"candidate": (1,)}))
    assert (w["class"], w["reason"]) == ("F", "candidate incorrect: 1 correctness node(s) fail where baseline passes: "
                                              "test_b.py::TestMM::test_mm[dtype0]")
    assert w["correctness"]["baseline"]["outside_target"] == 4
