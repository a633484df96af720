""""Did you mean" for a name a person typed: a manifest key, an op, a workload, a cell.

One helper so every refusal words its guess the same way, and one walk over the pydantic
models for the keys a manifest may hold at a place (`keys_at`), which an unknown key's
message lists the close ones of.
"""
from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Iterable, Optional

from pydantic import BaseModel


def did_you_mean(word: str, known: Iterable[str], n: int = 3) -> str:
    """``"; did you mean a, b?"`` (the close matches of ``word`` among ``known``), or ``""``."""
    close = difflib.get_close_matches(str(word), sorted(set(known)), n=n)
    return f"; did you mean {', '.join(close)}?" if close else ""


def _members(annotation: Any) -> list[Any]:
    """The types an annotation may hold: Optional, unions and Annotated unwrapped."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _step(annotation: Any, part: Any) -> list[Any]:
    """The annotations one location step below ``annotation``."""
    out = []
    for member in _members(annotation):
        origin, args = typing.get_origin(member), typing.get_args(member)
        if isinstance(member, type) and issubclass(member, BaseModel):
            for name, info in member.model_fields.items():
                if part in (name, info.alias):
                    out.append(info.annotation)
        elif origin in (tuple, list, set, frozenset) and isinstance(part, int) and args:
            out.append(args[0])
        elif origin is dict and len(args) == 2:
            out.append(args[1])
    return out


def keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> Optional[set[str]]:
    """The keys a document validated as ``model`` may hold at ``loc``; None where the walk loses its way
    (a discriminated union's tag in the location, a custom type)."""
    current: list[Any] = [model]
    for part in loc:
        current = [found for annotation in current for found in _step(annotation, part)]
        if not current:
            return None
    keys = {info.alias or name for annotation in current for member in _members(annotation)
            if isinstance(member, type) and issubclass(member, BaseModel)
            for name, info in member.model_fields.items()}
    return keys or None
