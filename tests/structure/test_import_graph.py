"""The import graph of the package: no cycles, and the stages import downward only.

Read from the source with ``ast`` (nothing imported): every module of campaign/, worker/,
plugins/ and reaccount/ under its installed name (campaign.worker, ...), and the
campaign.* modules each one imports at module level.
"""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import PROJECT_ROOT

FOLDERS = {"campaign": "campaign", "worker": "campaign.worker", "plugins": "campaign.plugins",
           "reaccount": "campaign.reaccount"}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = path.relative_to(PROJECT_ROOT / folder).with_suffix("").parts
            name = ".".join((package, *parts))
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """campaign.* modules imported at module level (function-level imports are deliberate late binds)."""
    out: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name.startswith("campaign"):
                out.add(name)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_module_graph_has_no_cycle():
    cycle = _cycle(_graph())
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_only_the_cli_imports_commands_and_nothing_below_flows_imports_flows():
    graph = _graph()
    bad = sorted(f"{name} imports {dep}" for name, deps in graph.items() for dep in deps
                 if (dep.startswith("campaign.commands") and not name.startswith(("campaign.commands", "campaign.cli")))
                 or (dep.startswith("campaign.flows") and not name.startswith(("campaign.commands", "campaign.flows",
                                                                                "campaign.cli"))))
    assert not bad, "\n".join(bad)


def test_the_contract_imports_no_other_stage():
    graph = _graph()
    stages = ("planning", "running", "judging", "sealing", "reporting", "flows", "commands")
    bad = sorted(f"{name} imports {dep}" for name, deps in graph.items() if name.startswith("campaign.contract")
                 for dep in deps if any(dep.startswith(f"campaign.{stage}") for stage in stages))
    assert not bad, "\n".join(bad)


def _every_import(path: Path) -> set[str]:
    """campaign.* names a module imports anywhere, function-level late binds included."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.update([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
    return {name for name in out if name.startswith("campaign")}


def test_no_hidden_tie_hides_in_a_function_level_import():
    """A late import is no way round a cycle: planning never reaches for sealing (which reads planning's
    harness; the flow hands pinning its `SourceSeal`), and nothing imports the worker's entry point
    (a cell's run is `campaign.worker.runcell`, which ``__main__`` and the batch both call)."""
    modules = _modules()
    bad = sorted(f"{name} imports {dep}" for name, path in modules.items() for dep in _every_import(path)
                 if (name.startswith("campaign.planning") and dep.startswith("campaign.sealing"))
                 or dep.startswith("campaign.worker.__main__"))
    assert not bad, "\n".join(bad)
