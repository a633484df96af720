"""Does ``test_x[a-b]`` name a test pytest would collect? Read from the decorators, never imported.

pytest gives each ``@pytest.mark.parametrize`` (the one closest to the function
first) one id per parameter set and joins them with "-". An id is the explicit one
(``pytest.param(id=...)``, then ``ids=[...]``); else, per value, the text of a str,
number, bool or None, the name of a class or function, ``str()`` of an enum member;
else ``<argname><index>``. Ids repeated within one decorator get a counter.

The argument lists are followed through module constants, slices, ``+`` and
``from module import NAME`` of a project module (`campaign.planning.paramsource`): ``dtype`` over
``FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32]`` gives ``dtype0`` to
``dtype2``. A value named but not defined in the project (``torch.float16``) may be
an object, a class or an enum member, so each of those spellings is accepted for
it. What cannot be read -- a computed value, an ``ids`` function, a parametrised
fixture, a ``pytest_generate_tests`` hook, an unknown decorator -- raises
`Unreadable`, and the caller says the id was not checked instead of claiming it.
"""
from __future__ import annotations

import ast
import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from campaign.contract.suggest import did_you_mean
from campaign.planning import targetfiles
from campaign.planning.paramsource import MAX_DEPTH, Module, Unreadable, dotted_name, keyword, sequence

MAX_ALTERNATIVES = 64  # spellings of one parameter set
LONG_STR = 100         # pytest's default ids a longer str by <argname><index>
DYNAMIC_HOOKS = ("pytest_generate_tests", "pytest_make_parametrize_id")


@dataclass(frozen=True)
class Layer:
    argnames: tuple[str, ...]
    ids: tuple[tuple[str, ...], ...]     # per parameter set, its accepted spellings


def _escaped(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("ascii", "backslashreplace")
    return str(value).encode("unicode_escape").decode("ascii")


_INT_OPS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__,
            ast.LShift: int.__lshift__, ast.RShift: int.__rshift__}


def _integer(node: ast.expr) -> Optional[int]:
    """An integer spelled with literals and + - * // << >> (``1 << 20``, ``4 * 1024``), or None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _integer(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
        left, right = _integer(node.left), _integer(node.right)
        if left is None or right is None or (isinstance(node.op, ast.LShift) and not 0 <= right <= 64) \
                or (isinstance(node.op, ast.FloorDiv) and right == 0) or (isinstance(node.op, ast.RShift) and right < 0):
            return None
        return _INT_OPS[type(node.op)](left, right)
    return None


def _idval(node: ast.expr, module: Module, argname: str, index: int, depth: int = 0) -> tuple[str, ...]:  # noqa: C901 (one branch per ast node kind pytest's ids follow)
    """The spellings pytest may give one value (more than one only for a name it cannot see)."""
    auto = f"{argname}{index}"
    if isinstance(node, (ast.UnaryOp, ast.BinOp)):
        value = _integer(node)                               # -3, 1 << 20: their ids are "-3", "1048576"
        if value is None:
            try:
                value = ast.literal_eval(node)
            except ValueError:
                raise Unreadable(f"value {index} of {argname} is computed ({ast.unparse(node)})") from None
        node = ast.Constant(value)
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, (str, bytes)):
            return (_escaped(value),) if len(value) <= LONG_STR else (auto,)
        if value is None or isinstance(value, (bool, int, float, complex)):
            return (str(value),)
        return (auto,)                                    # Ellipsis: no id of its own
    if isinstance(node, (ast.Tuple, ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return (auto,)
    if isinstance(node, ast.Lambda):
        return ("<lambda>",)
    dotted = dotted_name(node)
    if dotted is not None:
        if isinstance(node, ast.Name) and depth <= MAX_DEPTH:
            bound = module.lookup(node.id, depth)
            if bound is not None:
                return _idval(bound[0], bound[1], argname, index, depth + 1)
        parts = dotted.split(".")
        # an object (auto), a class, function or module (__name__), an enum member (Class.MEMBER)
        return tuple(dict.fromkeys((auto, parts[-1], ".".join(parts[-2:]))))
    raise Unreadable(f"value {index} of {argname} is computed ({ast.unparse(node)})")


def _layer(call: ast.Call, module: Module) -> Layer:  # noqa: C901 (one branch per parametrize call form)
    names_node, values_node = keyword(call, "argnames", 0), keyword(call, "argvalues", 1)
    if names_node is None or values_node is None:
        raise Unreadable(f"{ast.unparse(call)} has no literal argnames and argvalues")
    try:
        names_value = ast.literal_eval(names_node)
    except ValueError:
        raise Unreadable(f"argnames {ast.unparse(names_node)} is not a literal") from None
    if isinstance(names_value, str):
        names = tuple(n.strip() for n in names_value.split(",") if n.strip())
    elif isinstance(names_value, (list, tuple)) and all(isinstance(n, str) for n in names_value):
        names = tuple(names_value)
    else:
        raise Unreadable(f"argnames {ast.unparse(names_node)} is not a str or a list of str")
    values = sequence(values_node, module)
    if not values:
        raise Unreadable(f"{', '.join(names)}: an empty parameter list")
    ids_node = keyword(call, "ids", 3)
    explicit: list[Optional[str]] = []
    if ids_node is not None:
        explicit = [_explicit(e) for e, _ in sequence(ids_node, module)]
    spellings = []
    for index, (element, where) in enumerate(values):
        given = explicit[index] if index < len(explicit) else None
        parts: list[tuple[ast.expr, Module]] = [(element, where)]
        if isinstance(element, ast.Call) and (dotted_name(element.func) or "").endswith("param"):
            id_node = keyword(element, "id", 10**6)
            if id_node is not None:
                given = _explicit(id_node)
            parts = [(e, where) for e in element.args]
        elif len(names) > 1:
            parts = sequence(element, where)
        if given is not None:
            spellings.append((given,))
            continue
        if len(parts) != len(names):
            raise Unreadable(f"parameter set {index} has {len(parts)} values for {len(names)} names")
        options = [_idval(e, m, name, index) for (e, m), name in zip(parts, names)]
        joined = tuple("-".join(c) for c in itertools.islice(itertools.product(*options), MAX_ALTERNATIVES + 1))
        if len(joined) > MAX_ALTERNATIVES:
            raise Unreadable(f"parameter set {index} of {', '.join(names)} has too many possible ids")
        spellings.append(joined)
    return Layer(names, _unique(spellings, names))


def _explicit(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, (type(None), str, bytes, int, float, bool)):
        return None if node.value is None else _escaped(node.value)
    raise Unreadable(f"explicit id {ast.unparse(node)} is not a literal")


def _unique(spellings: list[tuple[str, ...]], names: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """pytest's counter for ids repeated within one decorator (`IdMaker.make_unique_parameterset_ids`)."""
    primary = [s[0] for s in spellings]
    counts = Counter(primary)
    if any(len(s) > 1 for s in spellings):   # a spelling two sets may share makes the counter unknowable
        if max(Counter(x for s in spellings for x in s).values()) > 1:
            raise Unreadable(f"{', '.join(names)}: repeated ids whose spelling is not known")
        return tuple(spellings)
    if all(n == 1 for n in counts.values()):
        return tuple(spellings)
    taken, suffixes, out = set(primary), defaultdict(int), []
    for value in primary:
        if counts[value] > 1:
            sep = "_" if value and value[-1].isdigit() else ""
            new = f"{value}{sep}{suffixes[value]}"
            while new in taken:
                suffixes[value] += 1
                new = f"{value}{sep}{suffixes[value]}"
            suffixes[value] += 1
            value = new
        out.append((value,))
    return tuple(out)


def _dynamic(module: Module) -> Optional[str]:
    """Why this module's tests may get parameters no decorator shows, or None."""
    name = module.path.name
    for node in module.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name in DYNAMIC_HOOKS:
                return f"{name} defines {node.name}"
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and (dotted_name(deco.func) or "").endswith("fixture") \
                        and any(k.arg == "params" for k in deco.keywords):
                    return f"{name}: fixture {node.name} is parametrised"
    for target in ("pytestmark", "pytest_plugins"):
        if target in module.assigns:
            return f"{name} sets {target}"
    return None


def _dotted(deco: ast.expr) -> str:
    return dotted_name(deco.func if isinstance(deco, ast.Call) else deco) or ""


def _function(module: Module, function: str) -> ast.AST:
    """The definition ``function`` (``TestC::test_m``) names; a class's parametrize makes its ids unreadable."""
    node, found = None, module.tree.body
    for name in function.split("::"):
        node = next(n for n in found if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                    and n.name == name)
        if isinstance(node, ast.ClassDef):
            if any(_dotted(deco).endswith("mark.parametrize") for deco in node.decorator_list):
                raise Unreadable(f"class {node.name} is parametrised (its ids join its methods')")
            found = node.body
    return node


def layers(project_root: Path, path: Path, function: str) -> list[Layer]:
    """The parametrizations of ``function`` (``test_x``, or ``TestC::test_m`` in a class) in ``path``,
    the closest decorator first; [] when it has none. Raises `Unreadable` where the files cannot say."""
    cache: dict[Path, Module] = {}
    module = Module.load(project_root, path, cache)
    for folder in targetfiles.folders_down_to(project_root, path):
        conftest = folder / targetfiles.CONFTEST
        if conftest.is_file():
            why = _dynamic(Module.load(project_root, conftest, cache))
            if why:
                raise Unreadable(why)
    why = _dynamic(module)
    if why:
        raise Unreadable(why)
    node = _function(module, function)
    out = []
    for deco in reversed(node.decorator_list):      # the closest decorator is applied first
        dotted = _dotted(deco)
        if dotted.endswith("mark.parametrize") and isinstance(deco, ast.Call):
            out.append(_layer(deco, module))
        elif not (dotted.startswith("pytest.mark.") or dotted.startswith("mark.")):
            raise Unreadable(f"decorator @{ast.unparse(deco)} may change {function}'s parameters")
    return out


def check(project_root: Path, path: Path, function: str, bracket: str) -> Optional[str]:
    """None when ``function[bracket]`` is one of the ids pytest collects from ``path``;
    otherwise what is wrong, with the closest ids. Raises `Unreadable` when that cannot be read
    from the files."""
    found = layers(project_root, path, function)
    if not found:
        return f"{function} is not parametrised: [{bracket}] names no test it collects"
    if _matches(bracket, found):
        return None
    return (f"{function}[{bracket}] is not one of its ids: {describe(function, found)}"
            + did_you_mean(bracket, ids(found)))


MAX_IDS = 4096


def ids(found: list[Layer], every: bool = False) -> list[str]:
    """The ids pytest gives these parametrizations, each parameter set's first spelling (``every``: each of
    its spellings), at most `MAX_IDS`."""
    options = [[spelling for s in layer.ids for spelling in (s if every else s[:1])] for layer in found]
    return list(itertools.islice(("-".join(parts) for parts in itertools.product(*options)), MAX_IDS))


def _matches(text: str, layers: list[Layer]) -> bool:
    first, rest = layers[0], layers[1:]
    for spelling in itertools.chain.from_iterable(first.ids):
        if not rest and text == spelling:
            return True
        if rest and text.startswith(spelling + "-") and _matches(text[len(spelling) + 1:], rest):
            return True
    return False


def describe(function: str, layers: list[Layer]) -> str:
    shown = []
    for layer in layers:
        ids = [s[0] for s in layer.ids]
        more = f", ... ({len(ids)})" if len(ids) > 6 else ""
        shown.append(f"{','.join(layer.argnames)}: {', '.join(ids[:6])}{more}")
    example = "-".join(layer.ids[0][0] for layer in layers)
    return f"{len(layers)} parametrisation(s) ({'; '.join(shown)}), e.g. {function}[{example}]"
