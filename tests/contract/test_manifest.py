"""Manifest models through the YAML reader: every error located by file, line, column and key."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES

from campaign.contract import yamlio
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest

INVALID = FIXTURES / "manifests" / "invalid"
SEMANTIC = FIXTURES / "manifests" / "semantic"

EXPECTED = {
    "unknown_key.yaml": ["14:32: workloads -> 0 -> dtype: unknown key (not part of the manifest format); "
                         "did you mean dtypes?"],
    "wrong_type.yaml": ["13:10: rounds -> count: Input should be a valid integer (got 'two', a str)"],
    "env_not_string.yaml": ["11:17: switch -> cells -> candidate -> DISABLE_MMA_V3: Input should be a valid string (got 1: quote it)"],
    "both_node_ids_and_k.yaml": ["17:79: workloads -> 0 -> correctness -> k: give node_ids or k, never both"],
    "narrowing_without_reason.yaml": ["14:5: workloads -> 0 -> reason: narrowing (a shape subset) requires a reason"],
    "bad_regex.yaml": ["12:23: switch -> strip_annotations -> 0: regex 'ttg.rlc-([' does not compile: unterminated character set at position 10"],
    "duplicate_key.yaml": ['13:1: duplicate key: while constructing a mapping found duplicate key "timer" with value "{\'kind\': \'graph\'}" (original value: "{\'kind\': \'event\'}")'],
    "bad_campaign_id.yaml": ["2:1: campaign: String should match pattern '^[a-z0-9][a-z0-9-]*$'"],
    "python_tag.yaml": ["5:11: sources -> triton: explicit tag tag:yaml.org,2002:python/object:os.system is not allowed (plain data only)"],
    "several_errors.yaml": [
        "16:1: measured_launch_floor: Input should be greater than or equal to 0",
        "15:17: workloads -> 1 -> op: String should match pattern '^[a-z0-9_]+$'",
        "15:39: workloads -> 1 -> timeout_s: Input should be greater than or equal to 1",
        "15:26: workloads -> 1 -> canary: Input should be a valid boolean",
    ],
    "duplicate_workload.yaml": ["15:6: workloads -> 1 -> name: name 'matmul' is already used by workload 0"],
    "candidate_equals_baseline.yaml": ["11:5: switch -> cells -> candidate: baseline and candidate have the same env: nothing would be compared"],
    "control_equals_baseline.yaml": ["11:5: switch -> cells -> control: control has the same env as baseline: it must turn the switch's plumbing on"],
}


def _invalid_files() -> list[Path]:
    return sorted(INVALID.glob("*.yaml")) + sorted(SEMANTIC.glob("*.yaml"))


def test_every_invalid_fixture_has_its_expected_message():
    assert {p.name for p in _invalid_files()} == set(EXPECTED)


@pytest.mark.parametrize("path", _invalid_files(), ids=lambda p: p.name)
def test_invalid_fixture_message(path: Path):
    with pytest.raises(InputError) as caught:
        yamlio.validate(Manifest, path)
    assert caught.value.lines == [f"{path}:{tail}" for tail in EXPECTED[path.name]]


@pytest.mark.parametrize("path", sorted((FIXTURES / "manifests" / "valid").glob("*.yaml")), ids=lambda p: p.name)
def test_valid_fixture_loads_frozen(path: Path):
    manifest = yamlio.validate(Manifest, path)
    with pytest.raises(Exception):
        manifest.campaign = "other"  # frozen: a loaded contract cannot drift


def test_defaults_are_explicit():
    manifest = yamlio.validate(Manifest, FIXTURES / "manifests" / "valid" / "minimal.yaml")
    assert manifest.switch.ir_stage == "ttgir"
    assert manifest.switch.cell_names() == ("baseline", "candidate")
    assert manifest.defaults.timeout_s == 2400
    assert manifest.workloads[0].dtypes is None  # the op's own set, from the inventory


def test_cpu_campaign_cannot_claim_graph_timing(tmp_path: Path):
    text = (FIXTURES / "manifests" / "valid" / "minimal.yaml").read_text().replace("kind: event", "kind: graph")
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        yamlio.validate(Manifest, path)
    assert caught.value.lines == [f"{path}:12:9: timer -> kind: graph needs an accelerator; a cpu campaign times nothing: use event"]


def test_missing_file_is_input_error(tmp_path: Path):
    with pytest.raises(InputError, match="no such file"):
        yamlio.validate(Manifest, tmp_path / "absent.yaml")


def _narrowed(tmp_path: Path, defaults: str) -> Path:
    text = (FIXTURES / "manifests" / "valid" / "narrowed.yaml").read_text()
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("defaults: {timeout_s: 1200, bench_level: core, shape_mode: subset, tuner_cache: isolated}",
                                 f"defaults: {{{defaults}}}"))
    return path


def test_tuning_is_pinned_unless_each_side_is_asked_to_tune_for_itself(tmp_path: Path):
    assert yamlio.validate(Manifest, FIXTURES / "manifests" / "valid" / "narrowed.yaml").defaults.tuning == "pinned"
    assert yamlio.validate(Manifest, _narrowed(tmp_path, "tuning: per_side")).defaults.tuning == "per_side"


@pytest.mark.parametrize("defaults, why", [
    ("tuning: per_side, tuner_cache: shared", "21:12: defaults -> tuning: per_side: each side tunes into its own "
     "tuner store, and a shared tuner_cache hands one side the other's winners: use tuner_cache isolated"),
    ("tuning: per_side, autotune_from: {root: runs/s, receipt_sha256: " + "a" * 64 + "}",
     "21:12: defaults -> tuning: per_side: each side tunes for itself, and autotune_from replays another root's "
     "configs on every side: give one (pinned replays them)"),
    ("tuning: each", "21:12: defaults -> tuning: Input should be 'pinned' or 'per_side'"),
], ids=["shared-tuner-cache", "autotune-from", "unknown-mode"])
def test_per_side_is_refused_where_a_side_could_not_tune_for_itself(tmp_path: Path, defaults: str, why: str):
    path = _narrowed(tmp_path, defaults)
    with pytest.raises(InputError) as caught:
        yamlio.validate(Manifest, path)
    assert caught.value.lines == [f"{path}:{why}"]


def test_per_side_is_refused_on_the_compile_only_backend(tmp_path: Path):
    path = tmp_path / "m.yaml"
    path.write_text((FIXTURES / "manifests" / "valid" / "minimal.yaml").read_text() + "defaults: {tuning: per_side}\n")
    with pytest.raises(InputError) as caught:
        yamlio.validate(Manifest, path)
    assert caught.value.lines == [f"{path}:15:12: defaults -> tuning: per_side tunes each side by timing its configs; "
                                  "a cpu campaign times nothing (each side would take its first config, which pinned "
                                  "does too): use pinned"]
