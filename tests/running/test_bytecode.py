"""Installed packages' bytecode kept between runs, each file verified against its source before use,
nothing of the harness (`campaign.running.bytecode`).

A prefix laid out as PYTHONPYCACHEPREFIX lays it out (``<prefix>/<source folder>/<name>.<tag>.pyc``),
with fake installed folders and a fake project whose sources are real files, so each side of the
rule is a file here: the run end keeps only what the rule allows, in its checked form; the run start
seeds only what the rule allows and what verifies against its source (an unchecked, timestamp,
truncated or stale file is discarded); a stored file that verifies is never overwritten.
"""
from __future__ import annotations

import importlib._bootstrap_external as bootstrap
import importlib.util
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


def _source(source: Path, text: str = "VALUE = 1\n") -> bytes:
    source.parent.mkdir(parents=True, exist_ok=True)
    if not source.exists():
        source.write_text(text, encoding="utf-8")
    return source.read_bytes()


def compiled(source: Path, kind: str = "timestamp", text: str | None = None) -> bytes:
    """A ``.pyc`` of ``source`` as the import system writes it (``timestamp``), in the store's form
    (``checked``) or as planted ones are (``unchecked``); of ``text`` instead of the source when given."""
    real = _source(source)
    code = compile(text if text is not None else real, str(source), "exec", dont_inherit=True)
    if kind == "timestamp":
        stat = source.stat()
        return bytes(bootstrap._code_to_timestamp_pyc(code, stat.st_mtime, stat.st_size))
    return bytes(bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(real), kind == "checked"))


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


def test_the_run_end_keeps_only_installed_sources_outside_the_harness_in_checked_form(tmp_path: Path):
    sources, rule = _layout(tmp_path)
    prefix, store = tmp_path / "prefix", tmp_path / "store"
    for source in sources.values():
        _pyc(prefix, source, compiled(source))
    assert bytecode.keep(prefix, store, rule) == 1
    kept = sorted(store.rglob("*.pyc"))
    assert [bytecode.source_of(store, p) for p in kept] == [sources["torch"]]
    assert kept[0].read_bytes() == compiled(sources["torch"], "checked")
    assert not [p for p in store.rglob("*") if p.name.startswith(".") and p.name != bytecode.VERIFIED]   # no temporary
    assert bytecode.keep(prefix, store, rule) == 0                               # kept as it was


def test_a_stale_stored_file_is_discarded_at_the_start_and_replaced_at_the_end(tmp_path: Path):
    sources, rule = _layout(tmp_path)
    prefix, store = tmp_path / "prefix", tmp_path / "store"
    stored = _pyc(store, sources["torch"], compiled(sources["torch"], "checked"))
    sources["torch"].write_text("VALUE = 2\n", encoding="utf-8")                # the package upgraded
    assert bytecode.seed(prefix, store, rule) == {} and not stored.exists()
    _pyc(prefix, sources["torch"], compiled(sources["torch"]))                 # the workers compiled it again
    assert bytecode.keep(prefix, store, rule) == 1 and stored.read_bytes() == compiled(sources["torch"], "checked")


def test_the_run_start_seeds_only_reusable_files_of_the_store_that_verify(tmp_path: Path):
    sources, rule = _layout(tmp_path)
    store, prefix = tmp_path / "store", tmp_path / "prefix"
    for source in sources.values():            # the store written by anyone: every kind planted
        _pyc(store, source, compiled(source, "checked"))
    seeded = bytecode.seed(prefix, store, rule)
    assert [bytecode.source_of(prefix, p) for p in seeded] == [sources["torch"]]
    assert [p.read_bytes() for p in seeded] == [compiled(sources["torch"], "checked")]
    assert not list(prefix.rglob(".*"))                                          # no temporary left behind
    assert bytecode.seed(tmp_path / "fresh", tmp_path / "no-store", rule) == {}
    assert bytecode.keep(prefix, store, rule, seeded) == 0                       # the store's own, not read again


@pytest.mark.parametrize("planted", ["unchecked", "timestamp", "truncated", "other code", "not a pyc", "a link"])
def test_a_planted_or_broken_stored_file_is_discarded_never_seeded(tmp_path: Path, planted: str):
    """What the store may hold that is not the checked compile of the source as it is now: an
    unchecked hash-based file or a timestamp one (anyone writes those for any code), a file cut
    short by a full disk (``marshal data too short`` in every later worker), a checked one of
    other source text, bytes that are no ``.pyc``, a link to the source's own checked file."""
    sources, rule = _layout(tmp_path)
    source = sources["torch"]
    evil = "open('marker', 'w').write('ran')\n" + _source(source).decode()
    content = {"unchecked": lambda: compiled(source, "unchecked", evil),
               "timestamp": lambda: compiled(source, "timestamp", evil),
               "truncated": lambda: compiled(source, "checked")[:40],
               "other code": lambda: bytes(bootstrap._code_to_hash_pyc(      # checked, of other source text
                   compile("VALUE = 3\n", str(source), "exec"), importlib.util.source_hash(b"VALUE = 3\n"), True)),
               "not a pyc": lambda: b"#!/bin/sh\n",
               "a link": None}[planted]
    store, prefix = tmp_path / "store", tmp_path / "prefix"
    if content is None:
        real = _pyc(tmp_path / "elsewhere", source, compiled(source, "checked"))
        stored = store / real.relative_to(tmp_path / "elsewhere")
        stored.parent.mkdir(parents=True)
        stored.symlink_to(real)
    else:
        stored = _pyc(store, source, content())
    assert bytecode.seed(prefix, store, rule) == {}
    assert not stored.exists() and not stored.is_symlink() and not list(prefix.rglob("*.pyc"))
    _pyc(prefix, source, compiled(source))
    assert bytecode.keep(prefix, store, rule) == 1 and stored.read_bytes() == compiled(source, "checked")


def test_a_file_verified_once_is_copied_unread_until_it_changes(tmp_path: Path, monkeypatch):
    """The store lists each file it verified with its lstat: the next runs copy it unread (the import
    system checks its hash against the source on every import); cut short in place, it is read again,
    and discarded."""
    sources, rule = _layout(tmp_path)
    store = tmp_path / "store"
    stored = _pyc(store, sources["torch"], compiled(sources["torch"], "checked"))
    assert len(bytecode.seed(tmp_path / "first", store, rule)) == 1
    assert (store / bytecode.VERIFIED).read_text().startswith(str(stored.relative_to(store)) + "\t")
    read, real = [], bytecode._read
    monkeypatch.setattr(bytecode, "_read", lambda path, follow=False: read.append(path) or real(path, follow))
    seeded = bytecode.seed(tmp_path / "second", store, rule)
    assert [p.read_bytes() for p in seeded] == [stored.read_bytes()] and read == [store / bytecode.VERIFIED]
    with open(stored, "r+b") as handle:
        handle.truncate(40)                                         # a full disk, in place
    assert bytecode.seed(tmp_path / "third", store, rule) == {} and stored in read and not stored.exists()


def test_a_truncated_or_stale_prefix_file_is_never_kept_nor_put_over_a_good_one(tmp_path: Path):
    sources, rule = _layout(tmp_path)
    source = sources["torch"]
    store, prefix = tmp_path / "store", tmp_path / "prefix"
    good = compiled(source, "checked")
    stored = _pyc(store, source, good)
    fresh = compiled(source)
    for broken in (fresh[:30], fresh[:8] + b"\x00" * 8 + fresh[16:]):      # cut short; another mtime and size
        _pyc(prefix, source, broken)
        assert bytecode.keep(prefix, store, rule) == 0 and stored.read_bytes() == good
        stored.unlink()
        assert bytecode.keep(prefix, store, rule) == 0 and not stored.exists()  # not even into an empty place
        stored.write_bytes(good)


def test_a_write_that_fails_halfway_leaves_the_store_as_it_was(tmp_path: Path, monkeypatch):
    """A full disk or a file-size limit (EFBIG) while a file is written: the temporary goes, the
    stored file stays whole, and nothing half written is ever where a worker reads."""
    import errno
    import os

    sources, rule = _layout(tmp_path)
    source = sources["torch"]
    store, prefix = tmp_path / "store", tmp_path / "prefix"
    _pyc(prefix, source, compiled(source))
    real_fdopen = os.fdopen

    class HalfWritten:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, data):
            self.handle.write(data[:20])
            raise OSError(errno.EFBIG, "File too large")

    def failing(fd, mode="r"):       # writes fail halfway, reads as ever
        return HalfWritten(real_fdopen(fd, mode)) if "w" in mode else real_fdopen(fd, mode)

    monkeypatch.setattr(bytecode.os, "fdopen", failing)
    assert bytecode.keep(prefix, store, rule) == 0
    assert [p.name for p in store.rglob("*") if p.is_file()] == []
    monkeypatch.undo()
    assert bytecode.keep(prefix, store, rule) == 1
    stored = next(store.rglob("*.pyc"))
    (store / bytecode.VERIFIED).unlink()            # not listed: verified and written, not linked
    monkeypatch.setattr(bytecode.os, "fdopen", failing)
    assert bytecode.seed(tmp_path / "prefix2", store, rule) == {}
    assert [p for p in (tmp_path / "prefix2").rglob("*") if p.is_file()] == []
    assert stored.read_bytes() == compiled(source, "checked")


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
        _source(source, f"NAME = {name!r}\n")
        _pyc(store, source, compiled(source, "checked"))
    seeded = bytecode.seed(prefix, store, rule)
    assert sorted(bytecode.source_of(prefix, p) for p in seeded) == sorted(
        [sources["torch"], tmp_path / "linked-site" / "torch" / "f.py"])
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
        _pyc(store, source, compiled(source, "checked"))
    assert len(bytecode.seed(prefix, store, rule)) == 1
    assert [bytecode.source_of(prefix, p) for p in prefix.rglob("*.pyc")] == [sources["torch"]]


def test_a_group_of_workers_starts_seeded_and_leaves_what_it_compiled(tmp_path: Path, monkeypatch):
    """`reused`, around a session's workers and each Ray task's on its node: the store seeds the
    prefix before the first worker, and what the workers compiled is kept, also when the group fails."""
    import email
    import json

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    warm, fresh = Path(json.__file__).resolve(), Path(email.__file__).resolve()    # the standard library's
    store, prefix = bytecode.store_dir(), tmp_path / "prefix"
    _pyc(store, warm, compiled(warm, "checked"))
    with pytest.raises(RuntimeError, match="ended early"):
        with bytecode.reused(prefix, tmp_path / "project", []):
            assert [bytecode.source_of(prefix, p) for p in prefix.rglob("*.pyc")] == [warm]
            _pyc(prefix, fresh, compiled(fresh))
            raise RuntimeError("the group ended early")
    assert sorted(bytecode.source_of(store, p) for p in store.rglob("*.pyc")) == sorted([warm, fresh])
