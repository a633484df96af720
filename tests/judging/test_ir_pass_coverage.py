"""What an untimed cell's IR holds of each autotune key, and the screen note that says it.

Untimed (first-config) cells compile every config of every key they meet (`campaign.plugins.warmup
.compile_every`); roots written before that hold each key's first config only, and a NO_IR_DIFF
resting on such an IR pass must say so, on a fresh screen and on a rescore alike.
"""
from __future__ import annotations

from campaign.contract.cellfiles import AutotuneEntry, AutotuneFile, TunedConfig, WarmupEntry
from campaign.judging import irevidence, screentable
from campaign.judging.screening import Facts, Side

CONFIG = TunedConfig(kwargs={"BLOCK_M": 32}, num_warps=4, num_stages=2)
KEY = "(1024, 1024, 1024, 'float16')"


def _file(policy: str = "first-config", warmup: tuple[WarmupEntry, ...] = (), mode: str = "record") -> AutotuneFile:
    entry = AutotuneEntry(tuner="libtuner", kernel="mm_kernel", key=KEY, config=CONFIG)
    return AutotuneFile(mode=mode, policy=policy, entries=(entry,), tuning_runs=1, warmup=warmup)


def test_an_untimed_cells_coverage_is_read_from_its_autotune_record():
    every = WarmupEntry(kernel="mm_kernel", key=KEY, configs=162, warmed=162)
    some = WarmupEntry(kernel="mm_kernel", key=KEY, configs=162, warmed=161, cold=("BLOCK_M=256,num_warps=8",))
    other_key = WarmupEntry(kernel="mm_kernel", key="(64, 64, 64, 'float16')", configs=162, warmed=162)
    assert irevidence.untimed_coverage(_file(warmup=(every,))) == irevidence.EVERY_CONFIG
    assert irevidence.untimed_coverage(_file(warmup=(every,), mode="replay")) == irevidence.EVERY_CONFIG
    assert irevidence.untimed_coverage(_file(warmup=(some,))) == irevidence.SOME_CONFIGS
    assert irevidence.untimed_coverage(_file()) == irevidence.FIRST_CONFIG_ONLY, "a root from before every-config"
    assert irevidence.untimed_coverage(_file(warmup=(other_key,))) == irevidence.FIRST_CONFIG_ONLY
    assert irevidence.untimed_coverage(AutotuneFile(mode="record", policy="first-config", entries=())) == \
        irevidence.EVERY_CONFIG, "no tuned key: nothing to pick from"
    assert irevidence.untimed_coverage(_file(policy="measured")) is None
    assert irevidence.untimed_coverage(None) is None
    assert irevidence.weakest_coverage([irevidence.EVERY_CONFIG, None, irevidence.FIRST_CONFIG_ONLY]) == \
        irevidence.FIRST_CONFIG_ONLY
    assert irevidence.weakest_coverage([None, None]) == irevidence.EVERY_CONFIG


def _facts(coverage: str, **kw) -> Facts:
    sides = {c: Side(cell=c, rc=0, rc_name="ok", elapsed_s=2.0, rows=3, fingerprint="a", ir_files=5)
             for c in ("baseline", "candidate")}
    return Facts(workload="mm", op="mm", backend="cuda", ir_stage="ttgir", dtypes=("float16",), dtypes_own=True,
                 sides=sides, caliber={}, ir_pass_coverage=coverage, **kw)


def test_the_screen_note_says_what_the_ir_pass_compiled():
    fresh = screentable.row(_facts(irevidence.EVERY_CONFIG, ir_pass_only=True))
    assert fresh["verdict"] == "NO_IR_DIFF" and fresh["note"].endswith(
        "not timed: IR unchanged (IR pass: every autotune config of each key compiled, untimed)")
    old = screentable.row(_facts(irevidence.FIRST_CONFIG_ONLY, ir_pass_only=True))
    assert old["verdict"] == "NO_IR_DIFF" and old["note"].endswith(
        "(IR pass: each autotune key's first config only, untimed: configs past the first are not in its evidence)")
    partial = screentable.row(_facts(irevidence.SOME_CONFIGS, ir_pass_only=True))
    assert "each key that compiled, untimed; autotune.json names the others" in partial["note"]
    disagreed = screentable.row(_facts(irevidence.FIRST_CONFIG_ONLY, ir_pass_change=irevidence.DIFFER))
    assert "the IR pass (each autotune key's first config only, untimed: configs past the first are not in its " \
        "evidence) said IR_CHANGED: it disagreed, round 1's verdict stands" in disagreed["note"]
