"""git, as preflight and prepare run it, runs no configured program (`campaign.contract.toolenv`).

A git repository in tmp_path, and three places that name a ``core.fsmonitor`` script writing a
marker: the caller's ``HOME/.gitconfig``, a file ``GIT_CONFIG_GLOBAL`` names (a variable a
manifest could declare), and the repository's own ``.git/config``; the caller's ``GIT_DIR`` names
another repository. The same ``git ls-files`` run plainly runs the script (so the check can fail);
preflight's commit lookup and prepare's checkout check read this repository's commit and run nothing.
"""
from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from campaign.contract import toolenv
from campaign.planning import checkout
from campaign.worker import facts


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True, env={"PATH": os.environ["PATH"],
                          "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}).stdout.strip()


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch) -> tuple[Path, Path, str]:
    """(repository, marker, its HEAD); the caller's environment names the script three ways."""
    repo, home, marker = tmp_path / "repo", tmp_path / "home", tmp_path / "ran.txt"
    repo.mkdir()
    home.mkdir()
    (repo / "__init__.py").write_text("__version__ = '1.0'\n", encoding="utf-8")
    _git(repo, "init", "-q", ".")
    _git(repo, "add", "__init__.py")
    _git(repo, "commit", "-qm", "one")
    script = tmp_path / "fsmonitor.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\n", encoding="utf-8")
    script.chmod(0o755)
    config = f"[core]\n\tfsmonitor = {script}\n\tpager = {script}\n[alias]\n\tls = !{script}\n"
    (home / ".gitconfig").write_text(config, encoding="utf-8")
    (tmp_path / "global.cfg").write_text(config, encoding="utf-8")
    with open(repo / ".git" / "config", "a", encoding="utf-8") as handle:
        handle.write(f"[core]\n\tfsmonitor = {script}\n")
    other = tmp_path / "other"          # another repository, which an inherited GIT_DIR would read instead
    other.mkdir()
    _git(other, "init", "-q", ".")
    _git(other, "commit", "-q", "--allow-empty", "-m", "other")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "global.cfg"))
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    return repo, marker, _git(repo, "rev-parse", "HEAD")


def test_plain_git_runs_the_configured_script(hostile):
    repo, marker, _ = hostile
    subprocess.run(["git", "-C", str(repo), "ls-files", "--error-unmatch", "__init__.py"],
                   capture_output=True, timeout=30)
    assert marker.exists()


def test_preflights_commit_lookup_runs_nothing(hostile, monkeypatch):
    repo, marker, head = hostile
    module = types.ModuleType("campaign_probe_pkg")
    module.__file__, module.__version__ = str(repo / "__init__.py"), "1.0"
    monkeypatch.setitem(sys.modules, "campaign_probe_pkg", module)
    found = facts.installed("campaign_probe_pkg")
    assert found.commit == head and found.version == "1.0"
    assert not marker.exists(), marker.read_text()


def test_prepares_checkout_check_runs_nothing(hostile):
    repo, marker, head = hostile
    assert checkout._git(repo, "rev-parse", "HEAD").strip() == head
    assert checkout._git(repo, "status", "--porcelain", "--untracked-files=no").strip() == ""
    assert not marker.exists(), marker.read_text()


def test_the_tool_env_is_built_from_nothing(tmp_path: Path):
    caller = {"PATH": "/p", "HOME": "/h", "GIT_CONFIG_GLOBAL": "/evil", "LD_PRELOAD": "x.so",
              "PYTHONPATH": "/pp", "LD_LIBRARY_PATH": "/l"}
    with toolenv.clean(caller, keep=("LD_LIBRARY_PATH",)) as env:
        assert Path(env["HOME"]).is_dir() and not list(Path(env["HOME"]).iterdir())
        assert env == {**toolenv.TOOL_ENV, "PATH": "/p", "LD_LIBRARY_PATH": "/l", "HOME": env["HOME"],
                       "XDG_CONFIG_HOME": env["HOME"]}
    assert not Path(env["HOME"]).exists()
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert toolenv.git_argv("status")[-1] == "status" and "core.fsmonitor=false" in toolenv.git_argv()
