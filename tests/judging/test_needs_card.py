"""NEEDS_CARD: an offline cell that proved its own IR untrustworthy is named, emitted for the card and
counted apart; a cell refused offline, or whose kernel did not compile, says so instead of "nothing ran".

The roots are built as prepare, the runner and the worker lay them out (`rootbuilder`), on the cpu backend;
offline.json is written through its model, as `campaign.plugins.flaggems_offline` writes it at a session's end.
"""
from __future__ import annotations

from pathlib import Path

import rootbuilder as rb

from campaign.contract import canonical, yamlio
from campaign.contract.artifacts import OFFLINE_FILE
from campaign.contract.cellfiles import OfflineTrust, Site
from campaign.contract.manifest import Manifest
from campaign.contract.runroot import RunRoot
from campaign.judging import screening, screenroot, screentable
from campaign.judging.screening import Facts, Side

ALLCLOSE = Site(site="allclose (flag_gems/ops/isclose.py:83)", count=3)
COPY = Site(site="aten::copy_ from copy_ (flag_gems/ops/copy.py:94)", count=1)


def side(cell: str, fp: str | None = "f0", **kw) -> Side:
    defaults = dict(rc=0, rc_name="ok", elapsed_s=2.0, rows=4, fingerprint=fp, ir_files=0 if fp is None else 2)
    return Side(cell=cell, **{**defaults, **kw})


def facts(*sides: Side) -> Facts:
    return Facts(workload="add", op="add", backend="cpu", ir_stage="ttgir", dtypes=("float16",), dtypes_own=True,
                 sides={s.cell: s for s in sides}, caliber={"backend": "cpu"})


def _offline_root(tmp_path: Path) -> Path:
    return rb.build(tmp_path, [rb.mm(), rb.pointwise()], rb.Options(backend="cpu", rounds=1, mode="screen"))


def _trust(**lists) -> dict:
    return OfflineTrust(answered_from="cuda:90 sha256:fc07", flag_gems="5.0.2", **lists).model_dump(mode="json")


def test_host_reads_in_one_cell_make_the_workload_need_the_card(tmp_path):
    root = _offline_root(tmp_path)
    before = {r["workload"]: r["verdict"] for r in screenroot.table(root)}
    assert before == {"matmul": "IR_CHANGED", "add": "NO_IR_DIFF"}
    canonical.write_json_new(RunRoot(root).cell("add/r1/candidate") / OFFLINE_FILE, _trust(host_reads=(ALLCLOSE,)))
    canonical.write_json_new(RunRoot(root).cell("add/r1/baseline") / OFFLINE_FILE, _trust())   # proved nothing
    rows = {r["workload"]: r for r in screenroot.table(root)}
    assert rows["matmul"]["verdict"] == "IR_CHANGED"
    add = rows["add"]
    assert add["verdict"] == "NEEDS_CARD" and add["range"] == ""
    assert ("the offline IR is not evidence, check and time it on the card: host reads kernel results: "
            "allclose (flag_gems/ops/isclose.py:83) x3 (candidate)") in add["note"]
    assert screentable.summary(list(rows.values())) == (
        "screened 2: IR_CHANGED 1; NEEDS_CARD 1 (offline IR not evidence, emitted for the card)")


def test_a_needs_card_workload_is_emitted_to_the_cards_manifest(tmp_path):
    root = _offline_root(tmp_path)
    for cell in ("baseline", "candidate"):
        canonical.write_json_new(RunRoot(root).cell(f"add/r1/{cell}") / OFFLINE_FILE, _trust(torch_fallbacks=(COPY,)))
    rows = screenroot.table(root)
    assert [r["verdict"] for r in rows] == ["IR_CHANGED", "NEEDS_CARD"]
    assert "FlagGems fell back to torch: aten::copy_ from copy_ (flag_gems/ops/copy.py:94) x1 (baseline, candidate)" \
        in rows[1]["note"]
    text = screenroot.emitted_manifest(root, rows)
    assert text is not None and "its 1 IR_CHANGED and 1 NEEDS_CARD workload(s)" in text
    emitted = tmp_path / "emitted.yaml"
    emitted.write_text(text, encoding="utf-8")
    loaded = yamlio.validate(Manifest, emitted)
    assert [w.name for w in loaded.workloads] == ["matmul", "add"]
    # the built root screened an unnamed card: the emitted manifest says how to send it there
    # (a named one is moved to the card's backend: tests/judging/test_emit_card.py)
    assert "Screened offline for an unnamed card" in text


def test_an_unreadable_offline_file_is_a_problem_not_a_pass(tmp_path):
    root = _offline_root(tmp_path)
    (RunRoot(root).cell("add/r1/candidate") / OFFLINE_FILE).write_text('{"schema_version": 1}\n', encoding="utf-8")
    add = {r["workload"]: r for r in screenroot.table(root)}["add"]
    assert add["verdict"] == "NO_IR_DIFF" and "offline.json: unreadable" in add["note"]


def test_needs_card_outranks_every_ir_verdict_but_a_timeout():
    reads = ("host reads kernel results: unique (flag_gems/ops/unique.py:755) x1",)
    assert screening.verdict(facts(side("baseline", needs_card=reads), side("candidate", "f1"))).name == "NEEDS_CARD"
    assert screening.verdict(facts(side("baseline", None, needs_card=reads), side("candidate", None))).name == \
        "NEEDS_CARD", "no Triton IR offline: the card decides, not NO_TRITON"
    assert screening.verdict(facts(side("baseline", rows=0, needs_card=reads), side("candidate", rows=0))).name == \
        "NEEDS_CARD", "a test that failed on garbage is no NO_ROWS"
    late = side("candidate", rc=124, rc_name="timed_out", needs_card=reads)
    assert screening.verdict(facts(side("baseline"), late)).name == "TIMEOUT"


def test_no_rows_names_an_offline_refusal_and_a_kernel_that_did_not_compile():
    refused = "check=offline_flaggems_version: flag_gems 5.1.0 is installed"
    v = screening.verdict(facts(side("baseline", rows=0, rc=3, rc_name="preflight_failed", refused=refused),
                                side("candidate", rows=0)))
    assert v.name == "NO_ROWS" and f"baseline refused at preflight ({refused})" in v.note
    assert "usually the dtype" not in v.note
    broken = "add_kernel: CompilationError: at 3:4: unsupported x1"
    v = screening.verdict(facts(side("baseline", rows=0, compile_errors=(broken,)), side("candidate", rows=0)))
    assert v.name == "NO_ROWS" and f"baseline: a kernel did not compile offline ({broken})" in v.note
    assert "usually the dtype" in screening.verdict(facts(side("baseline", rows=0), side("candidate", rows=0))).note


def test_no_rows_names_the_reason_a_benchmark_skipped_itself(tmp_path: Path):
    """A FlagGems benchmark that skips itself offline (topk_softmax: "Skipped due to missing vLLM ...") ran
    nothing: pytest run with the worker's own flags prints the reason (-rs), the cell's error line is that
    summary line, and NO_ROWS says the benchmark skipped instead of guessing the dtype."""
    import subprocess
    import sys

    from campaign.contract import errorlines
    from campaign.judging.evidence import log_error
    from worker.cell import PYTEST_FLAGS

    (tmp_path / "bench_skip.py").write_text(
        "import pytest\n\n\n@pytest.mark.skipif(True, reason='missing vLLM topk_softmax')\n"
        "def test_bench_topk_softmax():\n    pass\n", encoding="utf-8")
    cell = tmp_path / "cell"
    cell.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest", str(tmp_path / "bench_skip.py"), *PYTEST_FLAGS,
                           f"--rootdir={tmp_path}"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (cell / "stdout.log").write_text(done.stdout, encoding="utf-8")
    (cell / "stderr.log").write_text("benchmark: pytest exit 0\n", encoding="utf-8")
    line = log_error(cell)
    assert line is not None and line.log == "stdout.log" and not line.error
    assert line.text == "SKIPPED [1] bench_skip.py:4: missing vLLM topk_softmax" and errorlines.is_skip(line)
    v = screening.verdict(facts(side("baseline", rows=0, error_line=line), side("candidate", rows=0, error_line=line)))
    assert v.name == "NO_ROWS" and "the benchmark skipped the cases it selected" in v.note
    assert "usually the dtype" not in v.note
    # one side skipped and the other ran nothing for another reason: the guess stays, each line named
    other = errorlines.LogLine("stderr.log", "benchmark: pytest exit 0", False)
    assert "usually the dtype" in screening.verdict(
        facts(side("baseline", rows=0, error_line=line), side("candidate", rows=0, error_line=other))).note
    assert errorlines.last_skip("1 passed in 0.1s\n") is None
