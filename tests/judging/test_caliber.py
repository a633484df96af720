"""The caliber guard: pure comparison, and the CLI refusing (exit 4) before any latency is read."""
from __future__ import annotations

import io

import pytest
import rootbuilder as rb

from campaign.contract.errors import EXIT_CALIBER, CampaignError
from campaign.contract.runroot import RunRoot
from campaign.judging import caliber
from campaign.plugins import run_identity


def _check(root):
    matrix = RunRoot(root).matrix
    return caliber.compare(matrix.tasks, caliber.load_identities(root, matrix.tasks))


def test_the_plugin_writes_exactly_this_definition():
    assert run_identity.CALIBER_FIELDS is caliber.CALIBER_FIELDS
    assert "timer" in caliber.CALIBER_FIELDS and "autotune_mode" not in caliber.CALIBER_FIELDS


def test_equal_calibers_pass(tmp_path):
    check = _check(rb.build(tmp_path, [rb.mm()]))
    assert check.ok and check.lines() == []
    assert check.table["timer.kind"] == "graph"


def test_timer_mismatch_is_named_field_by_field(tmp_path):
    # replication_pad3d: +43% vs +124.5%, the same op under two timers
    event = {"kind": "event", "warmup_ms": 25.0, "rep_ms": 100.0, "return_mode": "median",
             "direct_repeat": None, "l2_flush": True}
    root = rb.build(tmp_path, [rb.pointwise("replication_pad3d", "replication_pad3d")],
                    rb.Options(identity={"replication_pad3d/r1/candidate": {"timer": event}}))
    check = _check(root)
    lines = check.lines()
    assert "!!! [caliber] timer.kind: graph vs event (replication_pad3d/r1/baseline vs replication_pad3d/r1/candidate)" in lines
    assert any(line.startswith("!!! [caliber] timer.l2_flush: false vs true") for line in lines)
    assert check.table["timer.kind"] == "graph | event"
    assert check.workloads["replication_pad3d"]


def test_record_vs_record_is_refused_by_name(tmp_path):
    root = rb.build(tmp_path, [rb.mm("router_gemm")],
                    rb.Options(identity={"router_gemm/r1/candidate": {"autotune_mode": "record", "autotune_source": None}}))
    lines = _check(root).lines()
    assert [l for l in lines if "record vs record" in l] == [
        "!!! [caliber] autotune_mode: record vs record (router_gemm/r1/baseline vs router_gemm/r1/candidate): "
        "both sides tuned on their own, so configs and IR differ for reasons unrelated to the switch"]


def test_replay_of_a_foreign_recording_is_refused(tmp_path):
    root = rb.build(tmp_path, [rb.mm()], rb.Options(identity={"matmul/r2/candidate": {"autotune_source": "other/r1/baseline"}}))
    assert any(l.startswith("!!! [caliber] autotune_source: matmul/r1/baseline vs other/r1/baseline") for l in _check(root).lines())


def test_missing_identity_is_its_workloads_finding_only(tmp_path):
    root = rb.build(tmp_path, [rb.mm(), rb.pointwise()])
    (root / "cells/matmul/r2/control/run_identity.json").unlink()
    check = _check(root)
    assert check.ok, check.lines()       # the run's caliber holds: no exit 4 for every workload
    assert check.workloads["matmul"] == (
        "!!! [caliber] run_identity.json: present vs missing (matmul/r1/baseline vs matmul/r2/control)",)
    assert check.workloads["add"] == ()


def test_shared_tuner_cache_warns_without_refusing(tmp_path):
    check = _check(rb.build(tmp_path, [rb.mm()], rb.Options(tuner_cache="shared")))
    assert check.ok
    assert check.warnings and "absolute latencies are not quotable" in check.warnings[0]


def test_guard_refuses_with_exit_4_and_release_still_prints(tmp_path):
    root = rb.build(tmp_path, [rb.mm()], rb.Options(identity={"matmul/r2/baseline": {"driver": "575.51.03"}}))
    check = _check(root)
    stream = io.StringIO()
    with pytest.raises(CampaignError) as raised:
        caliber.guard(check, False, stream)
    assert raised.value.exit_code == EXIT_CALIBER
    assert "!!! [caliber] driver: 570.124.06 vs 575.51.03" in stream.getvalue()
    released = io.StringIO()
    caliber.guard(check, True, released)
    assert "!!! [caliber] driver: 570.124.06 vs 575.51.03" in released.getvalue()


def test_cli_report_exits_4_before_reading_latencies(tmp_path, cli):
    root = rb.build(tmp_path, [rb.mm()], rb.Options(identity={"matmul/r2/candidate": {"bench_level": "comprehensive"}}))
    (root / "cells/matmul/r2/candidate/rows.json").write_text("not json: never read", encoding="utf-8")
    done = cli("report", root)
    assert done.returncode == 4, done.stderr
    assert "!!! [caliber] bench_level: core vs comprehensive" in done.stderr
    assert done.stdout == ""
    released = cli("report", root, "--allow-caliber-mismatch")
    assert released.returncode == 0, released.stderr
    assert "!!! [caliber] bench_level: core vs comprehensive" in released.stderr
    assert "| matmul | X |" in released.stdout
