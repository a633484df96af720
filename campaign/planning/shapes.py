"""Shape sets under ops/shapes: which cases an op is measured on at a bench level.

``ops/shapes/<level>.yaml`` holds the builtin workloads' sets and
``ops/shapes/<provider>/<level>.yaml`` any other provider's, keyed by op; a shape
is a list of ints. A manifest narrows to a subset by writing shapes as "AxBxC".

A campaign's own ``defaults.shape_file`` (a user's trace of real shapes) replaces those
sets for every provider that has shapes: the same file is FlagGems' ``--shape_file`` for
``flaggems_upstream`` workloads, so an entry is either a list of shapes or, as in FlagGems'
core_shapes.yaml, ``{shapes: [...], shape_desc: ...}``. Prepare resolves it to an absolute
path in each task's targets (`Targets.shape_file`) and digests it; the cells read that path.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from campaign.contract import yamlio
from campaign.contract.errors import InputError

Shape = tuple[int, ...]


def shape_file(project_root: Path, provider: str, level: str, given: Optional[str] = None) -> Path:
    """The file a task's shapes come from: the campaign's own (``given``, absolute) or ops/shapes'."""
    if given is not None:
        return Path(given)
    base = Path(project_root) / "ops" / "shapes"
    return base / f"{level}.yaml" if provider == "builtin" else base / provider / f"{level}.yaml"


def load_shapes(path: Path) -> dict[str, tuple[Shape, ...]]:
    data, document = yamlio.load(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping of op -> list of shapes")
    out: dict[str, tuple[Shape, ...]] = {}
    for op, entry in data.items():
        shapes = entry.get("shapes") if isinstance(entry, dict) else entry
        if not isinstance(shapes, list) or not all(
                isinstance(s, list) and s and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in s)
                for s in shapes):
            line, col = yamlio.position(document, (op,))
            raise InputError(f"{path}:{line}:{col}: {op}: expected a list of shapes (or {{shapes: [...]}}), "
                             "each a non-empty list of positive ints")
        out[str(op)] = tuple(tuple(s) for s in shapes)
    return out


def format_shape(shape: Shape) -> str:
    return "x".join(str(d) for d in shape)


def parse_shape(text: str) -> Shape:
    try:
        dims = tuple(int(part) for part in text.split("x"))
    except ValueError:
        raise ValueError(f"shape {text!r} is not of the form AxBxC") from None
    if not dims or any(d <= 0 for d in dims):
        raise ValueError(f"shape {text!r} has a non-positive dimension")
    return dims


def select(available: tuple[Shape, ...], subset: tuple[str, ...] | None) -> tuple[Shape, ...]:
    """The op's shapes, narrowed to ``subset``; a subset entry not in the set is an error."""
    if subset is None:
        return available
    chosen = []
    for text in subset:
        shape = parse_shape(text)
        if shape not in available:
            known = ", ".join(format_shape(s) for s in available)
            raise ValueError(f"shape {text} is not in the op's set ({known})")
        chosen.append(shape)
    return tuple(chosen)
