"""IR capture and the launch index over real sm_90 compilation of the demo kernels."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from cellrun import kernel_test, plan_cell, read_index, run_cell
from triton import knobs

from campaign.backends.cpu import CpuBackend
from campaign.contract.artifacts import INDEX_COLUMNS
from campaign.judging.irevidence import fingerprint, normalize
from campaign.plugins import ir_capture
from campaign.worker.context import CellLog

STAGES = "ttir,ttgir,llir,ptx"

DEMO_CALLS = """
    x, y = torch.randn(1000), torch.randn(1000)
    for _ in range(3):
        add(x, y)
    add(x.half(), y.half())
    softmax(torch.randn(64, 1000))
    row_sum(torch.randn(64, 1000))
    row_sum(torch.randn(64, 1000))
    a = torch.randn(256, 256, dtype=torch.float16)
    matmul(a, a)
"""


def test_every_variant_is_captured_and_joined_to_its_launches(tmp_path):
    plan = plan_cell(tmp_path, "cell")
    run_cell(plan, kernel_test(DEMO_CALLS))
    ir = Path(plan.cell_dir) / "ir"
    assert (ir / "index.tsv").read_text().splitlines()[0].split("\t") == list(INDEX_COLUMNS)
    rows = read_index(plan.cell_dir)
    launches = sorted((row["kernel"], int(row["launches"])) for row in rows)
    # add compiles twice (fp32 and fp16): the index joins per variant, not per kernel name. The
    # autotuned matmul (first-config policy) has all three configs compiled, its first launched.
    assert launches == [("add_kernel", 1), ("add_kernel", 3), ("matmul_kernel", 0), ("matmul_kernel", 0),
                        ("matmul_kernel", 1), ("row_sum_kernel", 2), ("softmax_kernel", 1)]
    for row in rows:
        assert row["stages"] == STAGES, "cpu declares no disassembler: no sass"
        for stage in STAGES.split(","):
            assert (ir / f"{row['hash']}-{row['kernel']}.{stage}").stat().st_size > 0
    assert not list(ir.glob("*.sass"))
    assert sorted(p.name for p in ir.iterdir() if p.suffix != ".tsv") == sorted(
        f"{row['hash']}-{row['kernel']}.{stage}" for row in rows for stage in STAGES.split(","))
    assert "ir-capture: 7 variants, 8 joined launches" in (Path(plan.cell_dir) / "run.log").read_text()


def _switch_cell(base: Path, name: str, env: dict) -> Path:
    plan = plan_cell(base, name, env=env)
    run_cell(plan, kernel_test("""
        a = torch.randn(128, 128, dtype=torch.float16)
        matmul(a, a)
        add(torch.randn(1000), torch.randn(1000))
    """))
    return Path(plan.cell_dir) / "ir"


def _by_kernel(ir: Path) -> dict[str, str]:
    # Cells are compared by kernel name and normalised content, never by cache hash.
    return {path.name.split("-", 1)[1]: normalize(path.read_text(), "ttgir") for path in ir.glob("*.ttgir")}


def test_disable_mma_v3_changes_the_matmul_ttgir_only_when_set(tmp_path):
    baseline = _switch_cell(tmp_path, "baseline", {})
    control = _switch_cell(tmp_path, "control", {"DISABLE_MMA_V3": "0"})
    candidate = _switch_cell(tmp_path, "candidate", {"DISABLE_MMA_V3": "1"})
    hashes = {cell: {row["kernel"]: row["hash"] for row in read_index(cell.parent)}
              for cell in (baseline, control)}
    assert hashes[baseline]["matmul_kernel"] != hashes[control]["matmul_kernel"], \
        "Triton's cache hash covers DISABLE_MMA_V3=0 although the code is the same"
    assert fingerprint(baseline) == fingerprint(control)
    assert fingerprint(candidate) != fingerprint(baseline)
    base, cand = _by_kernel(baseline), _by_kernel(candidate)
    assert base["add_kernel.ttgir"] == cand["add_kernel.ttgir"], "no tl.dot: nothing for the switch to change"
    assert "versionMajor = 3" in base["matmul_kernel.ttgir"] and "warp_group_dot" in base["matmul_kernel.ttgir"]
    assert "versionMajor = 2" in cand["matmul_kernel.ttgir"] and "warp_group_dot" not in cand["matmul_kernel.ttgir"]


def test_index_rows_sorted_by_kernel_then_hash_with_unlaunched_variants():
    text = ir_capture.index_text({"bb": ("add_kernel", ("ttir",)), "aa": ("mm", ("ttgir", "ptx")),
                                  "cc": ("add_kernel", ())}, Counter({"cc": 5}))
    assert text == ("hash\tkernel\tlaunches\tstages\n"
                    "bb\tadd_kernel\t0\tttir\n"
                    "cc\tadd_kernel\t5\t\n"
                    "aa\tmm\t0\tttgir,ptx\n")


def test_an_existing_compilation_listener_is_chained_and_restored(tmp_path):
    seen = []

    def earlier(**kwargs):
        seen.append(kwargs["metadata"]["name"])

    stage_file = tmp_path / "k.ttgir"
    stage_file.write_text("module {}\n")
    ctx = SimpleNamespace(cell_dir=tmp_path / "cell", backend=CpuBackend(), log=CellLog(tmp_path / "run.log"))
    before = knobs.compilation.listener
    knobs.compilation.listener = earlier
    try:
        plugin = ir_capture.make(ctx)
        plugin.pytest_configure(None)
        knobs.compilation.listener(src=None, metadata={"hash": "h1", "name": "k"},
                                   metadata_group={"k.ttgir": str(stage_file)}, times=None, cache_hit=True)
        plugin.on_launch(SimpleNamespace(data={"name": "stray", "function": 99}))
        plugin.pytest_sessionfinish(None)
        plugin.pytest_unconfigure(None)
        assert knobs.compilation.listener is earlier
    finally:
        knobs.compilation.listener = before
    assert seen == ["k"]
    assert (tmp_path / "cell" / "ir" / "h1-k.ttgir").read_text() == "module {}\n"
    assert "launches not joinable to a variant: stray=1" in (tmp_path / "run.log").read_text()
    assert plugin.on_launch not in knobs.runtime.launch_enter_hook.calls
