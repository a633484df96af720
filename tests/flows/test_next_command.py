"""From prepare to run without copying a path: prepare prints the exact next command, and a bare
`campaign run --runs-dir DIR` finds the newest prepared root there."""
from __future__ import annotations

import shlex
from pathlib import Path

import runroots
from conftest import run_cli

# the runner's finding and sealing of the root is what is checked, not a kernel: nothing is compiled
ADD = runroots.fault("add", "test_bench_noop")


def test_prepare_prints_the_next_command_and_a_bare_run_finds_the_newest_root(tmp_path: Path):
    runs = tmp_path / "elsewhere"
    older = run_cli("prepare", runroots.manifest(tmp_path, [ADD], campaign="a-older"), "--runs-dir", runs)
    newer = run_cli("prepare", runroots.manifest(tmp_path, [ADD], campaign="b-newer"), "--runs-dir", runs)
    assert older.returncode == newer.returncode == 0, older.stderr + newer.stderr
    *_, next_line, root_line = newer.stdout.strip().splitlines()
    root = Path(root_line)
    assert next_line == f"next: campaign run {root}"
    assert shlex.split(next_line.removeprefix("next: "))[:2] == ["campaign", "run"]

    nowhere = run_cli("run", "--runs-dir", tmp_path / "empty")
    assert nowhere.returncode == 1
    assert "name the root (`campaign prepare` prints it) or the folder it was prepared in (--runs-dir DIR)" in (
        nowhere.stderr)
    done = run_cli("run", "--runs-dir", runs, "--grace", "1", "--scratch-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith(f"sealed {root}: ")
    assert not (Path(older.stdout.strip().splitlines()[-1]) / "receipt.json").exists()
