"""End to end through the compile-only backend: a setup kernel specialised by a value that differs
by cell, beside a main kernel the switch leaves alone, is no IR change.

`campaign screen` in a copy of the project (`projectcopy`) on a ``provider: pytest`` workload
(tests/data/irpairing/setup_fill_bench.py): its setup fills 7 and then 5 (2**31 + 5 in the
candidate, which Triton specialises ``i64``), so the fingerprints differ by one unpaired
``fill_scalar_kernel`` variant. The IR pass must call it NO_IR_DIFF and say why, the runner's
skipped round 1 must say so too, and the report's IR line, also as reaccount derives it.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import projectcopy
import pytest
from conftest import PROJECT_ROOT

from campaign.contract import status
from campaign.judging import screening, screentable

DATA = "tests/data/irpairing"
BENCH = f"{DATA}/setup_fill_bench.py"
EXCEPTION = ("equal up to unpaired specialisations: fill_scalar_kernel: 0 variants only in baseline, "
             "1 variant only in candidate (signature differs: data-dependent specialisation)")


@pytest.fixture(scope="module")
def screened(tmp_path_factory):
    base = tmp_path_factory.mktemp("irpairing")
    project = projectcopy.make(base)
    shutil.copytree(PROJECT_ROOT / DATA, project / DATA, ignore=shutil.ignore_patterns("__pycache__"))
    path = projectcopy.manifest(base, f'  - {{name: setupfill, provider: pytest, benchmark: "{BENCH}"}}\n',
                                campaign="irpairing-cpu")
    done = projectcopy.cli(project, "screen", path, "--runs-dir", base / "runs", "--scratch-dir", base, "--grace", "1")
    assert done.returncode == 0, done.stderr
    root = Path(done.stdout.strip().splitlines()[-1]).parent
    return project, root


def test_the_ir_pass_calls_a_data_dependent_specialisation_no_ir_diff_and_says_so(screened):
    project, root = screened
    ir = {cell: sorted(p.name.split("-", 1)[1] for p in (root / "cells" / "setupfill" / "r0" / cell / "ir").glob("*.ttgir"))
          for cell in ("baseline", "candidate")}
    # the evidence is what the test means it to be: one more fill_scalar_kernel variant in the candidate
    assert ir == {"baseline": ["fill_scalar_kernel.ttgir", "scale_kernel.ttgir"],
                  "candidate": ["fill_scalar_kernel.ttgir", "fill_scalar_kernel.ttgir", "scale_kernel.ttgir"]}
    row = {r["workload"]: r for r in screentable.parse((root / "screen.tsv").read_text(encoding="utf-8"))}["setupfill"]
    assert row["verdict"] == "NO_IR_DIFF", row
    assert row["fingerprint_baseline"] != row["fingerprint_candidate"]
    assert f"baseline and candidate ttgir {EXCEPTION}: the switch changed no generated code" in row["note"]
    assert row["note"].endswith(screening.IR_PASS_NOTE)
    rows = status.latest(status.read(root / "status.tsv")[0])
    skipped = rows["setupfill/r1/candidate"]
    assert skipped.rc_name == status.SKIPPED
    assert skipped.note.startswith(f"SWITCH_NO_IR_DIFF: the IR pass (round 0) baseline and candidate ttgir "
                                   f"fingerprints are {EXCEPTION}: the switch changed no generated code")


def test_the_report_names_the_exception_on_the_ir_line(screened):
    project, root = screened
    done = projectcopy.cli(project, "report", root)
    assert done.returncode == 0, done.stderr
    line = next(l for l in done.stdout.splitlines() if l.startswith("- IR (ttgir):"))
    assert EXCEPTION in line, line
    verdicts = projectcopy.cli(project, "report", root, "--format", "json")
    assert verdicts.returncode == 0, verdicts.stderr
    ir = json.loads(verdicts.stdout)["workloads"]["setupfill"]["ir"]
    assert ir["changed"] is False and ir["unpaired"] == [EXCEPTION.split(": ", 1)[1]], ir


def test_reaccount_judges_ir_by_the_same_rule(screened, tmp_path: Path):
    project, root = screened
    done = projectcopy.cli(project, "reaccount", root, "--floor", "0", "--out", tmp_path / "derived")
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "derived" / "report.md").read_text(encoding="utf-8")
    line = next(l for l in report.splitlines() if l.startswith("- IR (ttgir):"))
    assert EXCEPTION in line, line
