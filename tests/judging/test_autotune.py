"""Autotune record and replay, with real compilation through the compile-only driver.

Timing is the one thing a CPU cannot do; where a test needs a *measured* choice, the
tuner is given a benchmarker with fixed timings (a clock stand-in), which still
compiles every config it is handed.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from cellrun import kernel_test, plan_cell, run_cell

from campaign.contract.cellfiles import AutotuneFile
from campaign.plugins import autotune
from campaign.worker.context import CellLog

MATMULS = """
    for n in (128, 256, 128):
        a = torch.randn(n, n, dtype=torch.float16)
        matmul(a, a)
"""
FIRST = {"kwargs": {"BLOCK_K": 64, "BLOCK_M": 128, "BLOCK_N": 128}, "num_warps": 8, "num_stages": 3,
         "num_ctas": 1, "maxnreg": None}
THIRD = {"kwargs": {"BLOCK_K": 64, "BLOCK_M": 64, "BLOCK_N": 64}, "num_warps": 4, "num_stages": 3,
         "num_ctas": 1, "maxnreg": None}

# A copy kernel tuned over BLOCK with a fixed-timing benchmarker: BLOCK=256 wins when measured.
# LibTuner reproduces FlagGems 5.0.2's run() where record/replay depend on it: a persistent
# cache (sqlite there, a JSON file here) read through `in`/`[]`, written only on a miss,
# never deleted from, and a key built by get_key.
TUNED_COPY = """
import json, os, sys
sys.path.insert(0, {demo!r})
import torch, triton, triton.language as tl
from triton.runtime.autotuner import Autotuner

BENCHED = []
CONFIGS = [triton.Config({{"BLOCK": b}}, num_warps=4) for b in (128, 256, 512)]


def fixed_bench(kernel_call, quantiles):
    kernel_call()                                   # compiles the config, as a real benchmark would
    BENCHED.append(1)
    return [(3.0, 1.0, 2.0)[len(BENCHED) - 1]] * 3  # configs arrive in declared order: 256 is fastest


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


class DiskCache:
    def __init__(self, path):
        self.path = path

    def _load(self):
        return json.load(open(self.path)) if os.path.exists(self.path) else {{}}

    def __contains__(self, key):
        return repr(key) in self._load()

    def __getitem__(self, key):
        return triton.Config(self._load()[repr(key)], num_warps=4)

    def __setitem__(self, key, config):
        data = self._load()
        data[repr(key)] = config.kwargs
        json.dump(data, open(self.path, "w"))


class LibTuner(Autotuner):
    def __init__(self, fn, path):
        super().__init__(fn, fn.arg_names, CONFIGS, ["n"], None, None, do_bench=fixed_bench)
        self.cache = DiskCache(path)

    def get_key(self, args):
        key = tuple(args[k] for k in self.keys if k in args)
        return key + tuple(str(arg.dtype) for arg in args.values() if hasattr(arg, "dtype"))

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        key = self.get_key({{**self.nargs, **kwargs}})
        if key not in self.cache:
            timings = {{config: self._bench(*args, config=config, **kwargs) for config in self.prune_configs(kwargs)}}
            self.cache[key] = min(timings, key=timings.get)
        config = self.cache[key]
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return ret


plain = triton.autotune(configs=CONFIGS, key=["n"], do_bench=fixed_bench)(copy_kernel)
lib = LibTuner(copy_kernel, os.path.join(os.environ["FLAGGEMS_CACHE_DIR"], "tuned.json"))


def test_cell():
    x = torch.randn(4096)
    {tuner}[lambda meta: (triton.cdiv(4096, meta["BLOCK"]),)](x, torch.empty_like(x), 4096)
    assert len(BENCHED) == {benched}
"""


def tuned_copy(tuner: str, benched: int) -> str:
    from cellrun import DEMO_DIR
    return TUNED_COPY.format(demo=str(DEMO_DIR), tuner=tuner, benched=benched)


def result(plan) -> dict:
    return json.loads((Path(plan.cell_dir) / "autotune.json").read_text())


def log(plan) -> str:
    return (Path(plan.cell_dir) / "run.log").read_text()


def copy_blocks(plan) -> set[str]:
    """Which BLOCK the copy kernel was compiled with, read from its TTGIR."""
    texts = [p.read_text() for p in (Path(plan.cell_dir) / "ir").glob("*-copy_kernel.ttgir")]
    return {size for size in ("128", "256", "512") for text in texts if f"tensor<{size}x" in text}


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    plan = plan_cell(tmp_path_factory.mktemp("record"), "baseline")
    run_cell(plan, kernel_test(MATMULS))
    return plan


def test_record_first_config_keeps_one_entry_per_key(recording):
    data = result(recording)
    AutotuneFile.model_validate(data)
    assert (data["mode"], data["policy"], data["fallbacks"]) == ("record", "first-config", [])
    assert [e["key"] for e in data["entries"]] == [
        "(128, 128, 128, 'torch.float16', 'torch.float16', 'torch.float16')",
        "(256, 256, 256, 'torch.float16', 'torch.float16', 'torch.float16')"]
    assert all(e["config"] == FIRST and e["tuner"] == "triton" for e in data["entries"])
    assert {e["kernel"] for e in data["entries"]} == {"demo_kernels.matmul_kernel"}
    assert data["tuning_runs"] == 2, "first-config decides each key once, untimed"


def test_replay_injects_every_key_and_tunes_nothing(recording, tmp_path):
    plan = plan_cell(tmp_path, "candidate", mode="replay", replay_file=Path(recording.cell_dir) / "autotune.json",
                     env={"DISABLE_MMA_V3": "1"}, cell="candidate")
    run_cell(plan, kernel_test(MATMULS))
    data = result(plan)
    assert (data["mode"], data["source"], data["fallbacks"], data["tuning_runs"]) == (
        "replay", "matmul/r1/baseline", [], 0)
    assert data["entries"] == result(recording)["entries"]
    assert "AUTOTUNE_REPLAY_FALLBACK" not in log(plan)


def test_replay_overrides_the_tuner_and_announces_missing_keys(recording, tmp_path):
    data = result(recording)
    steered, dropped = data["entries"]
    steered["config"] = THIRD
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({**data, "entries": [steered]}))
    plan = plan_cell(tmp_path, "control", mode="replay", replay_file=partial, cell="control")
    run_cell(plan, kernel_test(MATMULS))
    out = result(plan)
    assert [e["config"] for e in out["entries"]] == [THIRD]
    assert [(e["key"], e["config"]) for e in out["fallbacks"]] == [(dropped["key"], FIRST)]
    assert out["tuning_runs"] == 1
    markers = [line for line in log(plan).splitlines() if line.startswith("AUTOTUNE_REPLAY_FALLBACK")]
    assert markers == [f"AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=demo_kernels.matmul_kernel "
                       f"key={dropped['key']}"]
    # every config is compiled (first-config); the launched variant of the steered key is the injected one
    ir = Path(plan.cell_dir) / "ir"
    launched = [line.split("\t")[0] for line in (ir / "index.tsv").read_text().splitlines()[1:]
                if line.split("\t")[1] == "matmul_kernel" and int(line.split("\t")[2]) > 0]
    texts = [next(ir.glob(f"{hash_}-matmul_kernel.ttgir")).read_text() for hash_ in launched]
    assert sum("tensor<64x64xf32" in text for text in texts) == 1, "the injected 64x64 config was not the one run"


def test_measured_record_counts_every_benchmark_and_replay_runs_none(tmp_path):
    record = plan_cell(tmp_path, "baseline", policy="measured")
    run_cell(record, tuned_copy("plain", benched=3))
    data = result(record)
    assert [e["config"]["kwargs"] for e in data["entries"]] == [{"BLOCK": 256}]
    assert data["tuning_runs"] == 3
    replay = plan_cell(tmp_path, "candidate", policy="measured", mode="replay",
                       replay_file=Path(record.cell_dir) / "autotune.json", cell="candidate")
    run_cell(replay, tuned_copy("plain", benched=0))
    assert (result(replay)["tuning_runs"], copy_blocks(replay)) == (0, {"256"})


def test_libtuner_warm_cache_is_read_back_on_record_and_overwritten_on_replay(tmp_path):
    key = "(4096, 'torch.float32', 'torch.float32')"
    record = plan_cell(tmp_path, "baseline", policy="measured")
    Path(record.tuner_cache_dir).mkdir()
    # Warm: an earlier run left BLOCK=512 for this key; LibTuner never writes it again.
    (Path(record.tuner_cache_dir) / "tuned.json").write_text(json.dumps({key: {"BLOCK": 512}}))
    run_cell(record, tuned_copy("lib", benched=0))
    data = result(record)
    assert [(e["tuner"], e["key"], e["config"]["kwargs"]) for e in data["entries"]] == [
        ("libtuner", key, {"BLOCK": 512})]
    entry = {**data["entries"][0], "config": {**data["entries"][0]["config"], "kwargs": {"BLOCK": 128}}}
    recorded = tmp_path / "recorded.json"
    recorded.write_text(json.dumps({**data, "entries": [entry]}))
    replay = plan_cell(tmp_path, "candidate", policy="measured", mode="replay", replay_file=recorded,
                       cell="candidate")
    Path(replay.tuner_cache_dir).mkdir()
    (Path(replay.tuner_cache_dir) / "tuned.json").write_text(json.dumps({key: {"BLOCK": 512}}))
    run_cell(replay, tuned_copy("lib", benched=0))
    assert (result(replay)["tuning_runs"], copy_blocks(replay)) == (0, {"128"})
    assert json.loads((Path(replay.tuner_cache_dir) / "tuned.json").read_text()) == {key: {"BLOCK": 128}}


def test_replay_without_its_recording_is_refused(tmp_path):
    plan = plan_cell(tmp_path, "candidate", mode="replay", replay_file=tmp_path / "absent.json", cell="candidate")
    ctx = SimpleNamespace(plan=plan, cell_dir=Path(plan.cell_dir), log=CellLog(tmp_path / "run.log"))
    with pytest.raises(pytest.UsageError, match="absent.json.*does not exist"):
        autotune.make(ctx).pytest_configure(None)


def test_config_round_trip_prefers_the_tuners_own_config():
    import triton

    hooked = triton.Config({"BLOCK": 64}, num_warps=2, pre_hook=lambda nargs: None)
    tuned = autotune.to_tuned(hooked)
    assert autotune.from_tuned(tuned, [triton.Config({"BLOCK": 32}), hooked]) is hooked
    rebuilt = autotune.from_tuned(tuned, [])
    assert (rebuilt.kwargs, rebuilt.num_warps, rebuilt.pre_hook) == ({"BLOCK": 64}, 2, None)


# A matmul whose first config cannot use wgmma (32 rows: below one warpgroup's 64) and whose
# second does: DISABLE_MMA_V3 leaves the first config's code alone and changes the second's, as
# with FlagGems 5.0.2's mm, bmm and baddbmm on the H200 (first config 32x32x32, 4 warps).
SMALL_FIRST = """
import triton
from demo_kernels import matmul_kernel

CONFIGS = [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4, num_stages=2),
           triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3)]
small_first = triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(matmul_kernel.fn)
a = torch.randn(256, 256, dtype=torch.float16)
c = torch.empty_like(a)
small_first[lambda meta: (triton.cdiv(256, meta["BLOCK_M"]), triton.cdiv(256, meta["BLOCK_N"]))](
    a, a, c, 256, 256, 256, a.stride(0), a.stride(1), a.stride(0), a.stride(1), c.stride(0), c.stride(1))
"""


@pytest.fixture(scope="module")
def small_first_baseline(tmp_path_factory):
    """The baseline cell of SMALL_FIRST, first-config: read by the test of every config's code and by
    the test replaying measured winners, each of which ran this same cell for itself before."""
    plan = plan_cell(tmp_path_factory.mktemp("small-first"), "baseline", cell="baseline")
    run_cell(plan, kernel_test(SMALL_FIRST))
    return plan


def test_first_config_cells_hold_every_configs_code_so_a_switch_past_the_first_config_is_a_change(
        small_first_baseline, tmp_path):
    from campaign.judging import irevidence

    cells = {}
    for cell, env in (("baseline", {}), ("candidate", {"DISABLE_MMA_V3": "1"})):
        if cell == "baseline":
            plan = small_first_baseline
        else:
            plan = plan_cell(tmp_path, cell, env=env, cell=cell)
            run_cell(plan, kernel_test(SMALL_FIRST))
        cells[cell] = plan
        data = result(plan)
        assert [(w["configs"], w["warmed"], w["cold"]) for w in data["warmup"]] == [(2, 2, [])]
        assert [e["config"]["kwargs"]["BLOCK_M"] for e in data["entries"]] == [32], "the first config is the one run"
        rows = [line.split("\t") for line in (Path(plan.cell_dir) / "ir" / "index.tsv").read_text().splitlines()[1:]]
        assert sorted(int(r[2]) for r in rows if r[1] == "matmul_kernel") == [0, 1], "two variants, one launched"
    texts = {cell: " ".join(p.read_text() for p in (Path(plan.cell_dir) / "ir").glob("*-matmul_kernel.ttgir"))
             for cell, plan in cells.items()}
    assert texts["baseline"].count("versionMajor = 3") == 1 and "versionMajor = 3" not in texts["candidate"]
    prints = {cell: irevidence.read_cell_ir(Path(plan.cell_dir) / "ir") for cell, plan in cells.items()}
    change = irevidence.ir_change(False, ("baseline", "candidate"), prints)
    assert change.state == irevidence.DIFFER, "the first config alone is unchanged; the second config's code is not"


def test_a_first_config_cell_replaying_measured_winners_holds_those_winners_code_alone(small_first_baseline, tmp_path):
    """The compile-only backend replaying a device root's measured winners must give the
    device's IR (tests/gpu/test_cell_capture_gpu.py checks it on the H200): the winner's
    code, not every config's."""
    from campaign.judging import irevidence

    data = result(small_first_baseline)
    second = {**data["entries"][0]["config"], "kwargs": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
              "num_warps": 8, "num_stages": 3}
    measured = tmp_path / "measured.json"     # as a device cell would have recorded: the second config won
    measured.write_text(json.dumps({**data, "policy": "measured", "warmup": [],
                                    "entries": [{**data["entries"][0], "config": second}]}))
    replay = plan_cell(tmp_path, "candidate", mode="replay", replay_file=measured, cell="candidate")
    run_cell(replay, kernel_test(SMALL_FIRST))
    replayed = result(replay)
    assert (replayed["replayed"], replayed["warmup"], replayed["tuning_runs"]) == ("measured", [], 0)
    variants = list((Path(replay.cell_dir) / "ir").glob("*-matmul_kernel.ttgir"))
    assert len(variants) == 1 and "versionMajor = 3" in variants[0].read_text(), "the 128x128 winner's code alone"
    assert irevidence.untimed_coverage(AutotuneFile.model_validate(replayed)) is None
    assert irevidence.untimed_coverage(AutotuneFile.model_validate(data)) == irevidence.EVERY_CONFIG
