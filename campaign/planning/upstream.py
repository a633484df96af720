"""FlagGems' own benchmark items, found by reading a checkout's files (never importing them).

FlagGems' benchmark modules import flag_gems, which needs a device to import, so what a
checkout holds is read from its syntax: every top-level ``test_*`` function of
``benchmark/test_*.py``, with

- its op marks: ``@pytest.mark.<op>`` on the function, or, for 5.0.2's category files,
  ``marks=`` of each ``pytest.param`` of an ``op_name`` parametrisation (a literal list,
  or a comprehension over a module-level list whose mark is ``getattr(pytest.mark, name)``);
- its op name: the ``op_name=`` keyword of the Benchmark it builds (``is_backward=True``
  appends ``_backward``, as ``Benchmark.__init__`` does), or the parametrised value;
- its Benchmark class, whose chain of bases (``class X(Y)`` across the benchmark files)
  is what ``Benchmark.set_shapes`` walks when the op name is not a key of core_shapes.yaml.

Both layouts read the same way: 5.0.2's ``test_*_perf.py`` with ``performance_utils.py``,
5.3+'s ``test_<op>.py`` with ``base.py``. What the syntax cannot show (an op name computed at
run time) is left empty and said, never guessed; ``pytest --collect-only`` on a host where
flag_gems imports is what verifies an item (`campaign.commands.inventory`).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from campaign.planning import pysource

# pytest's own marks and FlagGems' non-op ones: never an op mark
NOT_OP_MARKS = frozenset({"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings",
                          "timeout", "tryfirst", "trylast"})
LAYOUTS = {"category": "performance_utils.py", "per_op": "base.py"}   # layout -> its framework module
DEFAULT_SHAPES_KEY = "DEFAULT_SHAPES"   # Benchmark.DEFAULT_SHAPES: no key of the shape file matched


@dataclass(frozen=True)
class Item:
    file: str                    # relative to the checkout, e.g. benchmark/test_add.py
    function: str
    line: int
    mark: str                    # the op mark that selects it ("" when it has none)
    op_name: str                 # Benchmark's op_name ("" when the syntax does not show it)
    bench_class: str             # the Benchmark class it builds ("" when not shown)
    param_index: Optional[int]   # position in the op_name parametrisation, None for a plain function
    parametrized: bool           # whether the function has any parametrize decorator

    @property
    def node(self) -> str:
        return f"{self.file}::{self.function}"


def layout(checkout: Path) -> Optional[str]:
    """'per_op' (5.3+: benchmark/base.py), 'category' (5.0.2: performance_utils.py), or None."""
    bench = Path(checkout) / "benchmark"
    if (bench / LAYOUTS["per_op"]).is_file():
        return "per_op"
    if (bench / LAYOUTS["category"]).is_file():
        return "category"
    return None


def _mark_name(node: ast.AST, bound: dict[str, Any]) -> list[str]:
    """Op mark names in a ``marks=`` value or a decorator (``pytest.mark.x``, ``getattr(pytest.mark, v)``)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [name for element in node.elts for name in _mark_name(element, bound)]
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2:
            value = _value(node.args[1], bound)
            return [value] if isinstance(value, str) else []
        return _mark_name(node.func, bound)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "mark":
        return [] if node.attr in NOT_OP_MARKS else [node.attr]
    return []


def _value(node: ast.AST, bound: dict[str, Any]) -> Any:
    """A literal, or a name bound by the comprehension being read; anything else is None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    return None


def _module_lists(tree: ast.Module) -> dict[str, ast.AST]:
    """Module-level ``NAME = [...]`` (and ``NAME = A + B``), for comprehensions that iterate them."""
    lists: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and node.value is not None:
                    lists[target.id] = node.value
    return lists


def _elements(node: ast.AST, lists: dict[str, ast.AST], depth: int = 0) -> list[ast.AST]:
    if depth > 8:
        return []
    if isinstance(node, (ast.List, ast.Tuple)):
        return list(node.elts)
    if isinstance(node, ast.Name) and node.id in lists:
        return _elements(lists[node.id], lists, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _elements(node.left, lists, depth + 1) + _elements(node.right, lists, depth + 1)
    return []


def _bind(target: ast.AST, value: ast.AST) -> dict[str, Any]:
    if isinstance(target, ast.Name):
        return {target.id: _value(value, {})}
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        out: dict[str, Any] = {}
        for sub_target, sub_value in zip(target.elts, value.elts):
            out.update(_bind(sub_target, sub_value))
        return out
    return {}


def _params(node: ast.AST, lists: dict[str, ast.AST]) -> Iterator[tuple[ast.AST, dict[str, Any]]]:
    """(param expression, names bound for it) for each case of a parametrize list."""
    if isinstance(node, ast.ListComp) and len(node.generators) == 1:
        generator = node.generators[0]
        for element in _elements(generator.iter, lists):
            yield node.elt, _bind(generator.target, element)
        return
    for element in _elements(node, lists):
        yield element, {}


def _param_case(element: ast.AST, bound: dict[str, Any], op_at: int) -> tuple[Any, list[str], list[ast.AST]]:
    """(op_name value, op marks, the case's values) of ``pytest.param(..., marks=...)`` or a bare tuple."""
    if isinstance(element, ast.Call) and isinstance(element.func, ast.Attribute) and element.func.attr == "param":
        args, marks = element.args, []
        for keyword in element.keywords:
            if keyword.arg == "marks":
                marks = _mark_name(keyword.value, bound)
        return (_value(args[op_at], bound) if op_at < len(args) else None), marks, list(args)
    if isinstance(element, (ast.Tuple, ast.List)) and op_at < len(element.elts):
        return _value(element.elts[op_at], bound), [], list(element.elts)
    return None, [], []


def _class_of(bench_class: str, names: list[str], values: list[ast.AST]) -> str:
    """A Benchmark class passed as a parameter (``bench_cls(op_name=...)``): the case's class name."""
    if bench_class in names and names.index(bench_class) < len(values):
        value = values[names.index(bench_class)]
        return value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else ""
    return bench_class


def _argnames(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [name.strip() for name in node.value.split(",") if name.strip()]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _benchmark_call(function: ast.FunctionDef) -> tuple[Any, str, bool]:
    """(op_name node or literal, class name, is_backward) of the Benchmark the function builds."""
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        if "op_name" not in keywords:
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        backward = keywords.get("is_backward")
        is_backward = isinstance(backward, ast.Constant) and backward.value is True
        return keywords["op_name"], name, is_backward
    return None, "", False


def _op_name(value: Any, is_backward: bool) -> str:
    if not isinstance(value, str):
        return ""
    return value if not is_backward or value.endswith("_backward") else value + "_backward"


def scan_file(checkout: Path, path: Path) -> list[Item]:
    """Every benchmark item of one file (a file that does not parse has none: the caller says so)."""
    tree = pysource.parse(path)
    lists = _module_lists(tree)
    relative = path.relative_to(checkout).as_posix()
    items: list[Item] = []
    for function in tree.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not function.name.startswith("test"):
            continue
        own_marks = [m for d in function.decorator_list for m in _mark_name(d, {})]
        op_node, bench_class, is_backward = _benchmark_call(function)
        literal_op = op_node.value if isinstance(op_node, ast.Constant) else None
        parametrizes = [d for d in function.decorator_list if isinstance(d, ast.Call)
                        and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize"]
        cases: list[tuple[int, Any, list[str], str]] = []
        for decorator in parametrizes:
            names = _argnames(decorator.args[0]) if decorator.args else []
            if "op_name" not in names or len(decorator.args) < 2:
                continue
            for index, (element, bound) in enumerate(_params(decorator.args[1], lists)):
                value, marks, values = _param_case(element, bound, names.index("op_name"))
                cases.append((index, value, marks, _class_of(bench_class, names, values)))
        if cases:
            for index, value, marks, case_class in cases:
                for mark in (marks or [""]):
                    items.append(Item(relative, function.name, function.lineno, mark, _op_name(value, is_backward),
                                      case_class, index, True))
            continue
        for mark in (own_marks or [""]):
            items.append(Item(relative, function.name, function.lineno, mark,
                              _op_name(literal_op, is_backward), bench_class, None, bool(parametrizes)))
    return items


def class_bases(checkout: Path) -> dict[str, tuple[str, ...]]:
    """Class name -> its bases' names, over every Python file of benchmark/ (top level)."""
    bases: dict[str, tuple[str, ...]] = {}
    for path in sorted((Path(checkout) / "benchmark").glob("*.py")):
        try:
            tree = pysource.parse(path)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names = tuple(b.id if isinstance(b, ast.Name) else b.attr for b in node.bases
                              if isinstance(b, (ast.Name, ast.Attribute)))
                bases.setdefault(node.name, names)
    return bases


def class_chain(name: str, bases: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """``name`` and its ancestors in method resolution order (C3 for the single and
    diamond-free hierarchies FlagGems declares; depth-first, first seen wins otherwise)."""
    chain: list[str] = []
    stack = [name]
    while stack and len(chain) < 64:
        current = stack.pop(0)
        if current in chain or not current:
            continue
        chain.append(current)
        stack = list(bases.get(current, ())) + stack
    return tuple(chain)


def shape_key(op_name: str, bench_class: str, table: dict, bases: dict[str, tuple[str, ...]]) -> str:
    """The key of the shape file ``Benchmark.set_shapes`` would use: the op name, else the
    first class of the chain that is a key, else DEFAULT_SHAPES (FlagGems' ``for ... else``)."""
    if op_name and op_name in table:
        return op_name
    for name in class_chain(bench_class, bases):
        if name in table:
            return name
    return DEFAULT_SHAPES_KEY


def shapes_for(key: str, table: dict) -> tuple[tuple[int, ...], ...]:
    """The shapes under ``key`` of a FlagGems shape file (``{shapes: [...], shape_desc}``), as tuples."""
    entry = table.get(key)
    shapes = entry.get("shapes") if isinstance(entry, dict) else None
    if not isinstance(shapes, list):
        return ()
    return tuple(tuple(s) for s in shapes if isinstance(s, list))


def scan(checkout: Path) -> tuple[list[Item], list[str]]:
    """(items, notes): every benchmark item of the checkout, and the files that could not be read."""
    checkout = Path(checkout)
    items: list[Item] = []
    notes: list[str] = []
    for path in sorted((checkout / "benchmark").glob("test_*.py")):
        try:
            items += scan_file(checkout, path)
        except (SyntaxError, ValueError, OSError) as exc:
            notes.append(f"{path.relative_to(checkout).as_posix()}: not read ({type(exc).__name__}: {exc})")
    return items, notes


def test_marks(checkout: Path) -> dict[str, tuple[str, ...]]:
    """Op mark -> FlagGems' correctness files (tests/test_*.py) whose functions carry ``@pytest.mark.<mark>``,
    every file read once (a 400-workload manifest asks for each mark)."""
    root, found = Path(checkout), {}
    for path in sorted((root / "tests").glob("test_*.py")):
        try:
            tree = pysource.parse(path)
        except (SyntaxError, ValueError):
            continue
        marks = {mark for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for d in node.decorator_list for mark in _mark_name(d, {})}
        for mark in sorted(marks):
            found.setdefault(mark, []).append(path.relative_to(root).as_posix())
    return {mark: tuple(files) for mark, files in found.items()}


def test_files_with_mark(checkout: Path, mark: str) -> list[str]:
    """FlagGems' correctness files (tests/test_*.py) whose functions carry ``@pytest.mark.<mark>``."""
    return list(test_marks(checkout).get(mark, ()))
