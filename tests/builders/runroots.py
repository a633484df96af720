"""Real prepared roots for the runner's tests: a manifest in tmp_path, `campaign prepare`
as a subprocess, status rows read back. Fault workloads point at
tests/fixtures/workloads/bench_faults.py (their faults fire in the candidate only)."""
from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional, TypeVar

from conftest import PROJECT_ROOT, run_cli

from campaign.contract import status
from campaign.running import runchecks

FAULTS = "tests/fixtures/workloads/bench_faults.py"

T = TypeVar("T")

HEAD = """schema_version: 1
campaign: {campaign}
description: runner test campaign
sources:
  triton: {{version: "3.6.0"}}{extra_sources}
device:
  backend: cpu
  target: "cuda:90"
switch:
  name: DISABLE_MMA_V3
  cells:
    baseline: {{}}
    candidate: {{DISABLE_MMA_V3: "1"}}
  ir_stage: ttgir
timer:
  kind: event
rounds:
  count: {rounds}
  alternate_order: true
  later_only_if_ir_changed: true
measured_launch_floor: 0
defaults:
  timeout_s: 120
{per_process}workloads:
"""


def fault(name: str, function: str, timeout_s: int = 120, canary: bool = False) -> str:
    return (f'  - {{name: {name}, op: add, benchmark: "{FAULTS}::{function}", timeout_s: {timeout_s}'
            + (", canary: true" if canary else "") + "}\n")


# A demo op compiles one set of variants per dtype (matmul: its three configs at each); float16 is the dtype
# whose matmul DISABLE_MMA_V3 reroutes (wgmma to mma v2). A test of the runner or of the IR pass that needs a
# compiled workload, not its dtypes, narrows it to float16: half the compiles.
FLOAT16 = ', dtypes: [float16], reason: "float16 alone: the IR this test reads, at half the compiles"'


def demo(name: str, canary: bool = False, float16: bool = False) -> str:
    return (f"  - {{name: {name}, op: {name}" + (", canary: true" if canary else "") + (FLOAT16 if float16 else "")
            + "}\n")


def manifest(tmp_path: Path, workloads: list[str], rounds: int = 1, campaign: str = "runner-test",
             extra_sources: str = "", per_process: Optional[int] = None, lanes: Optional[int] = None) -> Path:
    """``per_process``: defaults.workloads_per_process; None (the default) leaves the bound to the
    runner, as a manifest does; 1 pins one process per cell where a test is about that.
    ``lanes``: defaults.ir_pass_lanes (None: the runner's choice)."""
    path = tmp_path / f"{campaign}.yaml"
    line = "" if per_process is None else f"  workloads_per_process: {per_process}\n"
    line += "" if lanes is None else f"  ir_pass_lanes: {lanes}\n"
    path.write_text(HEAD.format(campaign=campaign, rounds=rounds, extra_sources=extra_sources, per_process=line)
                    + "".join(workloads), encoding="utf-8")
    return path


def prepare(tmp_path: Path, workloads: list[str], **kw) -> Path:
    done = run_cli("prepare", manifest(tmp_path, workloads, **kw), "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def run(root: Path, *extra: str, timeout: float = 300):
    return run_cli("run", root, "--grace", "1", "--scratch-dir", root.parent, *extra, timeout=timeout)


def start_run(root: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "campaign", "run", str(root), "--grace", "1",
                             "--scratch-dir", str(root.parent), *extra],
                            cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rows(root: Path) -> list[status.StatusRow]:
    found, bad = status.read(root / "status.tsv")
    assert not bad, bad
    return found


def by_id(root: Path) -> dict[str, status.StatusRow]:
    return status.latest(rows(root))


def run_setup(root: Path):
    """The runner's setup for a prepared root, as a session makes it, with nothing pinned or
    inherited: for tests that plan over a root without running it."""
    from campaign.contract.runroot import RunRoot
    from campaign.running.runner import RunSetup
    frame = RunRoot(root)
    manifest, matrix = frame.frame()
    return RunSetup(root=root, project_root=PROJECT_ROOT, matrix=matrix, manifest=manifest, harness_digest="",
                    plugins=(), harness_drift=functools.partial(runchecks.harness_drift, frame.prepare),
                    pinned_env={}, parent_env={}, scratch=root.parent, python="python")


def sealed_add(base: Path) -> Path:
    """The demo add (the canary) prepared, run and sealed in ``base`` on the CPU compile-only backend;
    the run's stdout and stderr kept beside its runs folder (run.out, run.err) for every reader."""
    root = prepare(base, [demo("add", canary=True)])
    done = run(root)
    assert done.returncode == 0, done.stderr
    (base / "run.err").write_text(done.stderr, encoding="utf-8")
    (base / "run.out").write_text(done.stdout, encoding="utf-8")       # last: the run is done and sealed
    return root


def screened_add_sass(base: Path) -> Path:
    """manifests/demo-cpu-fp-fusion-sass.yaml narrowed to add (the canary), screened at sass in ``base``
    with ``--format json``, its JSON and stderr kept beside its runs folder (run.out, run.err; run.out
    last, once the screen sealed)."""
    source = (PROJECT_ROOT / "manifests" / "demo-cpu-fp-fusion-sass.yaml").read_text(encoding="utf-8")
    narrowed = base / "fp-fusion-sass.yaml"
    narrowed.write_text(source.split("workloads:")[0] + "workloads:\n  - {name: add, op: add, canary: true}\n",
                        encoding="utf-8")
    done = run_cli("screen", narrowed, "--runs-dir", base / "runs", "--scratch-dir", base, "--grace", "1",
                   "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    (base / "run.err").write_text(done.stderr, encoding="utf-8")
    (base / "run.out").write_text(done.stdout, encoding="utf-8")
    return base


def screened_demo_two(base: Path) -> Path:
    """The demo's manifest (three cells, DISABLE_MMA_V3) with add, whose IR the switch leaves alone, and
    the autotuned matmul, whose it changes, fingerprinted at sass, screened in ``base`` with
    ``--time-unchanged`` (every round 1 runs). No canary, so the two share one worker process a side (a
    canary runs alone: 10 processes instead of 5). Its stdout and stderr kept beside its runs folder."""
    text = (PROJECT_ROOT / "manifests" / "demo-cpu.yaml").read_text(encoding="utf-8").replace(", canary: true", "")
    kept = "".join(line for line in text.splitlines(keepends=True) if "softmax" not in line and "row_sum" not in line)
    path = base / "demo-two.yaml"
    path.write_text(kept.replace("campaign: demo-cpu", "campaign: demo-two").replace("ir_stage: ttgir", "ir_stage: sass"),
                    encoding="utf-8")
    done = run_cli("screen", path, "--time-unchanged", "--runs-dir", base / "runs", "--scratch-dir", base,
                   "--grace", "1", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (base / "run.err").write_text(done.stderr, encoding="utf-8")
    (base / "run.out").write_text(done.stdout, encoding="utf-8")
    return base


def sealed_add_output(root: Path) -> tuple[str, str]:
    """The stdout and stderr of the run that sealed a `sealed_add` root."""
    base = root.parent.parent
    return (base / "run.out").read_text(encoding="utf-8"), (base / "run.err").read_text(encoding="utf-8")


def copy_root(root: Path, tmp_path: Path) -> Path:
    """A copy of a (sealed, read-only) root in ``tmp_path``/runs, modes kept, beside its own scratch:
    a test that writes into a shared root writes into its own copy."""
    copy = tmp_path / "runs" / root.name
    shutil.copytree(root, copy, symlinks=True)
    return copy


def wait_until(found: Callable[[], Optional[T]], proc: subprocess.Popen, what: str, limit: float = 120,
               poll_s: float = 0.1) -> T:
    """``found()``'s first truthy value, asked every ``poll_s`` while ``proc`` (a run or screen started by the
    test) still runs: an assertion, with the process's output, if it ended first, and one naming ``what``
    if ``limit`` seconds pass."""
    deadline = time.monotonic() + limit
    while True:
        value = found()
        if value:
            return value
        assert proc.poll() is None, (f"ended before {what}", proc.communicate())
        assert time.monotonic() < deadline, f"{what} never came in {limit} s"
        time.sleep(poll_s)
