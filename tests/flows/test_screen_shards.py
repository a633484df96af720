"""`campaign screen MANIFEST --shards N`: a screen longer than one job's window, as N screen roots of whole
workloads, each screened and sealed on its own, read as one table; `--resume ROOT ROOT...` screens a set's
unsealed shards in turn and reads its sealed ones. Real compile-only screens through the CLI."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT_ROOT, run_cli
from runroots import demo, fault, manifest, wait_until

from campaign.contract import status
from campaign.contract.manifest import Manifest
from campaign.contract.runroot import RunRoot
from campaign.contract.yamlio import load_text
from campaign.judging import screentable


def _tables(out: str, count: int) -> list[Path]:
    """The last ``count`` stdout lines: the shards' screen.tsv, shard 1 first."""
    return [Path(line) for line in out.strip().splitlines()[-count:]]


def _workloads(root: Path) -> list[str]:
    return sorted({task.workload for task in RunRoot(root).matrix.tasks})


def test_a_screen_as_two_shards_seals_each_and_reads_as_one_table_and_one_emitted_manifest(tmp_path: Path):
    path = manifest(tmp_path, [demo("add", float16=True), demo("softmax", float16=True), demo("matmul", float16=True)],
                    campaign="sharded")
    done = run_cli("screen", path, "--shards", "2", "--runs-dir", tmp_path / "runs", "--scratch-dir", tmp_path,
                   "--emit-manifest", tmp_path / "next.yaml")
    assert done.returncode == 0, done.stderr
    roots = [table.parent for table in _tables(done.stdout, 2)]
    assert [root.name.split("-")[2] for root in roots] == ["shard1of2", "shard2of2"], roots
    held = [_workloads(root) for root in roots]
    assert sorted(held[0] + held[1]) == ["add", "matmul", "softmax"] and not set(held[0]) & set(held[1]), held
    for root, names in zip(roots, held):
        found = RunRoot(root)
        assert found.mode == "screen" and found.sealed and found.prepare.shard is not None
        assert run_cli("verify", root).returncode == 0
        # each shard's own table, its own workloads; one summary over the set
        table = screentable.parse((root / "screen.tsv").read_text(encoding="utf-8"))
        assert sorted(r["workload"] for r in table) == names
        assert f"shard {found.prepare.shard.index} of 2: {len(names)} workloads" in done.stdout
    assert "matmul: IR_CHANGED" in done.stdout and "add: NO_IR_DIFF" in done.stdout
    assert "screened 3: IR_CHANGED 1, NO_IR_DIFF 2 (over 2 shards)" in done.stdout
    # one manifest for the set: the changed workload whichever shard screened it, pinned to no root
    text = (tmp_path / "next.yaml").read_text(encoding="utf-8")
    emitted = Manifest.model_validate(load_text(text, "next.yaml")[0])
    assert [w.name for w in emitted.workloads] == ["matmul"]
    assert f"from the 2 shards {roots[0].name}, {roots[1].name}" in text
    assert emitted.defaults.autotune_from is None

    # the sealed set given again: read, nothing run again, the same rows
    before = [(root / "status.tsv").read_bytes() for root in roots]
    again = run_cli("screen", "--resume", *roots)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("sealed, read:") == 2
    assert [(root / "status.tsv").read_bytes() for root in roots] == before
    assert "screened 3: IR_CHANGED 1, NO_IR_DIFF 2 (over 2 shards)" in again.stdout

    # not one whole set: a shard given twice, or a plain screen root beside a shard, is refused by name
    twice = run_cli("screen", "--resume", roots[0], roots[0])
    assert twice.returncode != 0 and "check=shard_twice" in twice.stderr and "check=shard_missing" in twice.stderr


def test_a_sharded_screen_stopped_in_a_shard_resumes_as_a_set_and_runs_no_cell_twice(tmp_path: Path):
    # slow's candidate waits until it is run again (its first attempt set aside): the stop comes there
    # slow the heavier, so shard 1 (LPT): the stop leaves shard 2 not yet started
    slow_first = fault("slow", "test_bench_wait").replace("timeout_s: 120", "timeout_s: 120, weight_s: 10")
    light = demo("add", float16=True).replace("op: add", "op: add, weight_s: 1")
    path = manifest(tmp_path, [slow_first, light], campaign="stopped")
    emitted = tmp_path / "card.yaml"
    proc = subprocess.Popen([sys.executable, "-m", "campaign", "screen", str(path), "--shards", "2",
                             "--runs-dir", str(tmp_path / "runs"), "--scratch-dir", str(tmp_path), "--grace", "1",
                             "--emit-manifest", str(emitted)],
                            cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: next((tmp_path / "runs").glob("*/cells/slow/r0/candidate/task.json"), None), proc,
                   "slow's candidate", 180)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    roots = sorted((tmp_path / "runs").glob("stopped-screen-shard*"))
    assert len(roots) == 2
    slow = next(root for root in roots if "slow" in _workloads(root))
    # every resume line names the whole set and the emitted manifest: one shard resumed alone would seal and
    # emit only its own workloads
    again = f"`campaign screen --resume {roots[0]} {roots[1]} --emit-manifest {emitted}`"
    hints = [line for line in err.splitlines() if "--resume" in line]
    assert len(hints) == 2 and all(again in line for line in hints), err
    assert hints[0].startswith("RUN_INTERRUPTED") and "completes this shard and screens the shards after" in hints[0]
    assert not RunRoot(slow).sealed and not emitted.exists()

    # the shard after the stopped one, resumed alone: allowed (a shard is a root), and said to be its part only
    assert slow == roots[0] and not (roots[1] / "status.tsv").exists()
    alone = run_cli("screen", "--resume", roots[1], "--scratch-dir", tmp_path, "--grace", "1")
    assert alone.returncode == 0, alone.stderr
    assert "note: shard 2 of 2 screened alone: its table and any emitted manifest hold its 1 workloads" in alone.stdout
    assert RunRoot(roots[1]).sealed and not RunRoot(slow).sealed

    resumed = run_cli("screen", "--resume", *roots, "--scratch-dir", tmp_path, "--grace", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert all(RunRoot(root).sealed for root in roots)
    for root in roots:
        rows = status.read(root / "status.tsv")[0]
        settled = [row.task_id for row in rows if row.rc_name == "ok"]
        assert len(settled) == len(set(settled)), f"a cell of {root.name} ran twice: {settled}"
    candidate = slow / "cells" / "slow" / "r0"
    assert (candidate / "candidate.interrupted-1").is_dir() and (candidate / "candidate").is_dir()
    assert status.latest(status.read(slow / "status.tsv")[0])["slow/r0/candidate"].rc_name == "ok"
    assert "(over 2 shards)" in resumed.stdout


def test_shards_apply_to_a_fresh_screen_and_a_set_has_no_json_table(tmp_path: Path):
    path = manifest(tmp_path, [demo("add", float16=True), demo("softmax", float16=True)], campaign="usage")
    resumed = run_cli("screen", "--resume", tmp_path, "--shards", "2")
    assert resumed.returncode == 2 and "--shards applies to a fresh screen" in resumed.stderr
    as_json = run_cli("screen", path, "--shards", "2", "--format", "json", "--runs-dir", tmp_path / "runs")
    assert as_json.returncode == 2 and "--format json is one screen root's table" in as_json.stderr
    assert not (tmp_path / "runs").exists()
    too_many = run_cli("screen", path, "--shards", "3", "--runs-dir", tmp_path / "runs")
    assert too_many.returncode != 0 and "--shards 3: the manifest has 2 workloads" in too_many.stderr
    assert not list((tmp_path / "runs").glob("*"))
