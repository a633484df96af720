"""FlagGems' tuner store emptied between the workloads of a batch, and what the classifier reads of it.

flag_gems is not installed here, so the store is a real SQLAlchemy sqlite engine populated the
way LibTuner 5.0.2 populates it (`flag_gems.utils.models.sql.SQLPersistantModel`: one declarative
class per table, named ``<table>-<md5 of the key columns>``, key columns as the primary key, rows
written with ``session.merge``), reached through a stand-in shaped like ``libentry.libcache``.
"""
from __future__ import annotations

import sys
import types
from hashlib import md5
from pathlib import Path

import pytest
import rootbuilder as rb
import runroots
import sqlalchemy
import sqlalchemy.orm
from conftest import run_cli

from campaign.contract import canonical
from campaign.judging.classify import classify_root
from campaign.running import batching
from campaign.worker import tunerstore

STORE_TARGET = "tests/fixtures/workloads/bench_tunerstore.py::test_bench_tune"


def _model(base, name: str, keys: dict, values: dict):
    """LibTuner's table class, built as SQLPersistantModel.build_sql_model_by_py builds it."""
    table = f"{name}-{md5(''.join(keys).encode()).hexdigest()}"
    columns = {k: sqlalchemy.orm.mapped_column(primary_key=True) for k in keys}
    columns |= {k: sqlalchemy.orm.mapped_column(primary_key=False) for k in values}
    annotations = {k: sqlalchemy.orm.Mapped[type(v)] for k, v in (keys | values).items()}
    return type(name, (base,), {"__annotations__": annotations, "__tablename__": table, **columns})


class _Stand:
    """What the worker reaches: ``libentry.libcache.model.engine``, plus the table classes a tuner keeps."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.engine = sqlalchemy.create_engine(f"sqlite:///{path}")
        base = type("Base", (sqlalchemy.orm.DeclarativeBase,), {})      # one registry per store
        self.config = _model(base, "mm_kernel", {"key_0": 1024, "key_1": "torch.float16"},
                             {"BLOCK_M": 128, "num_warps": 4, "num_stages": 3})
        self.bench = _model(base, "mm_kernel_benchmark", {"key_0": 1024, "key_1": "torch.float16", "BLOCK_M": 128},
                            {"p50": 0.1, "p20": 0.1, "p80": 0.1})
        base.metadata.create_all(self.engine)
        self.libentry = types.SimpleNamespace(libcache=types.SimpleNamespace(model=types.SimpleNamespace(
            engine=self.engine)))

    def tune(self, size: int) -> None:
        """One key tuned: two configs benchmarked, the winner stored (a RollbackSession's merge and commit)."""
        with sqlalchemy.orm.Session(self.engine) as session:
            for block in (64, 128):
                session.merge(self.bench(key_0=size, key_1="torch.float16", BLOCK_M=block, p50=1.0, p20=0.9, p80=1.1))
            session.merge(self.config(key_0=size, key_1="torch.float16", BLOCK_M=128, num_warps=4, num_stages=3))
            session.commit()

    def winner(self, size: int):
        with sqlalchemy.orm.Session(self.engine) as session:
            return session.get(self.config, {"key_0": size, "key_1": "torch.float16"})


@pytest.fixture
def store(tmp_path):
    stand = _Stand(tmp_path / "tuner" / "config_cache" / "TunedConfig_H200_triton_3_6.db")
    yield stand
    stand.engine.dispose()


def test_emptying_leaves_the_store_where_a_fresh_process_finds_it(store):
    store.tune(1024)
    store.tune(2048)
    eng = tunerstore.engine(store.libentry)
    assert tunerstore.count(eng) == tunerstore.Store(2, 6)
    assert tunerstore.empty(eng) == tunerstore.Store(2, 6)
    assert tunerstore.count(eng) == tunerstore.Store(2, 0)
    assert store.winner(1024) is None, "a later workload must tune its keys again"
    store.tune(1024)          # the tuner keeps its table classes and writes through them again
    assert store.winner(1024).BLOCK_M == 128 and tunerstore.count(eng).rows == 3


def test_counting_a_store_never_creates_its_file(tmp_path):
    path = tmp_path / "config_cache" / "TunedConfig.db"
    eng = sqlalchemy.create_engine(f"sqlite:///{path}")
    assert tunerstore.count(eng) == tunerstore.Store(0, 0) and tunerstore.empty(eng) == tunerstore.Store(0, 0)
    assert not path.exists(), "a fresh cell's tuner folder stays empty until FlagGems writes to it"


def test_the_batch_note_and_the_identity_read_the_process_store(store, monkeypatch):
    monkeypatch.delitem(sys.modules, tunerstore.LIBENTRY, raising=False)
    assert tunerstore.at_start() is None
    assert tunerstore.reset_note() == "FlagGems tuner store: not loaded in this process, nothing to empty"
    monkeypatch.setitem(sys.modules, tunerstore.LIBENTRY, store.libentry)
    store.tune(1024)
    assert tunerstore.at_start() == {"tables": 2, "rows": 3}
    assert tunerstore.reset_note() == ("FlagGems tuner store emptied before this workload: 3 row(s) deleted from "
                                       "2 table(s), as a fresh process finds it")
    assert tunerstore.at_start() == {"tables": 2, "rows": 0}


@pytest.mark.parametrize("action", ["ABORT, 'kept'", "IGNORE"])
def test_a_store_that_keeps_its_rows_is_said_to_and_still_counts_warm(store, monkeypatch, action):
    """A delete refused (ABORT) or silently skipped (IGNORE): the note says so and the count stays."""
    store.tune(1024)
    with store.engine.begin() as conn:
        conn.exec_driver_sql(f'CREATE TRIGGER keep BEFORE DELETE ON "{store.config.__tablename__}" '
                             f"BEGIN SELECT RAISE({action}); END")
    monkeypatch.setitem(sys.modules, tunerstore.LIBENTRY, store.libentry)
    note = tunerstore.reset_note()
    assert "could NOT be emptied" in note and "starts on the earlier workloads' tuner state" in note
    assert ("row(s) left" in note) == (action == "IGNORE")
    assert tunerstore.at_start()["rows"] >= 1


def _reason(tmp_path, at_start: dict):
    warm = {"matmul/r3/candidate": at_start}
    return classify_root(rb.build(tmp_path, [rb.mm()], rb.Options(identity=warm)))["workloads"]["matmul"]


def test_an_emptied_store_reads_fresh_and_a_warm_one_still_taints(tmp_path):
    files = {"tuner_cache_at_start": {"files": 3, "bytes": 4096}}
    emptied = _reason(tmp_path / "emptied", files | {"tuner_store_at_start": {"tables": 2, "rows": 0}})
    assert emptied["class"] == "G" and emptied["taints"] == []
    warm = _reason(tmp_path / "warm", files | {"tuner_store_at_start": {"tables": 2, "rows": 6}})
    assert warm["class"] == "X"
    assert ("matmul/r3/candidate started on a warm tuner cache (3 file(s); 6 row(s) in its tuner store) though "
            "labelled isolated") in warm["reason"]
    uncounted = _reason(tmp_path / "uncounted", files | {"tuner_store_at_start": None})
    assert uncounted["class"] == "X" and "(3 file(s)) though labelled isolated" in uncounted["reason"]


def _batched_root(tmp_path: Path, defaults: str = "") -> Path:
    """Two workloads tuning into the store, both of each side in one process, run through the real CLI."""
    workloads = [f'  - {{name: {name}, op: add, benchmark: "{STORE_TARGET}", timeout_s: 120}}\n'
                 for name in ("first", "second")]
    path = runroots.manifest(tmp_path, workloads, per_process=None)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("  timeout_s: 120\n", "  timeout_s: 120\n" + defaults, 1), encoding="utf-8")
    done = run_cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    root = Path(done.stdout.strip().splitlines()[-1])
    ran = runroots.run(root)
    assert ran.returncode == 0, ran.stderr
    return root


def test_a_later_workload_of_a_batch_starts_on_an_emptied_store(tmp_path):
    """At the runner's own bound (the manifest names none), the second workload of a process finds
    the first's store file but no row in it, says so in run.log, and carries no warm-cache taint."""
    root = _batched_root(tmp_path)
    records = [canonical.read_json(p) for p in sorted((root / "batches").glob("*/batch.json"))]
    assert [(r["tasks"], r["bound"], r["bound_by"]) for r in records] == [
        (["first/r1/baseline", "second/r1/baseline"], batching.RUNNER_BOUND, "runner"),
        (["first/r1/candidate", "second/r1/candidate"], batching.RUNNER_BOUND, "runner")]
    cost = run_cli("cost", root)
    assert cost.returncode == 0, cost.stderr
    assert (f"2 batch process(es) ran 4 cells, up to {batching.RUNNER_BOUND} (the runner's bound) workloads of one "
            "side each") in cost.stdout
    for cell in ("baseline", "candidate"):
        first = canonical.read_json(root / "cells" / "first" / "r1" / cell / "run_identity.json")
        second = canonical.read_json(root / "cells" / "second" / "r1" / cell / "run_identity.json")
        assert first["tuner_store_at_start"] is None, "the first workload imported nothing of FlagGems before it ran"
        assert second["tuner_cache_at_start"]["files"] == 1, "the first workload's sqlite file is still there"
        assert second["tuner_store_at_start"] == {"tables": 1, "rows": 0}
        log = (root / "cells" / "second" / "r1" / cell / "run.log").read_text(encoding="utf-8")
        assert ("note: FlagGems tuner store emptied before this workload: 1 row(s) deleted from 1 table(s)"
                in log)
        # the cpu backend starts no card: nothing cached on one to give back (tests/gpu: on the card)
        assert "note: device memory: nothing to release (no card started in this process)" in log
    assert classify_root(root)["workloads"]["second"]["taints"] == []


@pytest.fixture(scope="module")
def shared_store_root(tmp_path_factory) -> Path:
    """The batched root with the manifest's own bound and a shared tuner cache, run once for the module:
    the two tests below only read it (each ran this same root before)."""
    return _batched_root(tmp_path_factory.mktemp("shared-store"), "  workloads_per_process: 2\n  tuner_cache: shared\n")


def test_a_shared_tuner_cache_is_left_as_it_is(shared_store_root):
    """Shared is the manifest's own choice (a caliber, warned): the batch empties nothing of it."""
    root = shared_store_root
    assert {canonical.read_json(p)["bound_by"] for p in (root / "batches").glob("*/batch.json")} == {"manifest"}
    second = canonical.read_json(root / "cells" / "second" / "r1" / "candidate" / "run_identity.json")
    assert second["tuner_cache"] == "shared" and second["tuner_store_at_start"]["rows"] >= 1
    log = (root / "cells" / "second" / "r1" / "candidate" / "run.log").read_text(encoding="utf-8")
    assert "FlagGems tuner store" not in log


def test_the_process_defaults_are_frozen_in_the_matrix(tmp_path, shared_store_root):
    """Prepare freezes ``workloads_per_process`` and ``tuner_cache`` into matrix.json, and the runner reads
    them there (`tests/structure/test_runner_checks.py` holds that running/ reads no manifest default): they
    bound the batches and share the tuner store. Their defaults are left out (older roots: same bytes)."""
    root = shared_store_root
    matrix = canonical.read_json(root / "matrix.json")
    assert (matrix["workloads_per_process"], matrix["tuner_cache"]) == (2, "shared")
    records = [canonical.read_json(p) for p in (root / "batches").glob("*/batch.json")]
    assert len(records) == 2 and {(r["bound"], r["bound_by"]) for r in records} == {(2, "manifest")}
    for cell in ("baseline", "candidate"):
        assert canonical.read_json(root / "cells" / "second" / "r1" / cell / "run_identity.json")["tuner_cache"] == "shared"
    (tmp_path / "plain").mkdir()
    plain = runroots.prepare(tmp_path / "plain", [runroots.demo("add")])
    assert not {"workloads_per_process", "tuner_cache"} & set(canonical.read_json(plain / "matrix.json"))


def test_a_store_that_cannot_be_counted_is_not_vouched_for(tmp_path, monkeypatch):
    path = tmp_path / "config_cache" / "TunedConfig.db"
    path.parent.mkdir()
    path.write_bytes(b"not a sqlite database, but a file the tuner folder holds" * 20)
    eng = sqlalchemy.create_engine(f"sqlite:///{path}")
    stand = types.SimpleNamespace(libcache=types.SimpleNamespace(model=types.SimpleNamespace(engine=eng)))
    monkeypatch.setitem(sys.modules, tunerstore.LIBENTRY, stand)
    assert tunerstore.at_start() is None, "null: the classifier then reads the folder's files as warm"
    assert "could NOT be emptied: DatabaseError" in tunerstore.reset_note()


def test_the_bound_is_the_manifests_where_it_names_one_and_the_runners_otherwise():
    assert batching.bound(None) == (batching.RUNNER_BOUND, "runner")
    assert batching.bound(1) == (1, "manifest") and batching.bound(3) == (3, "manifest")
