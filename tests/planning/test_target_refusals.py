"""A named target that matches nothing is refused at prepare: the manifest's file:line and key, the
nodes pytest collects there (read from the file, `campaign.planning.collected`) and a "did you mean";
nothing runs and no root is written. What the files cannot show is said not checked, never refused.
"""
from __future__ import annotations

from pathlib import Path

import runroots

from campaign.planning import targets

KERNEL = '''import pytest
import triton

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@pytest.mark.parametrize("n", [4096, 1 << 20])
def test_scaled_add(n):
    pass


@pytest.mark.parametrize("n", [4096, 1 << 20])
def test_bench_scaled_add(n):
    pass


class TestBlas:
    @pytest.mark.parametrize("op", ["mm", "bmm::8/x [a]"])
    def test_matches_torch(self, op):
        pass
'''
BENCH = "./kernels/scaled_add.py::test_bench_scaled_add"


def _workload(name: str, correctness: str) -> str:
    return f'  - {{name: {name}, provider: pytest, benchmark: "{BENCH}", correctness: {correctness}}}\n'


def test_a_target_that_matches_nothing_is_refused_at_prepare_naming_what_pytest_collects(tmp_path: Path, cli):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "scaled_add.py").write_text(KERNEL, encoding="utf-8")
    path = runroots.manifest(tmp_path, [
        _workload("typo", '{node_ids: ["./kernels/scaled_add.py::test_scaled_ad"]}'),
        _workload("gone", '{node_ids: ["./kernels/scaled_add.py::test_scaled_add[2048]"]}'),
        _workload("nothing", '{k: "fp64 and not bench"}'),
        _workload("method", '{node_ids: ["./kernels/scaled_add.py::TestBlas::test_matches_torh"]}'),
        # the project's own: torch.float16 may be spelled dtype0 or float16; without `not`, none of them selects
        '  - {name: add, op: add, reason: the small sizes only, correctness: {k: "float61"}}\n',
    ], campaign="refused")
    done = cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 2, done.stdout + done.stderr
    kernels = (tmp_path / "kernels").resolve()
    collects = ("it collects test_scaled_add[4096], test_scaled_add[1048576], test_bench_scaled_add[4096], "
                "test_bench_scaled_add[1048576], TestBlas::test_matches_torch[mm], "
                "TestBlas::test_matches_torch[bmm::8/x [a]] (6 nodes)")
    assert done.stderr.splitlines() == [
        f"PREPARE_REFUSED check=correctness_target: {path}:25:122: workloads -> 0 -> correctness -> node_ids -> 0: "
        f"{kernels}/scaled_add.py: no function test_scaled_ad; {collects}; did you mean test_scaled_add, "
        "test_bench_scaled_add?",
        f"PREPARE_REFUSED check=correctness_target: {path}:26:122: workloads -> 1 -> correctness -> node_ids -> 0: "
        f"{kernels}/scaled_add.py::test_scaled_add[2048] is not one of its ids: 1 parametrisation(s) "
        "(n: 4096, 1048576), e.g. test_scaled_add[4096]",
        f"PREPARE_REFUSED check=correctness_target: {path}:27:114: workloads -> 2 -> correctness -> k: "
        f"{kernels}/scaled_add.py: -k 'fp64 and not bench' selects nothing; {collects}",
        f"PREPARE_REFUSED check=correctness_target: {path}:28:124: workloads -> 3 -> correctness -> node_ids -> 0: "
        f"{kernels}/scaled_add.py: no function TestBlas::test_matches_torh; {collects}; did you mean "
        "TestBlas::test_matches_torch?",
        f"PREPARE_REFUSED check=correctness_target: {path}:29:70: workloads -> 4 -> correctness -> k: "
        "ops/workloads/demo/test_demo.py: -k 'float61' selects nothing; it collects test_add[1-dtype0], "
        "test_add[1-dtype1], test_add[1000-dtype0], test_add[1000-dtype1], test_add[65537-dtype0], test_add[65537-dtype1], "
        "test_softmax[shape0-dtype0], test_softmax[shape0-dtype1], test_softmax[shape1-dtype0], "
        "test_softmax[shape1-dtype1], test_softmax[shape2-dtype0], test_softmax[shape2-dtype1], ... (24 nodes)",
    ]
    assert not (tmp_path / "runs").exists()


def test_targets_that_name_what_pytest_collects_are_accepted(tmp_path: Path, cli):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "scaled_add.py").write_text(KERNEL, encoding="utf-8")
    path = runroots.manifest(tmp_path, [
        _workload("function", '{node_ids: ["./kernels/scaled_add.py::test_scaled_add"]}'),
        _workload("node", '{node_ids: ["./kernels/scaled_add.py::TestBlas::test_matches_torch[bmm::8/x [a]]"]}'),
        _workload("klass", '{node_ids: ["./kernels/scaled_add.py::TestBlas"]}'),
        _workload("keyword", '{k: "4096 and not bench"}'),
        _workload("by_mark", '{k: "parametrize and Blas"}'),
        '  - {name: add, op: add, reason: the small sizes only, correctness: {k: "dtype0 and not 65537"}}\n',
    ], campaign="accepted")
    done = cli("validate", path)
    assert done.returncode == 0, done.stderr
    assert "not checked" not in done.stdout


def test_a_keyword_the_files_cannot_decide_is_said_not_checked(tmp_path: Path):
    (tmp_path / "test_k.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('d', [object()])\ndef test_a(d):\n    pass\n", encoding="utf-8")
    assert targets.keyword_problem(tmp_path, "test_k.py", "zzz") == (
        None, "test_k.py: -k 'zzz' selects no node the file shows; not checked further (test_a: ids not read "
              "(value 0 of d is computed (object())))")
    (tmp_path / "test_m.py").write_text("def test_a():\n    pass\n\n\ntest_a.slow = True\n", encoding="utf-8")
    assert targets.keyword_problem(tmp_path, "test_m.py", "slow")[1].endswith("(test_m.py sets test_a.slow)")
    assert targets.keyword_problem(tmp_path, "test_m.py", "not test_a")[1] is not None   # its names are not all known
    (tmp_path / "test_n.py").write_text("def test_a():\n    pass\n", encoding="utf-8")
    assert targets.keyword_problem(tmp_path, "test_n.py", "not test_a") == (
        "test_n.py: -k 'not test_a' selects nothing; it collects test_a (1 node)", None)
    assert targets.keyword_problem(tmp_path, "test_n.py", "a and (") == (
        "test_n.py: -k 'a and (': -k 'a and (': expected not OR left parenthesis OR identifier; got end of input", None)
