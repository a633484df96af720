"""A cell that fails because the harness changed under the running root settles nothing.

On 2026-12-07 a device call emptied the tree a 16-lane whole-suite screen ran from: eight cells ended
worker_crashed (``No module named 'campaign.plugins.outcomes'``) or preflight_failed
(``check=plugin_plan``), rows that would have settled those workloads as broken by the switch had the
tree been put back and the root resumed. The runner now asks after each failed cell whether this
process's code is still the prepared code (`campaign.running.runner.Runner._unless_drifted`). Here, in a
copy of the project (`projectcopy`), a candidate cell moves a module its own target imports out of the
project and fails: its row is ``interrupted`` with the change named, the run stops, `campaign run`
refuses while the module is gone, and once it is back the cell runs again and the root seals with no
drift. The other side of the rule: a candidate that fails with the harness untouched settles as failed.
"""
from __future__ import annotations

from pathlib import Path

import projectcopy

from campaign.contract import canonical, status
from campaign.contract.errors import EXIT_INTERRUPTED

BENCH = """import os
from pathlib import Path

from bench_helpers import SIZES

FLAG = Path({flag!r})


def test_bench_vanish():
    # the candidate, once: the module this target imports leaves the project, and the cell fails on it
    if os.environ.get("DISABLE_MMA_V3") == "1" and not FLAG.exists():
        FLAG.write_text("moved")
        Path({helpers!r}).rename({aside!r})
        raise AssertionError("bench_helpers.py went away under the running root")
    assert SIZES


def test_bench_fails():
    # the candidate fails on its own; the harness is untouched
    assert os.environ.get("DISABLE_MMA_V3") != "1", "the candidate fails on its own"
"""


def test_a_failure_under_a_changed_harness_settles_nothing_and_one_under_the_prepared_harness_does(tmp_path: Path):
    project = projectcopy.make(tmp_path)
    helpers, aside, flag = project / "bench" / "bench_helpers.py", tmp_path / "bench_helpers.py", tmp_path / "moved"
    helpers.parent.mkdir()
    helpers.write_text("SIZES = [1, 2]\n")
    (project / "bench" / "bench_drift.py").write_text(BENCH.format(flag=str(flag), helpers=str(helpers),
                                                                   aside=str(aside)))
    root = projectcopy.prepare(project, projectcopy.manifest(
        tmp_path, '  - {name: a, op: add, benchmark: "bench/bench_drift.py::test_bench_vanish"}\n'
                  '  - {name: b, op: add, benchmark: "bench/bench_drift.py::test_bench_fails"}\n'))

    done = projectcopy.run(project, root)
    assert done.returncode == EXIT_INTERRUPTED, (done.stdout, done.stderr)
    assert aside.is_file() and not helpers.exists()
    said = done.stdout + done.stderr
    assert "the harness changed under the running root (code changed since prepare: " in said, said
    assert "bench/bench_helpers.py (removed since prepare)" in said, said
    rows = status.read(root / "status.tsv")[0]
    ended = [row for row in rows if row.task_id == "a/r1/candidate"]
    assert [row.rc_name for row in ended] == [status.INTERRUPTED], rows
    assert ended[0].note.startswith("harness changed under the run: ended tests_failed (rc 1) while code changed "
                                    "since prepare: bench/bench_helpers.py (removed since prepare); it settles nothing"), ended
    assert "a/r1/candidate" not in status.settled(rows)
    assert not any(row.task_id.startswith("b/") and row.failed and row.finished for row in rows), rows

    refused = projectcopy.run(project, root)
    assert refused.returncode != 0 and "check=harness" in refused.stderr, refused.stderr

    aside.rename(helpers)
    done = projectcopy.run(project, root)
    assert done.returncode == 0, (done.stdout, done.stderr)
    rows = status.read(root / "status.tsv")[0]
    settled = status.settled(rows)
    assert settled["a/r1/candidate"].rc_name == "ok", rows
    # the harness as prepared: a failure is the workload's, and settles
    assert settled["b/r1/candidate"].rc_name == "tests_failed" and settled["b/r1/candidate"].finished, rows
    assert "harness changed" not in settled["b/r1/candidate"].note
    sealed = canonical.read_json(root / "receipt.json")
    assert sealed["harness_changed_since_prepare"] == [], sealed["harness_changed_since_prepare"]
