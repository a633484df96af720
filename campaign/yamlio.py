"""The only module that reads YAML.

Loads with ruamel.yaml's round-trip parser (for line and column of every key),
refuses duplicate keys and any explicit tag (nothing but plain data is built),
and turns pydantic errors into ``FILE:LINE:COL: key -> path: message`` lines,
all of them, not just the first. `dump` writes plain data back as block YAML.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from campaign.errors import InputError

M = TypeVar("M", bound=BaseModel)

_STANDARD_TAGS = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}


def _parser() -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    return yaml


def _plain(node: Any, path: tuple, problems: list[tuple[tuple, str]]) -> Any:
    """Round-trip nodes to plain Python, refusing explicit tags."""
    tag = getattr(node, "tag", None)
    tag_value = getattr(tag, "value", None) if tag is not None and not isinstance(tag, str) else tag
    if tag_value and tag_value not in _STANDARD_TAGS:
        problems.append((path, f"explicit tag {tag_value} is not allowed (plain data only)"))
    if isinstance(node, dict):
        return {str(k) if not isinstance(k, (int, float, bool)) else k: _plain(v, path + (k,), problems)
                for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v, path + (i,), problems) for i, v in enumerate(node)]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
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


def load(path: Path) -> tuple[Any, Any]:
    """Return (plain data, round-trip document) or raise InputError naming the position."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{where}: no such file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8: {exc}") from None
    try:
        document = _parser().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        detail = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        if "duplicate key" in str(exc).lower():
            detail = f"duplicate key: {detail}"
        raise InputError(f"{where}:{line}:{col}: {detail}") from None
    problems: list[tuple[tuple, str]] = []
    data = _plain(document, (), problems)
    if problems:
        raise InputError([_located(where, document, loc, message) for loc, message in problems])
    return data, document


def _message(error: dict) -> str:
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    if error["type"] == "extra_forbidden":
        message = "unknown key (not part of the manifest format)"
    elif error["type"] == "string_type" and isinstance(error.get("input"), (int, float, bool)):
        message += f" (got {error['input']!r}: quote it)"
    return message


def validate(model: type[M], path: Path) -> M:
    """Load ``path`` and validate it as ``model``; every error is reported with its position."""
    data, document = load(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(errors_to_lines(exc, document, str(path))) from None


def errors_to_lines(exc: ValidationError, document: Any, where: str) -> list[str]:
    located = []
    for error in exc.errors():
        cause = (error.get("ctx") or {}).get("error")
        located.append((tuple(error["loc"]) + tuple(getattr(cause, "loc", ())), error))
    lines = []
    for loc, error in located:
        # a list too short "after validation" only echoes its failed items, reported below it
        if error["type"] == "too_short" and any(
                other[:len(loc)] == loc and len(other) > len(loc) for other, _ in located):
            continue
        lines.append(_located(where, document, loc, _message(error)))
    return lines


def _located(where: str, document: Any, loc: tuple, message: str) -> str:
    line, col = position(document, loc)
    return f"{where}:{line}:{col}: {_keypath(loc)}: {message}"


def dump(data: Any, comment: str = "") -> str:
    """Plain data as block YAML (keys in the order given); ``comment`` lines lead it as ``# ...``."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False
    yaml.width = 4096                    # one line per value: a wrapped string diffs badly in review
    out = io.StringIO()
    yaml.dump(data, out)
    head = "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines())
    return head + out.getvalue()
