"""The committed JSON Schemas equal what the models generate, and agree with them on every fixture."""
from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, PROJECT_ROOT

from campaign.commands import schema as schema_command
from campaign.contract import canonical, yamlio
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest

SCHEMA_DIR = PROJECT_ROOT / "schemas"


def _validator():
    schema = canonical.read_json(SCHEMA_DIR / "manifest.schema.json")
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def test_committed_schemas_are_byte_identical_to_generated():
    for name, text in schema_command.render().items():
        committed = (SCHEMA_DIR / name).read_bytes()
        assert committed == text.encode(), f"schemas/{name} is stale: run `campaign schema`"
        assert committed.endswith(b"\n") and b"\r" not in committed


def test_schema_check_command_detects_drift(tmp_path: Path, cli):
    for name, text in schema_command.render().items():
        (tmp_path / name).write_text(text.replace('"title"', '"titel"', 1))
    done = cli("schema", "--check", "--dir", tmp_path)
    assert done.returncode == 1
    assert "manifest.schema.json differs from the models" in done.stderr


def _manifests_and_valid_fixtures() -> list[Path]:
    return sorted((PROJECT_ROOT / "manifests").glob("*.yaml")) + sorted((FIXTURES / "manifests" / "valid").glob("*.yaml"))


@pytest.mark.parametrize("path", _manifests_and_valid_fixtures(), ids=lambda p: p.name)
def test_valid_under_both(path: Path):
    data, _ = yamlio.load(path)
    _validator().validate(data)
    yamlio.validate(Manifest, path)


@pytest.mark.parametrize("path", sorted((FIXTURES / "manifests" / "invalid").glob("*.yaml")), ids=lambda p: p.name)
def test_invalid_under_both(path: Path):
    with pytest.raises(InputError):
        yamlio.validate(Manifest, path)
    try:
        data, _ = yamlio.load(path)
    except InputError:
        return  # not even plain YAML data: no schema can accept it
    errors = list(_validator().iter_errors(data))
    assert errors, f"{path.name} passes the JSON Schema"


@pytest.mark.parametrize("path", sorted((FIXTURES / "manifests" / "semantic").glob("*.yaml")), ids=lambda p: p.name)
def test_cross_field_rules_are_beyond_the_schema(path: Path):
    """Rules across fields (unique names, differing cells) are enforced by the models alone;
    the schema accepts these files, which is why prepare never trusts the schema by itself."""
    data, _ = yamlio.load(path)
    _validator().validate(data)
    with pytest.raises(InputError):
        yamlio.validate(Manifest, path)
