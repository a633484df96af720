"""A copy of the project in tmp_path, for tests that must add or edit files at a project's root.

The shared checkout is never edited under other tests' feet: the copy holds the code
(`campaign/` with `worker/`, `plugins/`, `reaccount/` also inside it, so the copy imports
its own whole namespace however the project is installed), `ops/` and pyproject.toml. The
CLI run with the copy as its working directory imports the copy, whose project root --
what prepare digests and run compares -- is then the copy.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import runroots
from conftest import PROJECT_ROOT

CODE = ("campaign", "worker", "plugins", "reaccount", "ops")
NAMESPACE = ("worker", "plugins", "reaccount")   # installed as campaign.worker, ...
IGNORED = shutil.ignore_patterns("__pycache__")


def make(base: Path) -> Path:
    project = base / "project"
    for name in CODE:
        shutil.copytree(PROJECT_ROOT / name, project / name, ignore=IGNORED)
    for name in NAMESPACE:
        shutil.copytree(PROJECT_ROOT / name, project / "campaign" / name, ignore=IGNORED)
    shutil.copyfile(PROJECT_ROOT / "pyproject.toml", project / "pyproject.toml")
    return project


def manifest(base: Path, workloads: str, campaign: str = "targets-test", per_process: int = 1) -> Path:
    """``per_process``: defaults.workloads_per_process (1: a process per cell)."""
    path = base / f"{campaign}.yaml"
    path.write_text(runroots.HEAD.format(campaign=campaign, rounds=1, extra_sources="",
                                         per_process=f"  workloads_per_process: {per_process}\n") + workloads,
                    encoding="utf-8")
    return path


def cli(project: Path, *args: object, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m campaign ...`` run from the copy, so the copy is the project."""
    return subprocess.run([sys.executable, "-m", "campaign", *map(str, args)], cwd=project,
                          capture_output=True, text=True, timeout=timeout, env=env)


def prepare(project: Path, manifest_path: Path) -> Path:
    done = cli(project, "prepare", manifest_path, "--runs-dir", manifest_path.parent / "runs")
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def run(project: Path, root: Path, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    return cli(project, "run", root, "--grace", "1", "--scratch-dir", root.parent, timeout=timeout, env=env)
