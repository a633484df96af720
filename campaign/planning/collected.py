"""What pytest collects from a test file, read from the file and never imported: the nodes a refused
target is shown beside, the names a typo is closest to, and whether a ``-k`` selects anything.

pytest's defaults (``python_functions = test``, ``python_classes = Test``) make the tests a file
collects: each module-level function named ``test*``, each method ``test*`` of a class ``Test*``,
nested classes too, each parametrization an id (`campaign.planning.paramids`). A target may name
any function or class chain the file defines (the project's bench files are not named test_*.py,
their functions are named on purpose), so `name_problem` refuses only a chain the file does not
define. A ``-k`` is evaluated as pytest evaluates it (`campaign.contract.nodeids.keyword_selects`)
over the names each node gives it (its folders below the rootdir, the file, its classes, the
function with its id, its marks); where a node may carry names the files do not show (ids that
cannot be read, a mark given per parameter set, a hook or ``pytestmark`` that adds some, an
attribute set on a test function), a ``-k`` that selects nothing is said not checked, never refused.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from campaign.contract import nodeids
from campaign.contract.suggest import did_you_mean
from campaign.planning import paramids, pysource, targetfiles
from campaign.planning.paramsource import Unreadable, dotted_name

SHOWN = 12                          # nodes a refusal lists
KEYWORD_HOOKS = ("pytest_collection_modifyitems", "pytest_itemcollected", "pytest_generate_tests")


@dataclass(frozen=True)
class Defined:
    names: tuple[str, ...]          # classes, then the function (or a class alone)
    marks: frozenset[str]           # the @pytest.mark names on it and on its classes
    is_test: bool                   # collected under pytest's default names


def _marks(node: ast.AST) -> set[str]:
    dotted = (dotted_name(d.func if isinstance(d, ast.Call) else d) or "" for d in getattr(node, "decorator_list", ()))
    return {name.rsplit(".", 1)[-1] for name in dotted if ".mark." in f".{name}"}


def defined(tree: ast.Module) -> list[Defined]:
    """Every function and class chain of a module, in file order."""
    out: list[Defined] = []

    def walk(body, names: tuple[str, ...], marks: frozenset[str], in_tests: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append(Defined((*names, node.name), marks | _marks(node), in_tests and node.name.startswith("test")))
            elif isinstance(node, ast.ClassDef):
                test_class = in_tests and node.name.startswith("Test")
                out.append(Defined((*names, node.name), marks | _marks(node), False))
                walk(node.body, (*names, node.name), marks | _marks(node), test_class)
    walk(tree.body, (), frozenset(), True)
    return out


@lru_cache(maxsize=256)
def _read(path: Path, mtime_ns: int) -> tuple[ast.Module, tuple[Defined, ...]]:
    """A file's tree and definitions, read once per version of it (a suite's targets share files)."""
    tree = pysource.parse(path)
    return tree, tuple(defined(tree))


def nodes(rootdir: Path, path: Path, relative: str, test: Defined,
          every: bool = False) -> tuple[list[nodeids.NodeId], Optional[str]]:
    """The node ids pytest gives one test; with a reason where its ids cannot all be read (``every``:
    each id in every spelling it may have, a superset that a ``-k`` without ``not`` is safely held to)."""
    function = "::".join(test.names)
    try:
        found = paramids.layers(rootdir, path, function)
    except (Unreadable, SyntaxError, ValueError, OSError, StopIteration) as exc:
        return [nodeids.NodeId(relative, test.names)], f"{function}: ids not read ({exc})"
    if not found:
        return [nodeids.NodeId(relative, test.names)], None
    # a value the files do not define (torch.float16) may be spelled more than one way: every spelling
    # with ``every``, else the first, the ids said not all known
    many = any(len(s) > 1 for layer in found for s in layer.ids)
    spelled = paramids.ids(found, every=every) if many and every else paramids.ids(found)
    why = None if not many or (every and len(spelled) < paramids.MAX_IDS) else f"{function}: ids with more than one possible spelling"
    return [nodeids.NodeId(relative, test.names, i) for i in spelled], why


def _local(node: nodeids.NodeId) -> str:
    """A node within its file: ``TestC::test_m[a]``."""
    return str(node).partition("::")[2]


def listing(rootdir: Path, path: Path, relative: str, tree: ast.Module) -> str:
    """``"it collects test_a, test_b[x] (2 nodes)"``, at most `SHOWN` of them."""
    shown: list[str] = []
    count = 0
    for test in (t for t in defined(tree) if t.is_test):
        found, why = nodes(rootdir, path, relative, test)
        count += len(found)
        shown += [_local(n) + ("[...]" if why and n.params is None else "") for n in found]
    if not count:
        return "it collects no test (no test* function, no Test* class with test* methods)"
    more = f", ... ({count} nodes)" if count > SHOWN else f" ({count} node{'s' if count > 1 else ''})"
    return f"it collects {', '.join(shown[:SHOWN])}{more}"


def name_problem(rootdir: Path, path: Path, relative: str, names: tuple[str, ...]) -> Optional[str]:
    """None when the file defines ``names`` (a function, a class, a method); else what it collects and
    the closest names. Raises SyntaxError when it does not parse."""
    tree, chains = _read(path, path.stat().st_mtime_ns)
    if not names or any(d.names == names for d in chains):
        return None
    wanted = "::".join(names)
    close = did_you_mean(wanted, ("::".join(d.names) for d in chains))
    return f"{relative}: no function {wanted}; {listing(rootdir, path, relative, tree)}{close}"


def _keyword_unsure(rootdir: Path, path: Path, tree: ast.Module) -> Optional[str]:
    """What may give this file's nodes names the files do not show, or None."""
    for where in (*(f / targetfiles.CONFTEST for f in targetfiles.folders_down_to(rootdir, path)), path):
        if not where.is_file():
            continue
        module = tree if where == path else pysource.parse(where)
        for node in module.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in KEYWORD_HOOKS:
                return f"{where.name} defines {node.name}"
            if isinstance(node, ast.Assign) and any(_adds_names(t) for t in node.targets):
                return f"{where.name} sets {ast.unparse(node.targets[0])}"
    return None


def _adds_names(target: ast.expr) -> bool:
    """``pytestmark = ...``, or ``test_x.attr = ...`` (a function's attribute is a -k name)."""
    if isinstance(target, ast.Name):
        return target.id == "pytestmark"
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id.startswith("test")


def keyword_problem(rootdir: Path, path: Path, relative: str, expression: str) -> tuple[Optional[str], Optional[str]]:
    """(why ``-k expression`` is refused, None) or (None, why it was not checked) or (None, None)."""
    try:
        nodeids.keyword_expression(expression)
        tree = pysource.parse(path)
    except (ValueError, SyntaxError) as exc:
        return f"{relative}: -k {expression!r}: {exc}", None
    unsure = _keyword_unsure(rootdir, path, tree)
    # without `not`, more names can only select more: every spelling of an id may stand in for the one pytest gives
    monotone = "not" not in re.split(r"[ \t()]+", expression)
    for test in (t for t in defined(tree) if t.is_test):
        found, why = nodes(rootdir, path, relative, test, every=monotone)
        parametrized = {"parametrize"} if found and found[0].params is not None else set()
        if any(nodeids.keyword_selects(expression, nodeids.keyword_names(n) | test.marks | parametrized) for n in found):
            return None, None
        unsure = unsure or why or (f"{'::'.join(test.names)}: a mark given per parameter set"
                                   if parametrized and "marks=" in _source(tree, test) else None)
    if unsure:
        return None, f"{relative}: -k {expression!r} selects no node the file shows; not checked further ({unsure})"
    return f"{relative}: -k {expression!r} selects nothing; {listing(rootdir, path, relative, tree)}", None


def _source(tree: ast.Module, test: Defined) -> str:
    body: list[ast.stmt] = tree.body
    decorators: list[ast.expr] = []
    for name in test.names:
        node = next(n for n in body if getattr(n, "name", None) == name)
        body, decorators = getattr(node, "body", []), getattr(node, "decorator_list", [])
    return "".join(ast.unparse(d) for d in decorators)
