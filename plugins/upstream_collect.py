"""``pytest --collect-only -p campaign.plugins.upstream_collect --campaign-collect-out FILE``:
every collected item's node id and mark names, as canonical JSON, for `campaign inventory --collect`.

Collection imports FlagGems' benchmark modules (and flag_gems, which needs a device), so it
runs in its own process on the host that has one; what it writes is what pytest itself
selected, which the inventory's reading of the files is checked against.
"""
from __future__ import annotations

from pathlib import Path

from campaign.contract.canonical import write_json_new

OPTION = "--campaign-collect-out"


def pytest_addoption(parser):
    parser.addoption(OPTION, default=None, help="write collected node ids and their marks here (JSON)")


def pytest_collection_finish(session):
    out = session.config.getoption(OPTION)
    if out is None:
        return
    items = [{"node": item.nodeid, "marks": sorted({mark.name for mark in item.iter_markers()})}
             for item in session.items]
    errors = [str(report.nodeid or report.fspath) for report in session.config.pluginmanager
              .get_plugin("terminalreporter").stats.get("error", [])] if session.config.pluginmanager.get_plugin(
        "terminalreporter") else []
    write_json_new(Path(out), {"schema_version": 1, "items": items, "errors": sorted(errors)})
