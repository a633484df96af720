"""`campaign prepare` and `campaign validate` as real subprocesses: roots, refusals, exit codes."""
from __future__ import annotations

import importlib.metadata
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import FIXTURES, PROJECT_ROOT

from campaign.contract import canonical
from campaign.contract.errors import InputError
from campaign.flows.freeze import claim_root
from campaign.planning import installedcode, inventory

DEMO = PROJECT_ROOT / "manifests" / "demo-cpu.yaml"
MINIMAL = FIXTURES / "manifests" / "valid" / "minimal.yaml"


def _manifest(tmp_path: Path, old: str, new: str) -> Path:
    text = MINIMAL.read_text()
    assert old in text
    path = tmp_path / "manifest.yaml"
    path.write_text(text.replace(old, new))
    return path


def test_prepare_freezes_a_root(tmp_path: Path, cli):
    done = cli("prepare", DEMO, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    root = Path(done.stdout.strip().splitlines()[-1])
    assert root.parent == tmp_path / "runs" and root.name.startswith("demo-cpu-")
    # the journal's first line, anchored to prepare.json, is written by prepare (`campaign.contract.journal`)
    assert sorted(p.name for p in root.iterdir()) == ["digests.jsonl", "manifest.yaml", "matrix.json", "prepare.json"]
    assert (root / "manifest.yaml").read_bytes() == DEMO.read_bytes()
    record = canonical.read_json(root / "prepare.json")
    assert record["manifest_sha256"] == canonical.sha256_file(DEMO)
    assert record["harness"]["campaign/planning/matrix.py"] == canonical.sha256_file(PROJECT_ROOT / "campaign" / "planning" / "matrix.py")
    assert record["harness"]["ops/inventory.csv"] == record["inventory_sha256"]
    assert record["resolved_targets"]["matmul"]["benchmark"] == "ops/workloads/demo/bench_demo.py::test_bench_matmul"
    # the installed packages a cell imports, checked against their RECORD, and the start-up code
    installed = record["installed"]
    assert {name for name, found in installed["distributions"].items() if found} >= {"torch", "triton"}
    assert installed["distributions"]["triton"]["version"] == importlib.metadata.version("triton")
    assert installed["startup"] == installedcode.startup()      # this interpreter's .pth files, digested
    matrix = canonical.read_json(root / "matrix.json")
    assert len(matrix["tasks"]) == record["tasks"] == 24
    assert (root / "matrix.json").read_text() == (PROJECT_ROOT / "tests" / "golden" / "matrix-demo-cpu.json").read_text()


def test_two_prepares_never_share_a_root(tmp_path: Path, cli):
    now = datetime(2026, 11, 29, 8, 0, 0, tzinfo=timezone.utc)
    first, second = claim_root(tmp_path, "demo-cpu", now), claim_root(tmp_path, "demo-cpu", now)
    assert first != second and first.is_dir() and second.is_dir()
    assert second.name == "demo-cpu-20261129T080000Z-2"
    roots = {cli("prepare", DEMO, "--runs-dir", tmp_path / "r").stdout.strip().splitlines()[-1] for _ in range(2)}
    assert len(roots) == 2


def test_invalid_manifest_exits_2_with_position_and_nothing_left(tmp_path: Path, cli):
    path = _manifest(tmp_path, "op: matmul}", "op: matmul, dtype: [float16]}")
    done = cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 2
    assert f"{path}:14:32: workloads -> 0 -> dtype: unknown key" in done.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("old,new,check,where", [
    ("op: matmul}", "op: conv9d}", "inventory", "14:20: workloads -> 0 -> op: conv9d (builtin) is not in ops/inventory.csv"),
    ("op: matmul}", "op: matmul, benchmark: ops/workloads/demo/bench_demo.py::test_bench_conv}",
     "benchmark_target", "14:32: workloads -> 0 -> benchmark: ops/workloads/demo/bench_demo.py: no function test_bench_conv"),
    ("op: matmul}", "op: matmul, benchmark: ops/workloads/demo/absent.py::test_x}",
     "benchmark_target", "workloads -> 0 -> benchmark: ops/workloads/demo/absent.py: no such file"),
    ("op: matmul}", 'op: matmul, shapes: ["3x3x3"], reason: "a narrowing with its reason"}',
     "shapes", "workloads -> 0 -> shapes: shape 3x3x3 is not in the op's set"),
    ("op: matmul}", 'op: matmul, correctness: {node_ids: ["ops/workloads/demo/test_demo.py::test_mm"]}, reason: "only the matmul test speaks"}',
     "correctness_target", "workloads -> 0 -> correctness -> node_ids -> 0: ops/workloads/demo/test_demo.py: no function test_mm"),
])
def test_prepare_refusals_name_the_check_and_leave_nothing(tmp_path: Path, cli, old, new, check, where):
    path = _manifest(tmp_path, old, new)
    done = cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 2, done.stdout
    assert f"PREPARE_REFUSED check={check}: {path}:" in done.stderr
    assert where in done.stderr
    assert not (tmp_path / "runs").exists()


def test_unknown_op_with_a_reason_still_needs_targets(tmp_path: Path, cli):
    path = _manifest(tmp_path, "op: matmul}", 'op: conv9d, reason: "not in the inventory yet, measured ad hoc"}')
    done = cli("validate", path)
    assert done.returncode == 2
    assert "PREPARE_REFUSED check=benchmark_target" in done.stderr


def test_validate_writes_nothing(tmp_path: Path, cli):
    done = cli("validate", DEMO, MINIMAL, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{DEMO}: ok (4 workloads, 24 tasks)", f"{MINIMAL}: ok (1 workloads, 4 tasks)"]
    assert list(tmp_path.iterdir()) == []


def test_dismiss_entry_without_reason_is_refused(tmp_path: Path):
    (tmp_path / "inventory.csv").write_text((PROJECT_ROOT / "ops" / "inventory.csv").read_text())
    (tmp_path / "dismiss.csv").write_text("op,provider,reason\nfft,flaggems,\n")
    with pytest.raises(InputError, match=r"dismiss.csv:2: fft is dismissed without a reason"):
        inventory.load(tmp_path)


def test_dismissed_op_needs_a_reason_in_the_manifest(tmp_path: Path):
    from campaign.contract import yamlio
    from campaign.contract.errors import CampaignError
    from campaign.contract.manifest import Manifest
    from campaign.planning.resolve import resolve
    ops = tmp_path / "ops"
    ops.mkdir()
    (ops / "inventory.csv").write_text((PROJECT_ROOT / "ops" / "inventory.csv").read_text())
    (ops / "dismiss.csv").write_text("op,provider,reason\nmatmul,builtin,compiles no Triton kernel on this backend\n")
    known = inventory.load(ops)
    manifest = yamlio.validate(Manifest, MINIMAL)
    _, document = yamlio.load(MINIMAL)
    with pytest.raises(CampaignError) as caught:
        resolve(manifest, known, PROJECT_ROOT, "m.yaml", document)
    assert caught.value.lines == ["PREPARE_REFUSED check=dismissed: m.yaml:14:20: workloads -> 0 -> op: "
                                  "matmul is on ops/dismiss.csv (compiles no Triton kernel on this backend); "
                                  "give a reason to run it anyway"]


def test_python_dash_m_and_console_script_agree(cli):
    done = cli("--version")
    assert done.returncode == 0 and done.stdout.startswith("campaign ")
