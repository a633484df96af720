"""Matrix expansion: pure, byte-stable, ordered as the design says."""
from __future__ import annotations

import json
import tarfile

from conftest import FIXTURES, PROJECT_ROOT

from campaign.contract import canonical
from campaign.contract.plans import Matrix
from campaign.flows.freeze import check
from campaign.planning.matrix import cell_order


def test_demo_matrix_is_byte_identical_to_golden():
    matrix = check(PROJECT_ROOT / "manifests" / "demo-cpu.yaml").matrix
    golden = (PROJECT_ROOT / "tests" / "golden" / "matrix-demo-cpu.json").read_text()
    assert canonical.dumps(matrix.model_dump(mode="json")) == golden


def test_expansion_is_deterministic():
    first = check(PROJECT_ROOT / "manifests" / "demo-cpu.yaml").matrix
    second = check(PROJECT_ROOT / "manifests" / "demo-cpu.yaml").matrix
    assert canonical.dumps(first.model_dump(mode="json")) == canonical.dumps(second.model_dump(mode="json"))


def test_canaries_first_then_round_major_with_alternating_cells():
    matrix = check(PROJECT_ROOT / "manifests" / "demo-cpu.yaml").matrix
    ids = [t.id for t in matrix.tasks]
    assert ids[:6] == ["add/r1/baseline", "add/r1/control", "add/r1/candidate",
                       "add/r2/candidate", "add/r2/control", "add/r2/baseline"]
    rounds_after_canary = [t.round for t in matrix.tasks[6:]]
    assert rounds_after_canary == sorted(rounds_after_canary)
    assert [t.order for t in matrix.tasks] == list(range(len(matrix.tasks)))


def test_round_one_baseline_records_and_everything_else_replays_it():
    matrix = check(PROJECT_ROOT / "manifests" / "demo-cpu.yaml").matrix
    for task in matrix.tasks:
        if task.round == 1 and task.cell == "baseline":
            assert task.autotune.mode == "record" and task.autotune.source is None
        else:
            assert task.autotune.mode == "replay"
            assert task.autotune.source == f"{task.workload}/r1/baseline"
        assert task.autotune.policy == "first-config"  # cpu: nothing can be timed to tune


def test_narrowed_workloads_carry_their_targets():
    matrix = check(FIXTURES / "manifests" / "valid" / "narrowed.yaml").matrix
    fp16 = next(t for t in matrix.tasks if t.workload == "matmul-fp16")
    assert fp16.targets.correctness == "ops/workloads/demo/test_demo.py"
    assert fp16.targets.correctness_k == "float16"
    assert fp16.shapes == ("1024x1024x1024",)
    assert fp16.timeout_s == 900
    fp32 = next(t for t in matrix.tasks if t.workload == "matmul-fp32")
    assert fp32.targets.correctness_node_ids == ("ops/workloads/demo/test_demo.py::test_matmul",)
    assert fp32.timeout_s == 1200
    assert fp32.autotune.policy == "measured"
    # the correctness session keeps the narrowed dtypes, except where the author named the nodes
    assert fp16.correctness_dtypes == ("float16",) and fp32.correctness_dtypes is None


def test_the_matrix_carries_every_term_a_cell_reads():
    """A worker reads its cell from task.json alone: the terms are the manifest's, as prepared."""
    checked = check(FIXTURES / "manifests" / "valid" / "narrowed.yaml")
    terms, manifest = checked.matrix.terms, checked.manifest
    assert (terms.device, terms.timer) == (manifest.device, manifest.timer)
    assert (terms.triton, terms.torch, terms.flag_gems) == (manifest.sources.triton, manifest.sources.torch,
                                                            manifest.sources.flag_gems)
    assert (terms.bench_level, terms.shape_mode, terms.ir_stage, terms.autotune_from) == ("core", "subset", "ttgir", None)
    assert terms.timer.direct_repeat == 5


def test_cell_order_alternates_only_when_asked():
    cells = ("baseline", "control", "candidate")
    assert cell_order(cells, 2, True) == ("candidate", "control", "baseline")
    assert cell_order(cells, 3, True) == cells
    assert cell_order(cells, 2, False) == cells


def test_a_committed_roots_matrix_reads_and_dumps_back_to_its_bytes():
    """Roots prepared before the matrix carried terms or correctness dtypes stay byte-stable
    through the model: pinning, evidence and verify read them with today's `Matrix`."""
    receipt = PROJECT_ROOT / "receipts" / "h200-disable-mma-v3-4rounds-20261130T074558Z" / "root.tar.gz"
    with tarfile.open(receipt) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/matrix.json") and m.name.count("/") == 1)
        text = archive.extractfile(member).read().decode("utf-8")
    matrix = Matrix.model_validate(json.loads(text))
    assert matrix.terms is None and all(t.correctness_dtypes is None for t in matrix.tasks)
    assert canonical.dumps(matrix.model_dump(mode="json")) == text
