"""Configs pinned across roots (``defaults.autotune_from``), through the CLI on the CPU
compile-only backend: a sealed source root records, a second root replays its recording in
every cell and tunes nothing; a source that does not verify, or is not the one the
manifest's digest names, is refused by prepare with the manifest's file, line and key."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import runroots
from conftest import PROJECT_ROOT, run_cli

from campaign.contract import canonical
from campaign.contract.plans import Matrix
from campaign.contract.runroot import RunRoot
from campaign.judging import caliber
from campaign.planning import pinning

DEFAULTS = "defaults:\n  timeout_s: 120\n"
# one dtype: the configs recorded and replayed are the point, and each dtype compiles every config again
MATMUL = "  - {name: matmul, op: matmul, dtypes: [float16]}\n"


def pinned_manifest(tmp_path: Path, source: Path, digest: str, name: str = "pinned") -> Path:
    path = runroots.manifest(tmp_path, [MATMUL], campaign=name)
    text = path.read_text(encoding="utf-8")
    assert text.count(DEFAULTS) == 1
    pin = f"  autotune_from:\n    root: {source}\n    receipt_sha256: \"{digest}\"\n"
    path.write_text(text.replace(DEFAULTS, DEFAULTS + pin), encoding="utf-8")
    return path


def prepare(path: Path, runs: Path):
    return run_cli("prepare", path, "--runs-dir", runs)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A sealed root whose round-1 baseline recorded the matmul's configs."""
    base = tmp_path_factory.mktemp("source")
    root = runroots.prepare(base, [MATMUL], campaign="source")
    done = runroots.run(root)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (root / "receipt.json").is_file()
    return root


def digest_of(root: Path) -> str:
    return canonical.sha256_file(root / "receipt.json")


def test_every_cell_replays_the_sealed_roots_recording_and_nothing_is_re_tuned(source, tmp_path):
    recorded = source / "cells" / "matmul" / "r1" / "baseline" / "autotune.json"
    assert json.loads(recorded.read_text())["mode"] == "record"
    done = prepare(pinned_manifest(tmp_path, source, digest_of(source)), tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    root = Path(done.stdout.strip().splitlines()[-1])
    matrix = Matrix.model_validate(canonical.read_json(root / "matrix.json"))
    assert {(t.autotune.mode, t.autotune.source) for t in matrix.tasks} == {("replay", "autotune_from/matmul")}
    assert (root / "autotune_from" / "matmul" / "autotune.json").read_bytes() == recorded.read_bytes()

    ran = runroots.run(root)
    assert ran.returncode == 0, ran.stderr[-3000:]
    recording = json.loads(recorded.read_text())
    for task in matrix.tasks:
        cell = root / "cells" / task.id
        replayed = json.loads((cell / "autotune.json").read_text())
        assert (replayed["mode"], replayed["source"], replayed["fallbacks"], replayed["tuning_runs"]) == (
            "replay", "autotune_from/matmul", [], 0), task.id
        assert replayed["entries"] == recording["entries"], task.id
        assert json.loads((cell / "run_identity.json").read_text())["autotune_from"] == digest_of(source)
    # the copy is sealed with the new root, and the digest is a caliber field its cells agree on
    receipt = json.loads((root / "receipt.json").read_text())
    assert "autotune_from/matmul/autotune.json" in receipt["files"]
    assert run_cli("verify", root).returncode == 0
    identities = caliber.load_identities(root, matrix.tasks)
    assert caliber.compare(matrix.tasks, identities).table["autotune_from"] == digest_of(source)


def test_a_cell_that_replayed_another_roots_configs_is_a_caliber_finding(source):
    matrix = Matrix.model_validate(canonical.read_json(source / "matrix.json"))
    identities = caliber.load_identities(source, matrix.tasks)
    candidate = next(t.id for t in matrix.tasks if t.cell == "candidate")
    identities[candidate] = {**identities[candidate], "autotune_from": "ab" * 32}
    check = caliber.compare(matrix.tasks, identities)
    assert {f.field for f in check.findings} == {"autotune_from"}


def test_a_tampered_source_root_is_refused_by_name(source, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(source, copy)
    edited = copy / "cells" / "matmul" / "r1" / "baseline" / "autotune.json"
    os.chmod(edited.parent, 0o755)
    os.chmod(edited, 0o644)
    edited.write_text(edited.read_text().replace('"BLOCK_M": 128', '"BLOCK_M": 64'))
    manifest = pinned_manifest(tmp_path, copy, digest_of(copy))
    done = prepare(manifest, tmp_path / "runs")
    assert done.returncode == 5, done.stdout + done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("PREPARE_REFUSED"))
    assert line.startswith(f"PREPARE_REFUSED check=autotune_from: {manifest}:")
    assert "defaults -> autotune_from -> root:" in line
    assert "changed: cells/matmul/r1/baseline/autotune.json" in line
    assert not list((tmp_path / "runs").glob("pinned-*")), "a refused prepare leaves no root"


def test_a_digest_that_is_not_the_roots_receipt_is_refused_at_its_key(source, tmp_path):
    manifest = pinned_manifest(tmp_path, source, "0" * 64)
    done = prepare(manifest, tmp_path / "runs")
    assert done.returncode == 5, done.stdout + done.stderr
    text = manifest.read_text().splitlines()
    line_no = next(n for n, line in enumerate(text, 1) if "receipt_sha256" in line)
    assert f"{manifest}:{line_no}:5: defaults -> autotune_from -> receipt_sha256:" in done.stderr
    assert f"hashes to {digest_of(source)}" in done.stderr


def test_an_unsealed_source_or_a_workload_it_lacks_is_refused(source, tmp_path):
    (tmp_path / "u").mkdir()
    unsealed = runroots.prepare(tmp_path / "u", [MATMUL], campaign="unsealed")
    done = prepare(pinned_manifest(tmp_path, unsealed, "0" * 64, name="p1"), tmp_path / "runs")
    assert done.returncode == 2 and "only a sealed root's configs can be pinned" in done.stderr
    manifest = runroots.manifest(tmp_path, ["  - {name: matmull, op: add}\n"], campaign="p2")
    manifest.write_text(manifest.read_text().replace(
        DEFAULTS, DEFAULTS + f"  autotune_from: {{root: {source}, receipt_sha256: \"{digest_of(source)}\"}}\n"))
    done = prepare(manifest, tmp_path / "runs")
    assert done.returncode == 2 and "has no workload 'matmull'; did you mean matmul? (it has: matmul)" in done.stderr


def test_replay_sources_resolve_to_the_pinned_copy_or_the_recording_cell(tmp_path):
    assert pinning.recording_dir(RunRoot(tmp_path), "autotune_from/mm") == tmp_path / "autotune_from" / "mm"
    assert pinning.recording_dir(RunRoot(tmp_path), "autotune_from/r1/baseline") == tmp_path / "cells" / "autotune_from" / "r1" / "baseline"


def test_a_screen_root_hands_on_round_1s_recording_not_the_ir_pass_first_config(tmp_path):
    # a screen's IR pass (round 0) records each kernel's first config only; round 1 recorded the
    # winners it timed (on the CPU backend both hold the first config, so the CLI cannot tell them apart)
    from campaign.flows import freeze
    from campaign.planning.matrix import expand
    checked = freeze.check(PROJECT_ROOT / "manifests" / "demo-cpu.yaml")
    one = checked.manifest.model_copy(update={"rounds": checked.manifest.rounds.model_copy(update={"count": 1})})
    matrix = expand(one, checked.resolved, ir_pass=True)
    for task_id in ("matmul/r0/baseline", "matmul/r1/baseline"):
        (tmp_path / "cells" / task_id).mkdir(parents=True)
        (tmp_path / "cells" / task_id / "autotune.json").write_text("{}", encoding="utf-8")
    assert pinning._recording(RunRoot(tmp_path), matrix, "matmul", None) == tmp_path / "cells" / "matmul" / "r1" / "baseline"
