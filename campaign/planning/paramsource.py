"""Where a ``@pytest.mark.parametrize`` argument list comes from, read from the source, never imported.

A list is followed through module constants, slices, ``+``, ``list()``/``tuple()`` and
``from module import NAME`` of a project module (`Module.lookup`), at most `MAX_DEPTH`
names deep. What cannot be read raises `Unreadable`; `campaign.planning.paramids` spells
the ids pytest gives the values found here.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from campaign.planning import pysource, targetfiles

MAX_DEPTH = 8          # names followed through constants and imports


class Unreadable(Exception):
    """The ids depend on something only running the code would show."""


class Module:
    """One parsed project module: its top-level assignments and ``from ... import`` names."""

    def __init__(self, project_root: Path, path: Path, cache: dict[Path, "Module"]):
        self.project_root, self.path, self.cache = project_root, path, cache
        self.tree = pysource.parse(path)
        self.assigns: dict[str, ast.expr] = {}
        self.imports: dict[str, tuple[str, str, int]] = {}
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.assigns[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self.assigns[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (node.module or "", alias.name, node.level)

    @classmethod
    def load(cls, project_root: Path, path: Path, cache: dict[Path, "Module"]) -> "Module":
        if path not in cache:
            cache[path] = cls(project_root, path, cache)
        return cache[path]

    def lookup(self, name: str, depth: int) -> Optional[tuple[ast.expr, "Module"]]:
        """The expression a module-level name is bound to, through project imports; None when unknown."""
        if depth > MAX_DEPTH:
            raise Unreadable(f"{name}: names refer to each other more than {MAX_DEPTH} deep")
        if name in self.assigns:
            return self.assigns[name], self
        if name not in self.imports:
            return None
        module, original, level = self.imports[name]
        if level:
            folder = self.path.parent
            for _ in range(level - 1):
                folder = folder.parent
            folders = [folder]
        else:
            folders = [targetfiles.base_folder(self.project_root, self.path), self.project_root]
        for folder in folders:
            stem = folder.joinpath(*module.split(".")) if module else folder
            for path in (stem.with_name(stem.name + ".py"), stem / "__init__.py"):
                if path.is_file() and targetfiles.inside(self.project_root, path):
                    return Module.load(self.project_root, path, self.cache).lookup(original, depth + 1)
        return None


def dotted_name(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def keyword(call: ast.Call, name: str, position: int) -> Optional[ast.expr]:
    for given in call.keywords:
        if given.arg == name:
            return given.value
    return call.args[position] if len(call.args) > position else None


def sequence(node: ast.expr, module: Module, depth: int = 0) -> list[tuple[ast.expr, Module]]:
    """The elements of a list-valued expression, each with the module it is written in."""
    if depth > MAX_DEPTH:
        raise Unreadable(f"{ast.unparse(node)}: followed more than {MAX_DEPTH} names")
    if isinstance(node, (ast.List, ast.Tuple)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise Unreadable(f"{ast.unparse(node)} unpacks another sequence")
        return [(e, module) for e in node.elts]
    if isinstance(node, ast.Name):
        bound = module.lookup(node.id, depth)
        if bound is None:
            raise Unreadable(f"{node.id} is not a list defined in the project")
        return sequence(bound[0], bound[1], depth + 1)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        bounds = [constant_int(part) for part in (node.slice.lower, node.slice.upper, node.slice.step)]
        return sequence(node.value, module, depth + 1)[slice(*bounds)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return sequence(node.left, module, depth + 1) + sequence(node.right, module, depth + 1)
    if (isinstance(node, ast.Call) and dotted_name(node.func) in ("list", "tuple") and len(node.args) == 1
            and not node.keywords):
        return sequence(node.args[0], module, depth + 1)
    raise Unreadable(f"{ast.unparse(node)} is not a literal list")


def constant_int(node: Optional[ast.expr]) -> Optional[int]:
    if node is None:
        return None
    value = ast.literal_eval(node) if isinstance(node, (ast.Constant, ast.UnaryOp)) else None
    if type(value) is not int:
        raise Unreadable(f"slice bound {ast.unparse(node)} is not an integer literal")
    return value
