"""pytest's node ids, and the one rule for "this recorded node belongs to that named target".

A node id is ``PATH``, ``PATH::NAME`` or ``PATH::CLASS::...::NAME``, the last name followed by
``[PARAMS]`` when the test is one parametrization (pytest's own reading of an argument,
``resolve_collection_argument``: the first ``[`` opens the parameters, ``::`` splits what comes
before it). The parameters are free text: an id may hold ``::``, ``/``, ``[``, ``]``, spaces and
(escaped or not) unicode, so nothing after the ``[`` is ever split. A recorded node's path is
relative to the session's rootdir (pytest's ``nodeid``); a target may be absolute (a FlagGems
checkout's, a test file of the user's own), and is read relative to that rootdir.

A target names (`holds`):

- a folder: every test under it;
- a file: every test it collects;
- a class: every method of it (nested classes included);
- a function: every parametrization of it (``test_x`` names ``test_x[a]`` and ``test_x[b::c]``);
- a node with ``[PARAMS]``: that one node.

A recorded node belongs to a workload's targets (`belongs`) when a target names it, or when it
names a target: the only recorded node above a test is a collector that failed (``outcomes.json``
records a collection error as an ``error`` row for the file, class or folder that did not
import), and a target file that does not import is an erroring node of that target, never a
node outside it. A ``-k`` selection is pytest's own at run time: the correctness session was
collected with it, so every node it recorded inside the target was selected (`keyword_selects`
evaluates it as pytest does, for prepare's check that it selects something).
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

# a parsed -k expression: given the matcher of one node's names, does it select the node
Expr = Callable[[Callable[[str], bool]], bool]


@dataclass(frozen=True)
class NodeId:
    path: str                       # as written: relative to the rootdir, or absolute
    names: tuple[str, ...] = ()     # classes, then the function
    params: Optional[str] = None    # the text between the brackets; None: no brackets

    def __str__(self) -> str:
        names = "".join(f"::{n}" for n in self.names)
        return f"{self.path}{names}" + ("" if self.params is None else f"[{self.params}]")


def parse(text: str) -> NodeId:
    """``a/b.py::C::test_x[p::q]`` -> NodeId("a/b.py", ("C", "test_x"), "p::q"). Raises ValueError
    for what no pytest node id is (an empty name, an unclosed bracket, brackets on no name)."""
    path, sep, rest = text.partition("::")
    if not sep:
        return NodeId(path)
    head, bracket, tail = rest.partition("[")
    names = tuple(head.split("::"))
    if not all(names):
        raise ValueError(f"{text}: an empty name between '::'")
    if bracket and not tail.endswith("]"):
        raise ValueError(f"{text}: '[' opens parameters that no ']' closes at the end")
    return NodeId(path, names, tail[:-1] if bracket else None)


def short(node: str) -> str:
    """A node by its file and test, its folder left out (``test_k.py::test_x[a/b]``): never cut inside its
    parameters."""
    try:
        parsed = parse(node)
    except ValueError:
        return node
    return str(NodeId(posixpath.basename(parsed.path.rstrip("/")) or parsed.path, parsed.names, parsed.params))


def relative(target: str, rootdir: Optional[str]) -> str:
    """``target`` as pytest names it in a session under ``rootdir``: an absolute path inside the
    rootdir made relative to it; a relative one, or one outside, normalised as written."""
    node = parse(target)
    path = posixpath.normpath(node.path) if node.path else node.path
    if rootdir and posixpath.isabs(path):
        root = posixpath.normpath(rootdir)
        if path == root:
            path = "."
        elif path.startswith(root.rstrip("/") + "/"):
            path = path[len(root.rstrip("/")) + 1:]
    return str(NodeId(path, node.names, node.params))


def _under(folder: str, path: str) -> bool:
    return folder in ("", ".") or path.startswith(folder.rstrip("/") + "/")


def holds(target: NodeId, node: NodeId) -> bool:
    """Whether ``target`` names ``node``: the node itself, or one under it (see the module docstring)."""
    if target.path != node.path:
        return not target.names and _under(target.path, node.path)
    if node.names[:len(target.names)] != target.names:
        return False
    return target.params is None or (node.names == target.names and node.params == target.params)


def belongs(node: str, targets: Iterable[str], rootdir: Optional[str] = None) -> bool:
    """Whether the recorded ``node`` belongs to any of ``targets`` (relative to ``rootdir``, or absolute
    inside it): a target names it, or it names a target (a collector that failed above it)."""
    try:
        recorded = parse(node)
    except ValueError:
        return False
    for target in targets:
        named = parse(relative(target, rootdir))
        if holds(named, recorded) or holds(recorded, named):
            return True
    return False


# -k: pytest's match-expression grammar (``_pytest.mark.expression``), the keyword form only
_TOKEN = re.compile(r"(\()|(\))|((?::?\w|:|\+|-|\.|\[|\]|\\|/)+)")


def keyword_expression(text: str) -> Expr:
    """``-k TEXT`` compiled: a function of a name matcher, as pytest's ``Expression.evaluate``.
    Raises ValueError where pytest says "Wrong expression passed to '-k'"."""
    tokens, pos = [], 0
    while pos < len(text):
        if text[pos] in " \t":
            pos += 1
            continue
        found = _TOKEN.match(text, pos)
        if found is None:
            raise ValueError(f"-k {text!r}: unexpected character {text[pos]!r} at column {pos + 1}")
        tokens.append(found.group(0))
        pos = found.end()
    if not tokens:
        return lambda matcher: False
    tree, end = _or(tokens, 0, text)
    if end != len(tokens):
        raise ValueError(f"-k {text!r}: expected end of input; got {tokens[end]!r}")
    return tree


def _or(tokens: list[str], at: int, text: str) -> tuple[Expr, int]:
    left, at = _and(tokens, at, text)
    while at < len(tokens) and tokens[at] == "or":
        right, at = _and(tokens, at + 1, text)
        left = (lambda a, b: lambda m: a(m) or b(m))(left, right)
    return left, at


def _and(tokens: list[str], at: int, text: str) -> tuple[Expr, int]:
    left, at = _not(tokens, at, text)
    while at < len(tokens) and tokens[at] == "and":
        right, at = _not(tokens, at + 1, text)
        left = (lambda a, b: lambda m: a(m) and b(m))(left, right)
    return left, at


def _not(tokens: list[str], at: int, text: str) -> tuple[Expr, int]:
    token = tokens[at] if at < len(tokens) else None
    if token == "not":
        inner, at = _not(tokens, at + 1, text)
        return (lambda m: not inner(m)), at
    if token == "(":
        inner, at = _or(tokens, at + 1, text)
        if at >= len(tokens) or tokens[at] != ")":
            raise ValueError(f"-k {text!r}: expected right parenthesis")
        return inner, at + 1
    if token is None or token in (")", "or", "and"):
        raise ValueError(f"-k {text!r}: expected not OR left parenthesis OR identifier; got {token or 'end of input'}")
    if at + 1 < len(tokens) and tokens[at + 1] == "(":
        raise ValueError(f"-k {text!r}: keyword expressions do not support call parameters")
    return (lambda m: m(token)), at + 1


def keyword_names(node: NodeId) -> set[str]:
    """The names a node's id gives ``-k`` (pytest's ``KeywordMatcher.from_item``): each folder below the
    rootdir, the file, each class, the function with its parameters. Marks and a function's own
    attributes are names too, which no node id shows: the caller adds those it knows."""
    parts = [p for p in node.path.split("/") if p not in ("", ".")]
    last = node.names[-1] + ("" if node.params is None else f"[{node.params}]") if node.names else None
    return {*parts, *node.names[:-1], *([last] if last else [])}


def keyword_selects(expression: str, names: Iterable[str]) -> bool:
    """Whether ``-k expression`` selects a node of these names: a word matches a name it is a
    case-insensitive substring of. An empty expression selects everything, as pytest's ``-k ""``."""
    if not expression.strip(" \t"):
        return True
    lowered = [n.lower() for n in names]
    return keyword_expression(expression)(lambda word: any(word.lower() in n for n in lowered))
