"""Installed packages' bytecode kept between runs, nothing of the harness (`campaign.running.bytecode`).

A prefix laid out as PYTHONPYCACHEPREFIX lays it out (``<prefix>/<source folder>/<name>.<tag>.pyc``),
with fake installed folders and a fake project, so each side of the rule is a file here: the run
end keeps only what the rule allows, the run start seeds only what the rule allows (a file planted
in the store for any other source stays there), and a stored file is never overwritten.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from campaign.running import bytecode

TAG = sys.implementation.cache_tag


def _pyc(prefix: Path, source: Path, content: bytes) -> Path:
    path = prefix / source.parent.relative_to("/") / f"{source.stem}.{TAG}.pyc"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def _layout(tmp_path: Path):
    installed = tmp_path / "site-packages"
    project = tmp_path / "project"
    sources = {
        "torch": installed / "torch" / "nn.py",                  # installed: reusable
        "campaign": project / "campaign" / "cli.py",              # the project's package: never
        "digested": installed / "flaggems_checkout" / "conftest.py",   # digested though installed: never
        "elsewhere": tmp_path / "own" / "test_k.py",              # outside every installed folder: never
    }
    rule = bytecode.reusable_rule((installed.resolve(),), project, ("campaign", "worker"),
                                  [str(sources["digested"]), "ops/inventory.csv"])
    return sources, rule


def test_the_run_end_keeps_only_installed_sources_outside_the_harness(tmp_path: Path):
    sources, rule = _layout(tmp_path)
    prefix, store = tmp_path / "prefix", tmp_path / "store"
    for name, source in sources.items():
        _pyc(prefix, source, name.encode())
    assert bytecode.keep(prefix, store, rule) == 1
    kept = sorted(store.rglob("*.pyc"))
    assert [bytecode.source_of(store, p) for p in kept] == [sources["torch"]] and kept[0].read_bytes() == b"torch"
    assert not [p for p in store.rglob("*") if p.name.startswith(".")]          # no temporary left behind
    _pyc(prefix, sources["torch"], b"torch")                   # compiled again from the same source
    assert bytecode.keep(prefix, store, rule) == 0 and kept[0].read_bytes() == b"torch"   # kept as it was


def test_a_stale_stored_file_is_replaced_by_the_runs_fresh_one(tmp_path: Path):
    sources, rule = _layout(tmp_path)
    prefix, store = tmp_path / "prefix", tmp_path / "store"
    stored = _pyc(store, sources["torch"], b"header-mtime-001 code")
    assert bytecode.seed(prefix, store, rule) == 1
    assert bytecode.keep(prefix, store, rule) == 0 and stored.read_bytes() == b"header-mtime-001 code"  # the link
    fresh = _pyc(tmp_path / "fresh-prefix", sources["torch"], b"header-mtime-002 code")    # the package upgraded
    assert bytecode.keep(tmp_path / "fresh-prefix", store, rule) == 1 and stored.read_bytes() == fresh.read_bytes()


def test_the_run_start_seeds_only_reusable_files_of_the_store(tmp_path: Path):
    sources, rule = _layout(tmp_path)
    store, prefix = tmp_path / "store", tmp_path / "prefix"
    for name, source in sources.items():            # the store written by anyone: every kind planted
        _pyc(store, source, name.encode())
    assert bytecode.seed(prefix, store, rule) == 1
    assert [bytecode.source_of(prefix, p) for p in prefix.rglob("*.pyc")] == [sources["torch"]]
    assert bytecode.seed(tmp_path / "fresh", tmp_path / "no-store", rule) == 0



def test_a_source_counts_where_it_resolves_through_links_of_its_folders_and_of_itself(tmp_path: Path):
    """Seed and keep read each source resolved, folder by folder and then the file: a folder linked into
    the installed folder is reusable, a file or a folder inside it linked out of it is not."""
    sources, rule = _layout(tmp_path)
    installed, own = tmp_path / "site-packages", tmp_path / "own"
    own.mkdir()
    (own / "x.py").write_text("", encoding="utf-8")
    (tmp_path / "linked-site").symlink_to(installed, target_is_directory=True)
    (installed / "torch").mkdir(parents=True)
    (installed / "torch" / "out.py").symlink_to(own / "x.py")
    (installed / "outdir").symlink_to(own, target_is_directory=True)
    planted = {"torch": sources["torch"], "through a linked folder": tmp_path / "linked-site" / "torch" / "f.py",
               "a file linked out": installed / "torch" / "out.py", "a folder linked out": installed / "outdir" / "y.py"}
    store, prefix = tmp_path / "store", tmp_path / "prefix"
    for name, source in planted.items():
        _pyc(store, source, name.encode())
    assert bytecode.seed(prefix, store, rule) == 2
    assert sorted(p.read_bytes() for p in prefix.rglob("*.pyc")) == [b"through a linked folder", b"torch"]
    assert bytecode.keep(store, tmp_path / "kept", rule) == 2

def test_a_source_maps_to_its_prefix_path_and_back(tmp_path: Path):
    source = Path("/opt/venv/lib/python3.12/site-packages/triton/compiler/compiler.py")
    assert bytecode.source_of(tmp_path, _pyc(tmp_path, source, b"")) == source
    opt = tmp_path / "a" / f"m.{TAG}.opt-1.pyc"
    assert bytecode.source_of(tmp_path, opt) == Path("/a/m.py")


def test_the_store_is_one_per_python_under_the_users_cache(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert bytecode.store_dir() == tmp_path / "campaign" / f"bytecode-{TAG}"
    assert any(root.name == "site-packages" for root in bytecode.installed_roots())


def test_a_link_from_the_installed_folders_into_the_harness_is_never_seeded(tmp_path: Path):
    sources, rule = _layout(tmp_path)
    installed, project = tmp_path / "site-packages", tmp_path / "project"
    for source in (sources["torch"], sources["campaign"]):
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text("")
    (installed / "linked.py").symlink_to(sources["campaign"])              # a file linked into the project
    (installed / "campaign_link").symlink_to(project / "campaign")         # a folder linked into the project
    store, prefix = tmp_path / "store", tmp_path / "prefix"
    for source in (sources["torch"], installed / "linked.py", installed / "campaign_link" / "cli.py"):
        _pyc(store, source, b"planted")
    assert bytecode.seed(prefix, store, rule) == 1
    assert [bytecode.source_of(prefix, p) for p in prefix.rglob("*.pyc")] == [sources["torch"]]


def test_a_group_of_workers_starts_seeded_and_leaves_what_it_compiled(tmp_path: Path, monkeypatch):
    """`reused`, around a session's workers and each Ray task's on its node: the store seeds the
    prefix before the first worker, and what the workers compiled is kept, also when the group fails."""
    import email
    import json

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    warm, fresh = Path(json.__file__).resolve(), Path(email.__file__).resolve()    # the standard library's
    store, prefix = bytecode.store_dir(), tmp_path / "prefix"
    _pyc(store, warm, b"stored")
    with pytest.raises(RuntimeError, match="ended early"):
        with bytecode.reused(prefix, tmp_path / "project", []):
            assert [bytecode.source_of(prefix, p) for p in prefix.rglob("*.pyc")] == [warm]
            _pyc(prefix, fresh, b"compiled")
            raise RuntimeError("the group ended early")
    assert sorted(bytecode.source_of(store, p) for p in store.rglob("*.pyc")) == sorted([warm, fresh])
