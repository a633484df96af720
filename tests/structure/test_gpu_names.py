"""Every project name a gpu test reads exists, checked where no card is.

CI collects the gpu-marked modules, so their top-level imports run there, but it never runs a gpu test's body.
A name read inside that body fails only on a card. On 2026-12-07 `tests/gpu/test_throttle_gpu.py` read
`telemetry.TELEMETRY_FILE` after the name had moved to `campaign.contract.artifacts`. It failed on an H100 twice,
and the first time the cause was lost (`receipts/h100-gpu-tests-20261207-c/`).

Each module that carries the gpu marker is read with `ast`, and two kinds of reference are resolved against the
modules themselves:
- a ``from X import Y`` of the project, at any depth of the file: Y is a module of X or one of its names;
- ``alias.NAME`` where ``alias`` is a project module bound by an import and never assigned in the file.

The project is ``campaign.*`` and the tests' own helper modules (conftest, builders). torch, flag_gems and the
other installed packages are not checked: a name there depends on the host's versions.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import types
from pathlib import Path

from conftest import PROJECT_ROOT

TESTS = PROJECT_ROOT / "tests"
MARKER = "pytest.mark.gpu"
MISSING = object()


def gpu_modules() -> list[Path]:
    here = Path(__file__).resolve()
    return sorted(p for p in TESTS.rglob("test_*.py") if p.resolve() != here and MARKER in p.read_text(encoding="utf-8"))


def _ours(name: str) -> bool:
    if name.split(".")[0] == "campaign":
        return True
    spec = importlib.util.find_spec(name.split(".")[0])
    return spec is not None and spec.origin is not None and Path(spec.origin).resolve().is_relative_to(TESTS)


def _member(module: str, name: str) -> object:
    """``module.name`` as ``from module import name`` finds it: an attribute, else a submodule; MISSING if neither."""
    found = getattr(importlib.import_module(module), name, MISSING)
    if found is not MISSING:
        return found
    try:
        return importlib.import_module(f"{module}.{name}")
    except ModuleNotFoundError:
        return MISSING


def unresolved(source: str, filename: str) -> tuple[list[str], int]:
    """The project names ``source`` reads that do not exist (``file:line: what``), and how many it read."""
    tree = ast.parse(source)
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    modules: dict[str, str] = {}
    found, checked = [], 0
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and _ours(node.module):
            for alias in node.names:
                checked += 1
                member = _member(node.module, alias.name)
                if member is MISSING:
                    found.append(f"{filename}:{node.lineno}: {node.module} has no {alias.name}")
                elif isinstance(member, types.ModuleType):
                    modules[alias.asname or alias.name] = member.__name__
        elif isinstance(node, ast.Import):
            modules.update({a.asname: a.name for a in node.names if a.asname and _ours(a.name)})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)
                and node.value.id in modules and node.value.id not in assigned):
            checked += 1
            if not hasattr(importlib.import_module(modules[node.value.id]), node.attr):
                found.append(f"{filename}:{node.lineno}: {modules[node.value.id]} has no {node.attr}")
    return found, checked


def test_every_project_name_a_gpu_test_reads_exists():
    files = gpu_modules()
    assert len(files) >= 14, [str(p) for p in files]      # tests/gpu's twelve, the worker's and the narrowing's
    found, checked = [], 0
    for path in files:
        missing, read = unresolved(path.read_text(encoding="utf-8"), str(path.relative_to(PROJECT_ROOT)))
        found += missing
        checked += read
    assert found == []
    assert checked >= 100, checked      # the gpu tests read well over a hundred project names: this check reads them


def test_the_stale_name_that_failed_on_the_card_is_found_at_its_line():
    # the text of the gpu test as it stood at 7384094, reduced to its imports and the line that failed on the card
    source = ("from campaign.running import telemetry\n"
              "from campaign.contract import telemetryfile\n"
              "def test_window(tmp_path):\n"
              "    return telemetryfile.read_samples(tmp_path / telemetry.TELEMETRY_FILE)\n")
    assert unresolved(source, "t.py") == (["t.py:4: campaign.running.telemetry has no TELEMETRY_FILE"], 4)


def test_a_missing_name_imported_inside_a_test_body_is_found_and_a_rebound_alias_is_left_alone():
    source = ("from campaign.contract import artifacts\n"
              "def test_body():\n"
              "    from campaign.contract.artifacts import ROWS_FILE, NO_SUCH_FILE\n"
              "    from conftest import PROJECT_ROOT\n"
              "    artifacts = object()\n"
              "    return ROWS_FILE, NO_SUCH_FILE, PROJECT_ROOT, artifacts.anything\n")
    found, checked = unresolved(source, "t.py")
    assert found == ["t.py:3: campaign.contract.artifacts has no NO_SUCH_FILE"]
    assert checked == 4      # artifacts, ROWS_FILE, NO_SUCH_FILE, PROJECT_ROOT; the rebound alias's read is not one
