"""Correctness on the configs that were timed, and the parallel compile warm-up, with real
compilation through the compile-only driver.

A cell runs as the worker runs it: one process, the benchmark session with the planned
plugins, then the correctness session with `campaign.worker.cell.correctness_plugins`
(the compile-only driver added, since the worker itself runs no correctness session on
a backend that executes nothing). Where a *measured* choice is needed, the tuner gets a
benchmarker with fixed timings (a clock stand-in) that still compiles what it is handed.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cellrun import DEMO_DIR, environment, kernel_test, plan_cell

from campaign.contract.cellfiles import AutotuneFile

DRIVER = textwrap.dedent("""\
    import importlib, json, sys
    from pathlib import Path
    import pytest
    from campaign.contract.plans import CellPlan
    from campaign.backends import get_backend
    from campaign.contract.canonical import read_json
    from campaign.plugins import compile_only
    from campaign.worker import cell
    from campaign.worker.context import CellContext

    plan = CellPlan.model_validate(read_json(Path(sys.argv[1])))
    ctx = CellContext.for_cell(plan, get_backend(plan.terms.device.backend))
    flags = ["-q", "-p", "no:cacheprovider"]
    plugins = [importlib.import_module(name).make(ctx) for name in plan.plugins]
    rc = int(pytest.main([sys.argv[2], *flags], plugins=plugins))
    if rc == 0 and len(sys.argv) > 3:
        session = [compile_only.make(ctx), *cell.correctness_plugins(plan, print, ctx)]
        rc = int(pytest.main([sys.argv[3], *flags], plugins=session))
    # what the worker writes into result.json's markers
    Path(plan.cell_dir, "counts.json").write_text(json.dumps(ctx.log.counts))
    sys.exit(rc)
""")

BENCH = """
    a = torch.randn(128, 128, dtype=torch.float16)
    matmul(a, a)
"""
# 128 was timed by the benchmark session; 256 only correctness meets
CORRECT = """
    from demo_kernels import matmul_kernel
    for n in (128, 256):
        a = torch.randn(n, n, dtype=torch.float16)
        matmul(a, a)
        assert matmul_kernel.best_config.kwargs["BLOCK_M"] == {block}[n], (n, matmul_kernel.best_config)
"""
KEY_128 = "(128, 128, 128, 'torch.float16', 'torch.float16', 'torch.float16')"
KEY_256 = "(256, 256, 256, 'torch.float16', 'torch.float16', 'torch.float16')"
THIRD = {"kwargs": {"BLOCK_K": 64, "BLOCK_M": 64, "BLOCK_N": 64}, "num_warps": 4, "num_stages": 3,
         "num_ctas": 1, "maxnreg": None}


def run_sessions(plan, bench: str, correct: str | None = None) -> subprocess.CompletedProcess:
    cell_dir = Path(plan.cell_dir)
    work = cell_dir / "work"
    work.mkdir()
    (work / "driver.py").write_text(DRIVER, encoding="utf-8")
    (work / "test_bench_body.py").write_text(bench, encoding="utf-8")
    argv = [sys.executable, str(work / "driver.py"), str(cell_dir / "task.json"), str(work / "test_bench_body.py")]
    if correct is not None:
        (work / "test_correct_body.py").write_text(correct, encoding="utf-8")
        argv.append(str(work / "test_correct_body.py"))
    proc = subprocess.run(argv, cwd=work, env=environment(plan, work), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"argv {argv} rc {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def read(plan, name: str) -> dict:
    data = json.loads((Path(plan.cell_dir) / name).read_text())
    AutotuneFile.model_validate(data)
    return data


def keyed(entries) -> dict:
    return {e["key"]: e["config"] for e in entries}


def fallback_lines(plan) -> list[str]:
    return [line for line in (Path(plan.cell_dir) / "run.log").read_text().splitlines()
            if line.startswith("AUTOTUNE_REPLAY_FALLBACK")]


# -- correctness without re-tuning ----------------------------------------------------------

@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A recording cell of BENCH with a correctness session over both keys: read as it is by the
    recording test, copied by the replaying test, which steers an entry of its own copy, and by the
    missing-key test, which copies its benchmark recording alone."""
    plan = plan_cell(tmp_path_factory.mktemp("recorded"), "baseline")
    run_sessions(plan, kernel_test(BENCH), kernel_test(CORRECT.format(block={128: 128, 256: 128})))
    return plan


def test_recording_cell_records_the_correctness_shapes_without_re_tuning_the_timed_ones(recorded):
    plan = recorded
    bench, correct = read(plan, "autotune.json"), read(plan, "autotune-correctness.json")
    assert (correct["mode"], correct["session"], correct["fallbacks"]) == ("record", "correctness", [])
    assert set(keyed(correct["entries"])) == {KEY_128, KEY_256}
    assert keyed(correct["entries"])[KEY_128] == keyed(bench["entries"])[KEY_128]
    assert correct["tuning_runs"] == 1, "the timed key is read back from the tuner, only the new one is decided"


def test_replaying_cell_runs_correctness_on_the_recorded_configs_and_tunes_nothing(recorded, tmp_path):
    shutil.copytree(recorded.cell_dir, tmp_path / "baseline", symlinks=True)
    record = recorded.model_copy(update={"cell_dir": str(tmp_path / "baseline")})
    # steer the correctness-only key: a config first-config would never pick shows it was replayed
    recorded = Path(record.cell_dir) / "autotune-correctness.json"
    data = read(record, "autotune-correctness.json")
    data["entries"] = [{**e, "config": THIRD} if e["key"] == KEY_256 else e for e in data["entries"]]
    recorded.chmod(0o644)
    recorded.write_text(json.dumps(data))
    # measured on the compile-only driver: any tuning at all would raise NothingToTime
    replay = plan_cell(tmp_path, "candidate", policy="measured", mode="replay", cell="candidate",
                       replay_file=Path(record.cell_dir) / "autotune.json", env={"DISABLE_MMA_V3": "1"})
    run_sessions(replay, kernel_test(BENCH), kernel_test(CORRECT.format(block={128: 128, 256: 64})))
    correct = read(replay, "autotune-correctness.json")
    assert (correct["mode"], correct["session"], correct["fallbacks"], correct["tuning_runs"]) == (
        "replay", "correctness", [], 0)
    assert keyed(correct["entries"]) == {KEY_128: keyed(read(record, "autotune.json")["entries"])[KEY_128],
                                         KEY_256: THIRD}
    assert fallback_lines(replay) == []


def test_a_correctness_key_missing_from_the_recording_is_a_counted_fallback(recorded, tmp_path):
    # a recording cell that ran no correctness session: the shared recording's benchmark file alone
    # (its benchmark session is BENCH's), nothing recorded for 256
    recording = tmp_path / "baseline" / "autotune.json"
    recording.parent.mkdir()
    shutil.copyfile(Path(recorded.cell_dir) / "autotune.json", recording)
    assert not (recording.parent / "autotune-correctness.json").exists()
    replay = plan_cell(tmp_path, "control", mode="replay", cell="control", replay_file=recording,
                       env={"DISABLE_MMA_V3": "0"})
    run_sessions(replay, kernel_test(BENCH), kernel_test(CORRECT.format(block={128: 128, 256: 128})))
    correct = read(replay, "autotune-correctness.json")
    assert [e["key"] for e in correct["entries"]] == [KEY_128]
    assert [e["key"] for e in correct["fallbacks"]] == [KEY_256]
    assert fallback_lines(replay) == [f"AUTOTUNE_REPLAY_FALLBACK reason=key_missing "
                                      f"kernel=demo_kernels.matmul_kernel key={KEY_256}"]
    # counted on the cell's one log, as a benchmark fallback is: result.json's markers, status.tsv, X
    counts = json.loads((Path(replay.cell_dir) / "counts.json").read_text())
    assert counts["AUTOTUNE_REPLAY_FALLBACK"] == 1


# -- parallel compile warm-up ---------------------------------------------------------------

# Three BLOCK configs; BENCHED records, at each benchmark, how many variants the JIT already
# holds compiled. Measured timings are fixed: BLOCK=256 wins. DECLINE names a BLOCK whose
# warm-up compile Triton's own jit_cache_hook declines (the benchmark compiles it inline);
# ASSERT one whose compile fails on a static_assert everywhere.
WARM_COPY = """
import sys
sys.path.insert(0, {demo!r})
import torch, triton, triton.language as tl
from triton import knobs
from triton.runtime import driver

BENCHED = []
TIMES = {{128: 3.0, 256: 1.0, 512: 2.0}}
CONFIGS = [triton.Config({{"BLOCK": b}}, num_warps=4) for b in (128, 256, 512)]


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr, BAD: tl.constexpr):
    tl.static_assert(BLOCK != BAD)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


def compiled():
    return len(copy_kernel.device_caches[driver.active.get_current_device()][0])


def fixed_bench(kernel_call, quantiles):
    BENCHED.append(compiled())
    kernel_call()
    return [TIMES[BLOCKS.pop(0)]] * 3


BLOCKS = [128, 256, 512]


def decline(*, key, repr, fn, compile, is_manual_warmup, already_compiled):
    return is_manual_warmup and {decline} in compile["constants"].values()


knobs.runtime.jit_cache_hook = decline
tuned = triton.autotune(configs=CONFIGS, key=["n"], do_bench=fixed_bench)(copy_kernel)


def test_cell():
    x = torch.randn(4096)
    tuned[lambda meta: (triton.cdiv(4096, meta["BLOCK"]),)](x, torch.empty_like(x), 4096, BAD={bad})
    assert BENCHED == {benched}, BENCHED
    assert tuned.best_config.kwargs == {{"BLOCK": 256}}
"""


def warm_copy(decline: int = 7777, bad: int = 9999, benched: list | None = None) -> str:
    return WARM_COPY.format(demo=str(DEMO_DIR), decline=decline, bad=bad, benched=benched)


def copy_blocks(plan) -> list[str]:
    texts = [p.read_text() for p in (Path(plan.cell_dir) / "ir").glob("*-copy_kernel.ttgir")]
    return sorted(size for text in texts for size in ("128", "256", "512") if f"tensor<{size}x" in text)


def run_log(plan) -> str:
    return (Path(plan.cell_dir) / "run.log").read_text()


def test_every_config_is_compiled_before_the_first_benchmark_and_the_winner_is_unchanged(tmp_path):
    plan = plan_cell(tmp_path, "baseline", policy="measured")
    # all three variants are compiled when the first config is benchmarked
    run_sessions(plan, warm_copy(benched=[3, 3, 3]))
    data = read(plan, "autotune.json")
    assert [e["config"]["kwargs"] for e in data["entries"]] == [{"BLOCK": 256}]
    assert data["tuning_runs"] == 3
    assert [(w["configs"], w["warmed"], w["cold"]) for w in data["warmup"]] == [(3, 3, [])]
    assert copy_blocks(plan) == ["128", "256", "512"], "one variant per config: nothing added, nothing lost"
    assert "AUTOTUNE_WARMUP_PARTIAL" not in run_log(plan)


def test_a_config_that_did_not_warm_is_compiled_inline_and_counted_by_name(tmp_path):
    plan = plan_cell(tmp_path, "baseline", policy="measured")
    # BLOCK=512's warm-up is declined: two variants compiled when benchmarking starts, the third inline
    run_sessions(plan, warm_copy(decline=512, benched=[2, 2, 2]))
    data = read(plan, "autotune.json")
    assert [e["config"]["kwargs"] for e in data["entries"]] == [{"BLOCK": 256}]
    assert [(w["configs"], w["warmed"], w["cold"]) for w in data["warmup"]] == [
        (3, 2, ["BLOCK=512,num_warps=4,num_stages=3,num_ctas=1"])]
    assert copy_blocks(plan) == ["128", "256", "512"]
    partial = [line for line in run_log(plan).splitlines() if line.startswith("AUTOTUNE_WARMUP_PARTIAL")]
    assert len(partial) == 1 and "cold=1 of=3" in partial[0] and "BLOCK=512" in partial[0]
    assert "cache hook declined" in partial[0]


def test_a_config_whose_compile_fails_is_cold_with_its_error_and_loses_as_before(tmp_path):
    plan = plan_cell(tmp_path, "baseline", policy="measured")
    # BLOCK=512 fails to compile in the warm-up and again inline, where Triton's tuner times it inf
    run_sessions(plan, warm_copy(bad=512, benched=[2, 2, 2]))
    data = read(plan, "autotune.json")
    assert [e["config"]["kwargs"] for e in data["entries"]] == [{"BLOCK": 256}]
    [entry] = data["warmup"]
    assert (entry["configs"], entry["warmed"]) == (3, 2) and entry["cold"] == ["BLOCK=512,num_warps=4,num_stages=3,num_ctas=1"]
    assert "CompileTimeAssertionFailure" in run_log(plan)
    assert copy_blocks(plan) == ["128", "256"]


def test_the_warm_up_is_counted_as_tuning_by_its_wall_time():
    # its threads' compile times overlap, so summing them as compile would count seconds twice
    from campaign.plugins import warmup
    from campaign.worker import phases

    ticks = iter([10.0, 12.5])
    session = phases.Session(clock=lambda: next(ticks))
    with phases.watching(session):
        done = warmup.warm(None, [], (), {}, workers=2)
    assert (done.configs, done.cold, session.tuning_s, session.compile_s) == (0, (), 2.5, 0.0)
    assert warmup.warm.__module__ == warmup.__name__, "restored after the session"


def test_compiling_every_config_for_the_ir_evidence_is_counted_as_compile_by_its_wall_time():
    # first-config benchmarks nothing: its every-config compile is compile, never tuning
    from campaign.plugins import warmup
    from campaign.worker import phases

    ticks = iter([10.0, 10.2, 11.5])          # its own start, the warm-up's inside it, its end
    session = phases.Session(clock=lambda: next(ticks))
    with phases.watching(session):
        done = warmup.compile_every(None, [], (), {}, workers=2)
    assert (done.configs, done.cold, session.tuning_s, session.compile_s) == (0, (), 0.0, 1.5)
    assert warmup.compile_every.__module__ == warmup.__name__, "restored after the session"


# A config's pre_hook may set what the compile specialises on (FlagGems' Hopper mm sets its TMA
# descriptors' block shapes from the config's BLOCK sizes): the warm-up runs each config's hook
# before handing its compile off, with the names Autotuner._bench gives it.
HOOKED_COPY = WARM_COPY.replace(
    'CONFIGS = [triton.Config({{"BLOCK": b}}, num_warps=4) for b in (128, 256, 512)]',
    'HOOKED = []\n'
    'def hook(nargs):\n'
    '    HOOKED.append((nargs["BLOCK"], nargs["n"], nargs["BAD"]))\n'
    'CONFIGS = [triton.Config({{"BLOCK": b}}, num_warps=4, pre_hook=hook) for b in (128, 256, 512)]',
).replace(
    "    BENCHED.append(compiled())\n",
    "    BENCHED.append((compiled(), sorted(set(HOOKED))))\n",
)


def test_the_warm_up_runs_each_configs_pre_hook_with_the_calls_arguments(tmp_path):
    plan = plan_cell(tmp_path, "baseline", policy="measured")
    hooked = [[128, 4096, 9999], [256, 4096, 9999], [512, 4096, 9999]]
    seen = [(3, [tuple(h) for h in hooked])] * 3
    run_sessions(plan, HOOKED_COPY.format(demo=str(DEMO_DIR), decline=7777, bad=9999, benched=seen))
    data = read(plan, "autotune.json")
    assert [(w["configs"], w["warmed"], w["cold"]) for w in data["warmup"]] == [(3, 3, [])]
    assert [e["config"]["kwargs"] for e in data["entries"]] == [{"BLOCK": 256}]
