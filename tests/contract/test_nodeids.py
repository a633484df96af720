"""The node-id rule (`campaign.contract.nodeids`) held against the node ids and selections pytest produces.

Hypothesis writes small test trees (folders and files with spaces and unicode in their names,
classes nested in classes, parametrize ids holding ``::``, ``/``, ``[``, ``]``, spaces, unicode
and newlines, a file that does not import), pytest collects each tree once in-process, and the
rule must select exactly pytest's own tree for every file, class, function and node target,
named relative to the rootdir or absolutely; a failed collector must belong to the targets
inside it and to no other; ``-k`` must select what pytest's own matcher selects on the same
items; and a session given some targets as arguments must collect what the rule says they name.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest
from _pytest.mark import KeywordMatcher
from _pytest.mark.expression import Expression
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaign.contract import nodeids

LETTERS = "abcxyzéжß"
NAME = st.text(LETTERS + "_0", min_size=1, max_size=5).filter(lambda s: not s[0].isdigit())
FOLDER = st.text(LETTERS + "_- 0", min_size=1, max_size=5).filter(lambda s: s.strip() == s and s not in (".", ".."))
PARAM_ID = st.text("ab0:/[] é\n-.", min_size=0, max_size=8)
# the inner sessions load no plugin they do not need (this session's hypothesis, xdist, the cache)
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:warnings")


@st.composite
def function_source(draw, prefix: str) -> str:
    name = f"test_{draw(NAME)}"
    ids = draw(st.lists(PARAM_ID, max_size=4))
    if not ids:
        return f"{prefix}def {name}():\n{prefix}    pass\n"
    values = ", ".join(f"pytest.param({n}, id={text!r})" if n % 2 else str(n) for n, text in enumerate(ids))
    explicit = f", ids={[t for n, t in enumerate(ids)]!r}" if draw(st.booleans()) else ""
    args = "self, v" if prefix else "v"
    return f"{prefix}@pytest.mark.parametrize('v', [{values}]{explicit})\n{prefix}def {name}({args}):\n{prefix}    pass\n"


@st.composite
def file_source(draw) -> str:
    parts = ["import pytest\n"]
    if draw(st.integers(0, 9)) == 0:
        parts.append("import no_such_module_anywhere\n")      # a collection error
    for function in draw(st.lists(function_source(""), min_size=1, max_size=3)):
        parts.append(function)
    if draw(st.booleans()):
        methods = draw(st.lists(function_source("    "), min_size=1, max_size=2))
        inner = draw(st.lists(function_source("        "), max_size=1))
        parts.append(f"class Test{draw(NAME)}:\n" + "".join(methods)
                     + (f"    class TestInner:\n{''.join(inner)}" if inner else ""))
    return "\n".join(parts)


TREE = st.dictionaries(st.tuples(st.lists(FOLDER, max_size=2), NAME).map(lambda t: "/".join([*t[0], f"test_{t[1]}.py"])),
                       file_source(), min_size=1, max_size=5)


class Collected:
    """What one in-process session collected: each item's id, its chain of collectors, its marks, and
    pytest's own ``-k`` matcher; the collectors that failed."""

    def __init__(self) -> None:
        self.chains: dict[str, list[str]] = {}
        self.functions: dict[str, str] = {}
        self.marks: dict[str, set[str]] = {}
        self.matchers: dict[str, KeywordMatcher] = {}
        self.errors: list[str] = []

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.errors.append(report.nodeid)

    def pytest_collection_finish(self, session) -> None:
        for item in session.items:
            chain = [node.nodeid for node in item.listchain()[1:]]
            self.chains[item.nodeid] = chain
            self.functions[item.nodeid] = f"{item.parent.nodeid}::{item.originalname}"
            self.marks[item.nodeid] = {mark.name for mark in item.iter_markers()}
            self.matchers[item.nodeid] = KeywordMatcher.from_item(item)


def collect(root: Path, *args: str) -> Collected:
    """pytest's collection of ``args`` under ``root``, in this process; the modules it imported forgotten after."""
    seen = Collected()
    before = set(sys.modules)
    try:
        pytest.main(["--collect-only", "-qq", "--import-mode=importlib", *QUIET,
                     f"--rootdir={root}", "-c", str(root / "pytest.ini"), *args], plugins=[seen])
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]
    return seen


def write(root: Path, tree: dict[str, str]) -> None:
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for name, text in tree.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def selected(target: str, items, rootdir: str | None = None) -> set[str]:
    return {n for n in items if nodeids.belongs(n, [target], rootdir)}


@settings(max_examples=10, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=TREE, data=st.data())
def test_the_rule_names_exactly_what_pytest_collects_under_each_target(tree: dict[str, str], data):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write(root, tree)
        seen = collect(root, str(root))
        items = set(seen.chains)
        # every collector in an item's chain (folder, file, class) and its function names exactly its items
        targets = {t for chain in seen.chains.values() for t in chain} | set(seen.functions.values())
        for target in targets:
            truth = {n for n in items if target in seen.chains[n] or seen.functions[n] == target}
            assert selected(target, items) == truth, target
            assert selected(f"{root}/{target}", items, str(root)) == truth, target
        for node in items:
            assert nodeids.parse(node).names[-1] == seen.functions[node].rsplit("::", 1)[-1], node
        # a collector that failed belongs to the targets inside it and to the folders above it, to no other
        for error in seen.errors:
            assert error in tree, error
            assert all(nodeids.belongs(error, [inside]) for inside in (f"{error}::test_gone", f"{error}::TestGone::t[a::b]"))
            for target in targets | items:
                above = target == "." or error.startswith(target + "/")
                assert nodeids.belongs(error, [target]) is above, (error, target)
        # -k: pytest's own matcher on the same items, against the names the node id gives plus the marks
        words = sorted({w for n in items for w in nodeids.keyword_names(nodeids.parse(n))} | {"zz", "parametrize"})
        if items:
            expression = data.draw(keyword_expressions(words))
            compiled = Expression.compile(expression)
            for node in items:
                assert nodeids.keyword_selects(expression, nodeids.keyword_names(nodeids.parse(node)) | seen.marks[node]) \
                    == compiled.evaluate(seen.matchers[node]), (expression, node)
        # a session given targets as arguments collects what the rule says they name
        if targets:
            given_targets = data.draw(st.lists(st.sampled_from(sorted(targets | items)), min_size=1, max_size=3))
            again = collect(root, *(f"{root}/{t}" for t in given_targets))
            assert set(again.chains) == {n for n in items if nodeids.belongs(n, given_targets)}


def keyword_expressions(words: list[str]):
    """-k expressions over substrings of the names, with not/and/or and parentheses."""
    word = st.sampled_from(words).flatmap(lambda w: st.tuples(st.integers(0, len(w) - 1), st.integers(1, len(w)))
                                           .map(lambda ij: w[ij[0]:max(ij[1], ij[0] + 1)]))
    safe = word.filter(lambda w: w not in ("or", "and", "not") and all(c not in w for c in " \n-()") and w)
    return st.recursive(safe, lambda inner: st.one_of(
        inner.map(lambda e: f"not {e}"), inner.map(lambda e: f"({e})"),
        st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(" ".join)), max_leaves=5)


WORDS = ("not", "and", "or", "(", ")", "ab", "b", "a:b", "x[", "not_this", "THIS", "a(b", "=", "'q'")


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.one_of(st.text("ab():[]/.-+\\ \tnotrd", max_size=16),
                 st.lists(st.sampled_from(WORDS), max_size=7).map(" ".join)))
def test_keyword_expressions_parse_and_evaluate_as_pytest_does(text: str):
    try:
        pytest_expression = Expression.compile(text)
    except SyntaxError:
        with pytest.raises(ValueError):
            nodeids.keyword_expression(text)
        return
    ours = nodeids.keyword_expression(text)
    for names in ({"ab"}, {"b"}, {"a:b[x]"}, {"not_this"}, set()):
        matcher = KeywordMatcher(frozenset(names))
        try:
            expected = pytest_expression.evaluate(matcher)
        except pytest.UsageError:        # a call's parameters: refused when evaluated
            with pytest.raises(ValueError):
                ours(lambda word: True)
            return
        assert ours(lambda word, names=names: any(word.lower() in n.lower() for n in names)) == expected, (text, names)


@pytest.mark.parametrize(("target", "node", "named"), [
    ("k.py::test_x", "k.py::test_x[a::b/c [d]]", True),          # a function names its parametrizations
    ("k.py::test_x", "k.py::test_xy[a]", False),
    ("k.py::test_x[a::b]", "k.py::test_x[a::b]", True),
    ("k.py::test_x[a]", "k.py::test_x[a::b]", False),
    ("k.py::TestC", "k.py::TestC::TestD::test_m[1]", True),       # a class names its methods, nested ones too
    ("k.py", "k.py::TestC::test_m", True),                         # a file names its tests
    ("k", "k.py::test_x", False),
    ("dir", "dir/sub/k.py::test_x", True),                         # a folder names the files under it
    ("dir/k.py", "dir/k.py.bak::test_x", False),
    ("/abs/root/k.py::test_x", "k.py::test_x[1]", True),           # absolute inside the rootdir
    ("/elsewhere/k.py::test_x", "k.py::test_x[1]", False),
    ("k.py::test_x", "k.py", True),                                # the file failed to import: an error of the target
    ("k.py::test_x", "other.py", False),
])
def test_what_a_target_names(target: str, node: str, named: bool):
    assert nodeids.belongs(node, [target], "/abs/root") is named


def test_node_ids_parse_at_the_first_bracket_and_refuse_what_pytest_never_writes():
    assert nodeids.parse("a b/é.py::C::test_x[p::q/[r] s]") == nodeids.NodeId("a b/é.py", ("C", "test_x"), "p::q/[r] s")
    assert str(nodeids.parse("k.py::test_x[]")) == "k.py::test_x[]"
    for bad in ("k.py::test_x[a", "k.py::::test_x", "k.py::"):
        with pytest.raises(ValueError):
            nodeids.parse(bad)
    assert nodeids.short("kernels/sub dir/k.py::test_x[a/b]") == "k.py::test_x[a/b]"
