"""The house's size limits, checked: no module of the package over 300 lines, no function over 60
but the named exceptions below, each with its reason (ARCHITECTURE.md).

A limit that is only written down drifts (two modules had crossed 300 lines before this test); the
exceptions are few and say why a reader is better served by one long function there.
"""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import PROJECT_ROOT

PACKAGES = ("campaign", "worker", "plugins", "reaccount")
MODULE_LINES = 300
FUNCTION_LINES = 60

# "module::function" -> why it stays longer than FUNCTION_LINES
LONG_FUNCTIONS = {
    "campaign/flows/session.py::execute": "the run's phases in order (lock, checks, runner, judge, seal), each with "
                                          "its named exit; split, the order of the refusals is no longer on one page",
}


def _modules() -> list[Path]:
    return sorted(p for top in PACKAGES for p in (PROJECT_ROOT / top).rglob("*.py"))


def long_modules(paths: list[Path], limit: int = MODULE_LINES) -> list[str]:
    out = []
    for path in paths:
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > limit:
            out.append(f"{path.relative_to(PROJECT_ROOT).as_posix()}: {count} lines")
    return out


def long_functions(paths: list[Path], limit: int = FUNCTION_LINES) -> dict[str, int]:
    out = {}
    for path in paths:
        rel = path.relative_to(PROJECT_ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    out[f"{rel}::{node.name}"] = length
    return out


def test_no_module_is_over_300_lines():
    assert not long_modules(_modules()), "split the module (one responsibility each):\n" + "\n".join(long_modules(_modules()))


def test_no_function_is_over_60_lines_but_the_named_exceptions():
    found = long_functions(_modules())
    unnamed = {name: n for name, n in found.items() if name not in LONG_FUNCTIONS}
    assert not unnamed, f"split these or name them in LONG_FUNCTIONS with a reason: {unnamed}"
    stale = sorted(set(LONG_FUNCTIONS) - set(found))
    assert not stale, f"no longer over {FUNCTION_LINES} lines: drop them from LONG_FUNCTIONS: {stale}"


def test_the_limits_catch_a_long_module_and_a_long_function(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("test_house_limits.PROJECT_ROOT", tmp_path)
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    module = tmp_path / "campaign" / "big.py"
    module.parent.mkdir()
    module.write_text("def f():\n" + body + "\n" + "\n" * 240, encoding="utf-8")
    assert long_modules([module]) == ["campaign/big.py: 302 lines"]
    assert long_functions([module]) == {"campaign/big.py::f": 62}
    module.write_text("def f():\n" + "\n".join(body.splitlines()[:59]) + "\n", encoding="utf-8")
    assert long_modules([module]) == [] and long_functions([module]) == {}
