"""FlagGems' tuner store as this process holds it: counted at a workload's start, emptied between workloads.

flag_gems 5.0.2 keeps every LibTuner winner (ConfigCache) and every benchmarked config's
timings (BenchmarkCache) in SQL tables behind one SQLAlchemy engine,
``flag_gems.utils.libentry.libcache.model.engine`` (a sqlite file under
``$FLAGGEMS_CACHE_DIR/config_cache/``, or ``FLAGGEMS_DB_URL``). Neither cache holds rows in
memory: each lookup is a query. A batch process (`campaign.worker.batch`) keeps that engine
from one workload to the next, so a later workload would find the earlier ones' winners and
tune nothing. Deleting every row of every table leaves the store where a fresh process finds
it: every lookup misses and is tuned. The tables themselves stay: FlagGems keeps the model
classes it built for them (``sql_model_pool``) and writes through them again.

What the store held when a workload began is written to its run identity
(``tuner_store_at_start``); the classifier reads a warm isolated cell from it
(`campaign.judging.workload`).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

LIBENTRY = "flag_gems.utils.libentry"


@dataclass(frozen=True)
class Store:
    tables: int
    rows: int

    def as_dict(self) -> dict[str, int]:
        return {"tables": self.tables, "rows": self.rows}


def engine(libentry=None):
    """The engine of the process's FlagGems tuner store; None when flag_gems' tuner was never imported
    (nothing of it can be warm then). Looked up, never imported: importing flag_gems probes the device."""
    libentry = sys.modules.get(LIBENTRY) if libentry is None else libentry
    if libentry is None:
        return None
    return libentry.libcache.model.engine


def _absent_file(eng) -> bool:
    """A sqlite store whose file does not exist yet: counting it must not create it."""
    if eng.url.get_backend_name() != "sqlite":
        return False
    database = eng.url.database
    return bool(database) and database != ":memory:" and not Path(database).exists()


def count(eng) -> Store:
    import sqlalchemy

    if _absent_file(eng):
        return Store(0, 0)
    meta = sqlalchemy.MetaData()
    meta.reflect(bind=eng)
    with eng.connect() as conn:
        rows = sum(conn.execute(sqlalchemy.select(sqlalchemy.func.count()).select_from(t)).scalar_one()
                   for t in meta.sorted_tables)
    return Store(len(meta.sorted_tables), rows)


def empty(eng) -> Store:
    """Delete every row of every table in one transaction; the rows deleted. Raises when a row is left
    (the caller says so: the workload then starts warm, and its identity shows it)."""
    import sqlalchemy

    if _absent_file(eng):
        return Store(0, 0)
    meta = sqlalchemy.MetaData()
    meta.reflect(bind=eng)
    before = count(eng)
    with eng.begin() as conn:
        for table in reversed(meta.sorted_tables):
            conn.execute(table.delete())
    left = count(eng)
    if left.rows:
        raise RuntimeError(f"{left.rows} row(s) left in {left.tables} table(s) after deleting")
    return Store(before.tables, before.rows)


def at_start() -> Optional[dict[str, int]]:
    """What the process's store holds now, for the run identity; None without a FlagGems tuner."""
    eng = engine()
    if eng is None:
        return None
    try:
        return count(eng).as_dict()
    except Exception:               # a store that cannot be counted is never vouched for as empty
        return None


def reset_note() -> str:
    """Empty the store before a later workload of a batch; the run.log line that says what happened."""
    eng = engine()
    if eng is None:
        return "FlagGems tuner store: not loaded in this process, nothing to empty"
    try:
        emptied = empty(eng)
    except Exception as exc:        # said in run.log; the identity's count shows the warm start
        return (f"FlagGems tuner store ({eng.url.render_as_string(hide_password=True)}) could NOT be emptied: "
                f"{type(exc).__name__}: {exc}; this workload starts on the earlier workloads' tuner state")
    return (f"FlagGems tuner store emptied before this workload: {emptied.rows} row(s) deleted from "
            f"{emptied.tables} table(s), as a fresh process finds it")
