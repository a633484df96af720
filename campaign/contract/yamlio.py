"""The only module that reads YAML.

Loads with ruamel.yaml's round-trip parser (for line and column of every key),
refuses duplicate keys, and turns pydantic errors into ``FILE:LINE:COL: key ->
path: message`` lines, all of them, not just the first. Writing is `campaign.contract.yamlwrite`'s.

A manifest may come from anyone, so reading is bounded before anything is built:
only a regular file is opened (a FIFO or a device would block or never end), at
most `MAX_BYTES` are read, and one pass over the parser's events -- which nests
no Python calls -- refuses explicit tags, nesting deeper than `MAX_DEPTH`,
integers longer than `MAX_INT_DIGITS` and more than `MAX_NODES` nodes once
aliases are expanded (an alias bomb of a few lines expands to billions), each
at its line and column. Every reader or OS error is an InputError (exit 2).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, MappingStartEvent, ScalarEvent
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.scalarbool import ScalarBoolean

from campaign.contract import regular, suggest
from campaign.contract.errors import InputError

M = TypeVar("M", bound=BaseModel)

MAX_BYTES = 1 << 20       # the largest real manifest is under 10 kB
MAX_DEPTH = 32            # a manifest nests 5 deep
MAX_NODES = 100_000       # after alias expansion; a 500-workload manifest has ~10,000
MAX_INT_DIGITS = 18       # every integer a manifest holds fits in 64 bits
_INTEGER = re.compile(r"[-+]?(0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+|[0-9][0-9_]*)")   # what the YAML 1.2 resolver reads as an int


def parser() -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    yaml.preserve_quotes = True          # `extended` writes a manifest back quoted as it was
    return yaml


class _Frame:
    """One open mapping or sequence of the event pass."""

    __slots__ = ("mapping", "anchor", "size", "items", "key", "part")

    def __init__(self, mapping: bool, anchor: Any):
        self.mapping, self.anchor = mapping, anchor
        self.size = self.items = 0          # nodes below it (aliases expanded); direct children seen
        self.key: Any = "?"                 # the mapping's current key
        self.part: Any = None               # how its current child is named in a key path

    def enter(self, event: Any) -> None:
        if self.mapping:
            is_key = self.items % 2 == 0
            if is_key:
                self.key = event.value if isinstance(event, ScalarEvent) else "?"
            self.part = self.key
        else:
            self.part = self.items
        self.items += 1


def _guard(text: str, where: str) -> None:  # noqa: C901 (one pass over the YAML text, each bound a branch (billion laughs, depth, size))
    """The event pass: refuse, at its position, what must never reach the composer."""
    stack: list[_Frame] = []
    sizes: dict[Any, int] = {}              # anchor -> nodes of its value, aliases expanded
    total = 0

    def refuse(event: Any, message: str) -> None:
        mark = event.start_mark
        parts = [frame.part for frame in stack if frame.part is not None]
        raise InputError(f"{where}:{mark.line + 1}:{mark.column + 1}: {_keypath(tuple(parts))}: {message}")

    for event in parser().parse(text):
        if isinstance(event, CollectionEndEvent):
            frame = stack.pop()
            if frame.anchor is not None:
                sizes[frame.anchor] = frame.size + 1
            if stack:
                stack[-1].size += frame.size
            continue
        if not isinstance(event, (ScalarEvent, AliasEvent, CollectionStartEvent)):
            continue
        if stack:
            stack[-1].enter(event)
        tag = getattr(event, "tag", None)
        if tag is not None:
            refuse(event, f"explicit tag {getattr(tag, 'value', tag)} is not allowed (plain data only)")
        count = 1
        if isinstance(event, AliasEvent):
            if event.anchor not in sizes:
                refuse(event, f"alias *{event.anchor} names no finished anchor (an alias inside its own anchor loops)")
            count = sizes[event.anchor]
        elif isinstance(event, ScalarEvent):
            if event.implicit[0] and _INTEGER.fullmatch(event.value) and len(event.value) > MAX_INT_DIGITS:
                refuse(event, f"an integer of {len(event.value)} characters is out of range (quote it if it is a string)")
            if event.anchor is not None:
                sizes[event.anchor] = 1
        total += count
        if total > MAX_NODES:
            refuse(event, f"more than {MAX_NODES} values once aliases are expanded: not a manifest")
        if stack:
            stack[-1].size += count
        if isinstance(event, CollectionStartEvent):
            stack.append(_Frame(isinstance(event, MappingStartEvent), event.anchor))
            if len(stack) > MAX_DEPTH:
                refuse(event, f"nested more than {MAX_DEPTH} deep: not a manifest")


# a string a manifest gives reaches a path or a process (an argument, an environment value), where a NUL
# cuts it short or raises: refused wherever it is, key or value
_NUL = "a NUL byte (\\0) is refused: a path or a process argument would end there; remove it"


def _plain(node: Any, path: tuple, problems: list[tuple[tuple, str]]) -> Any:
    """Round-trip nodes to plain Python."""
    if isinstance(node, dict):
        problems.extend((path + (k,), _NUL) for k in node if isinstance(k, str) and "\0" in k)
        return {str(k) if not isinstance(k, (int, float, bool)) else k: _plain(v, path + (k,), problems)
                for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v, path + (i,), problems) for i, v in enumerate(node)]
    if isinstance(node, (bool, ScalarBoolean)) or node is None:
        return None if node is None else bool(node)    # an anchored true is a ScalarBoolean, an int
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        if "\0" in node:
            problems.append((path, _NUL))
        return str(node)
    problems.append((path, f"value of type {type(node).__name__} is not plain data"))
    return None


def _keypath(loc: tuple) -> str:
    return " -> ".join(str(part) for part in loc) if loc else "(top level)"


def position(root: Any, loc: tuple) -> tuple[int, int]:
    """1-based line and column of the deepest node of ``loc`` present in the document."""
    line, col = 1, 1
    node = root
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            line, col = node.lc.key(part)
            line, col = line + 1, col + 1
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            line, col = node.lc.item(part)
            line, col = line + 1, col + 1
            node = node[part]
        else:
            break
    return line, col


def read_text(path: Path) -> str:
    """The text of a regular file of at most MAX_BYTES, or an InputError naming why not
    (`campaign.contract.regular`: a FIFO or a device is refused unopened, a link followed)."""
    where = str(path)
    why = regular.not_regular(path)
    if why is not None:
        raise InputError(f"{where}: is {why}" if why.startswith("a ") else f"{where}: {why}")
    try:
        raw = regular.read_regular(path, cap=MAX_BYTES, follow=True)
    except regular.TooLarge:
        raise InputError(f"{where}: larger than {MAX_BYTES} bytes: not a manifest") from None
    except OSError as exc:
        raise InputError(f"{where}: cannot be read: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(f"{where}:{line}:{col}: not UTF-8: {exc.reason} (byte {raw[exc.start]:#04x})") from None


def _yaml_error(exc: YAMLError, text: str, where: str) -> InputError:
    if isinstance(exc, ReaderError):   # a character YAML does not allow (NUL, BEL, ...): a text position
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return InputError(f"{where}:{line}:{col}: character {char:#06x} is not allowed in YAML")
    if not isinstance(exc, MarkedYAMLError):
        return InputError(f"{where}: {exc}")
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    detail = " ".join(str(part) for part in (exc.context, exc.problem) if part)
    if "duplicate key" in str(exc).lower():
        detail = f"duplicate key: {detail}"
    return InputError(f"{where}:{line}:{col}: {detail}")


def load(path: Path) -> tuple[Any, Any]:
    """Return (plain data, round-trip document) or raise InputError naming the position."""
    return load_text(read_text(path), str(path))


def load_text(text: str, where: str) -> tuple[Any, Any]:
    """`load` of text already read; ``where`` names it in every error."""
    try:
        _guard(text, where)
        document = parser().load(text)
    except YAMLError as exc:
        raise _yaml_error(exc, text, where) from None
    problems: list[tuple[tuple, str]] = []
    data = _plain(document, (), problems)
    if problems:
        raise InputError([_located(where, document, loc, message) for loc, message in problems])
    return data, document


def _message(error: dict, model: Optional[type[BaseModel]] = None) -> str:
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    if error["type"] == "extra_forbidden":
        known = suggest.keys_at(model, tuple(error["loc"])[:-1]) if model is not None else None
        message = "unknown key (not part of the manifest format)" + suggest.did_you_mean(error["loc"][-1], known or ())
    elif error["type"] == "string_type" and isinstance(error.get("input"), (int, float, bool)):
        message += f" (got {error['input']!r}: quote it)"
    elif error["type"] in ("int_type", "float_type") and isinstance(error.get("input"), (str, bool)):
        # strict numbers: YAML's true or a quoted "600" was silently a number before
        message += f" (got {error['input']!r}, a {type(error['input']).__name__})"
    return message


def validate(model: type[M], path: Path) -> M:
    """Load ``path`` and validate it as ``model``; every error is reported with its position."""
    data, document = load(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(errors_to_lines(exc, document, str(path), model)) from None


def errors_to_lines(exc: ValidationError, document: Any, where: str,
                    model: Optional[type[BaseModel]] = None) -> list[str]:
    """Every error located in the file; ``model``, the one validated, lets an unknown key name its close ones."""
    located = []
    for error in exc.errors():
        cause = (error.get("ctx") or {}).get("error")
        for below, message in getattr(cause, "problems", None) or ((getattr(cause, "loc", ()), None),):
            located.append((tuple(error["loc"]) + tuple(below), error if message is None else {**error, "msg": message}))
    lines = []
    for loc, error in located:
        # a list too short "after validation" only echoes its failed items, reported below it
        if error["type"] == "too_short" and any(
                other[:len(loc)] == loc and len(other) > len(loc) for other, _ in located):
            continue
        lines.append(_located(where, document, loc, _message(error, model)))
    return lines


def _located(where: str, document: Any, loc: tuple, message: str) -> str:
    line, col = position(document, loc)
    return f"{where}:{line}:{col}: {_keypath(loc)}: {message}"
