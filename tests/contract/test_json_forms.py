"""`--format json` of validate, verify, screen, cost and inventory: each command's real output
(the CLI as a subprocess, a real screen on the CPU compile-only backend) validated against its
committed schema (schemas/<command>.schema.json) and its model."""
from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import jsonschema
import pytest
import runroots
from conftest import PROJECT_ROOT, run_cli

from campaign.contract import outputs
from campaign.contract.errors import EXIT_INPUT, EXIT_OK, EXIT_VERIFY

SCHEMAS = PROJECT_ROOT / "schemas"
MODELS = {"validate": outputs.ValidateOutput, "verify": outputs.VerifyOutput, "screen": outputs.ScreenOutput,
          "cost": outputs.CostOutput, "inventory": outputs.InventoryOutput}
CHECKOUT = PROJECT_ROOT / "tests" / "data" / "fake_flaggems_53"


def _read(command: str, stdout: str) -> dict:
    """The JSON a command printed, checked against its schema and its model."""
    data = json.loads(stdout)
    schema = json.loads((SCHEMAS / f"{command}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(data)
    MODELS[command].model_validate(data)
    return data


@pytest.fixture
def screened(screened_add_sass) -> dict:
    """The session's real screen of the demo add on the CPU compile-only backend (`conftest.screened_add_sass`:
    at sass, ``--format json``), its table as the JSON the screen printed."""
    return _read("screen", screened_add_sass["stdout"])


def test_screen_prints_its_table_and_nothing_else(screened):
    root = Path(screened["root"])
    assert screened["table"] == str(root / "screen.tsv")
    assert [row["workload"] for row in screened["rows"]] == ["add"]
    assert all(set(row) == set(screened["columns"]) for row in screened["rows"])
    header = (root / "screen.tsv").read_text(encoding="utf-8").splitlines()[0].split("\t")
    assert list(screened["columns"]) == header


def test_verify_json_on_a_sealed_root_and_a_tampered_copy(screened, tmp_path):
    root = Path(screened["root"])
    done = run_cli("verify", root, "--format", "json")
    assert done.returncode == EXIT_OK, done.stderr
    clean = _read("verify", done.stdout)
    assert clean["ok"] and clean["differences"] == [] and clean["files_recorded"] > 5
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    copy.chmod(0o755)          # the root's own mode is not recorded: a warning, not a difference
    table = copy / "screen.tsv"
    table.chmod(table.stat().st_mode | stat.S_IWUSR)
    table.write_text("edited\n", encoding="utf-8")
    done = run_cli("verify", copy, "--format", "json")
    assert done.returncode == EXIT_VERIFY
    tampered = _read("verify", done.stdout)
    assert not tampered["ok"]
    assert {(d["kind"], d["path"]) for d in tampered["differences"]} >= {("changed", "screen.tsv"),
                                                                          ("mode", "screen.tsv")}
    assert "." in tampered["writable"]


def test_cost_json_holds_the_lines_of_the_table(screened):
    root = Path(screened["root"])
    done = run_cli("cost", root, "--format", "json")
    assert done.returncode == EXIT_OK, done.stderr
    cost = _read("cost", done.stdout)
    assert cost["sealed"] and cost["backend"] == "cpu"
    scopes = [line["scope"] for line in cost["lines"]]
    assert scopes[0] == "workload" and scopes[-1] == "total" and "cell" in scopes
    ir_pass = [line["name"] for line in cost["lines"] if line["ir_pass"]]
    assert ir_pass and all("/r0/" in name for name in ir_pass)
    total = cost["lines"][-1]
    assert total["cells"] == sum(line["cells"] for line in cost["lines"] if line["scope"] == "cell")


def test_validate_json_names_every_manifest_refusals_included(tmp_path):
    good = runroots.manifest(tmp_path, [runroots.demo("add")], campaign="good")
    bad = runroots.manifest(tmp_path, ["  - {name: add, op: add, dtyps: [float16]}\n"], campaign="bad")
    done = run_cli("validate", good, bad, "--format", "json")
    assert done.returncode == EXIT_INPUT
    assert done.stderr == ""
    found = _read("validate", done.stdout)
    assert not found["ok"]
    first, second = found["manifests"]
    assert (first["path"], first["ok"], first["exit_code"], first["workloads"]) == (str(good), True, EXIT_OK, 1)
    assert (second["ok"], second["exit_code"], second["tasks"]) == (False, EXIT_INPUT, None)
    assert any("workloads -> 0 -> dtyps: unknown key" in line for line in second["errors"])


def test_inventory_json_has_the_csv_rows(tmp_path):
    done = run_cli("inventory", CHECKOUT, "--format", "json")
    assert done.returncode == EXIT_OK, done.stderr
    found = _read("inventory", done.stdout)
    assert found["layout"] == "per_op" and found["items"]
    as_csv = run_cli("inventory", CHECKOUT)
    assert len(as_csv.stdout.strip().splitlines()) - 1 == len(found["items"])
    assert {item["verified"] for item in found["items"]} == {"not run"}
    out = tmp_path / "inventory.json"
    written = run_cli("inventory", CHECKOUT, "--format", "json", "--out", out)
    assert written.returncode == EXIT_OK, written.stderr
    assert json.loads(out.read_text(encoding="utf-8")) == found
    assert f"{out}: {len(found['items'])} benchmark items" in written.stdout
