"""A FlagGems checkout that is a plain tree (no .git) is pinned by its digest, and every checkout's
own version is held against ``sources.flag_gems``: small stand-in checkouts built in tmp_path,
the CLI run as a subprocess."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_flaggems_checkout import DATA, git, make_checkout, manifest

from campaign.planning import checkout

WORKLOADS = "  - {name: abs, op: abs, provider: flaggems_upstream}\n"


def plain_tree(tmp_path: Path) -> Path:
    """The 5.3 stand-in copied as a release tarball unpacks: no .git."""
    root = tmp_path / "flaggems-plain"
    shutil.copytree(DATA / "fake_flaggems_53", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def pin_flag_gems(path: Path, version: str) -> Path:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("  flag_gems_checkout:", f'  flag_gems: {{version: "{version}"}}\n  flag_gems_checkout:'),
                    encoding="utf-8")
    return path


def test_the_digest_covers_the_files_and_leaves_out_what_a_run_writes(tmp_path: Path):
    root = plain_tree(tmp_path)
    before = checkout.tree_digest(root)
    (root / "benchmark" / "__pycache__").mkdir()
    (root / "benchmark" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (root / ".pytest_cache").mkdir()
    (root / ".pytest_cache" / "README.md").write_text("cache", encoding="utf-8")
    assert checkout.tree_digest(root) == before
    (root / "benchmark" / "test_abs.py").write_text("# edited\n", encoding="utf-8")
    assert checkout.tree_digest(root) != before


def test_a_plain_tree_is_refused_with_its_digest_then_prepared_under_it(tmp_path: Path, cli):
    root = plain_tree(tmp_path)
    digest = checkout.tree_digest(root)
    by_commit = cli("validate", manifest(tmp_path, root, "commit: " + "a" * 40, WORKLOADS))
    assert by_commit.returncode == 2
    assert ("not a git work tree (no .git), so no commit or tag can be checked; pin the tree by its digest "
            f'instead: `digest: "{digest}"`') in by_commit.stderr
    pinned = manifest(tmp_path, root, f'digest: "{digest}"', WORKLOADS)
    done = cli("prepare", pinned, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    run_root = Path(done.stdout.strip().splitlines()[-1])
    assert f'digest: "{digest}"' in (run_root / "manifest.yaml").read_text(encoding="utf-8")
    # the harness digests of a plain tree's files are taken as a git checkout's are: an edit is refused by run
    shapes = root / "benchmark" / "core_shapes.yaml"
    shapes.write_text(shapes.read_text().replace("[1024, 1024]", "[2048, 2048]"))
    refused = cli("run", run_root)
    assert refused.returncode == 1
    assert "check=harness" in refused.stderr and "core_shapes.yaml" in refused.stderr
    moved = cli("validate", pinned)
    assert moved.returncode == 2
    assert f"the tree's digest is {checkout.tree_digest(root)}, the manifest pins {digest}" in moved.stderr


def test_a_git_work_tree_is_not_pinned_by_a_digest(tmp_path: Path, cli):
    root, head = make_checkout(tmp_path, "53")
    done = cli("validate", manifest(tmp_path, root, f'digest: "{"0" * 64}"', WORKLOADS))
    assert done.returncode == 2
    assert "a git work tree is named by its commit or tag, not a digest: pin `commit:`" in done.stderr
    both = cli("validate", manifest(tmp_path, root, f'commit: "{head}", digest: "{"0" * 64}"', WORKLOADS))
    assert both.returncode == 2 and "a digest pins a plain tree, a commit or tag a git work tree" in both.stderr


@pytest.mark.parametrize(("file", "text", "where"), [
    ("pyproject.toml", '[project]\nname = "flag_gems"\nversion = "5.4.0.dev0"\n', "pyproject.toml"),
    ("setup.py", 'from setuptools import setup\nsetup(name="flag_gems", version="5.4.0.dev0")\n', "setup.py"),
    ("src/flag_gems/__init__.py", '"""FlagGems."""\n__version__ = "5.4.0.dev0"\n', "src/flag_gems/__init__.py"),
])
def test_the_checkouts_own_version_must_be_the_pinned_one(tmp_path: Path, cli, file: str, text: str, where: str):
    root, head = make_checkout(tmp_path, "53")
    (root / file).parent.mkdir(parents=True, exist_ok=True)
    (root / file).write_text(text, encoding="utf-8")
    assert checkout.own_version(root) == ("5.4.0.dev0", where)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "version")
    head = git(root, "rev-parse", "HEAD").strip()
    refused = cli("validate", pin_flag_gems(manifest(tmp_path, root, f'commit: "{head}"', WORKLOADS), "5.0.2"))
    assert refused.returncode == 2
    assert (f"sources -> flag_gems -> version: the checkout {root} is FlagGems 5.4.0.dev0 ({where}), "
            "sources.flag_gems pins 5.0.2: its benchmark files would time another release's package; check out "
            "FlagGems 5.0.2 there, or pin sources.flag_gems to 5.4.0.dev0 (and install that)") in refused.stderr
    same = pin_flag_gems(manifest(tmp_path, root, f'commit: "{head}"', WORKLOADS), "5.4.0.dev0")
    done = cli("validate", same)
    assert "check=checkout" not in done.stderr, done.stderr
