"""A FlagGems checkout's whole benchmark suite as workloads, for
`campaign inventory CHECKOUT --emit-manifest OUT --from TEMPLATE`.

The items are the checkout's scan (`upstream.scan`, what `campaign inventory` lists). What one
workload runs is one op mark in one benchmark function (``-m <mark>`` selects every case of the
function that carries it), so that is the unit here: (mark, file, function). A mark found in
several places gets a ``benchmark:`` (its file, or file::function where the file holds the mark in
several functions) and, where several of its units are emitted, a name suffix taken from it; a
mark found once is named by the mark alone. The template's own workloads stay as written and
cover the units they select (a hand-narrowed mm, a dismissed item run with a reason). A unit
whose every case ops/dismiss_upstream.csv sets aside, and one that prepare's own resolver
(`upstreamtargets.resolve_workload`) or the workload model refuses, is a comment with its reason,
never dropped without a word.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pydantic import ValidationError

from campaign.contract import yamlio
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest
from campaign.contract.workloads import Workload
from campaign.planning import upstream
from campaign.planning.inventory import UPSTREAM_DISMISS_FILE, Inventory
from campaign.planning.upstreamtargets import Checkouts, Problems, resolve_workload

PROVIDER = "flaggems_upstream"
Unit = tuple[str, str, str]          # (mark, file, function)


@dataclass(frozen=True)
class Suite:
    workloads: tuple[dict[str, Any], ...]   # emitted, in scan order, as the manifest writes them
    left_out: tuple[str, ...]               # one comment line per unit not emitted, its reason in it
    items: int                              # the scan's rows (item x op mark)
    units: int                              # (mark, file, function) units among them
    covered: int                            # units the template's own workloads select
    dismissed: int                          # units every case of which ops/dismiss_upstream.csv sets aside
    refused: int                            # units prepare's resolver or the workload model refuses, or with no mark


def units(items: list[upstream.Item]) -> dict[Unit, list[upstream.Item]]:
    """The scan's rows grouped by (mark, file, function), in scan order."""
    out: dict[Unit, list[upstream.Item]] = {}
    for item in items:
        out.setdefault((item.mark, item.file, item.function), []).append(item)
    return out


def covers(workload: dict[str, Any], unit: Unit) -> bool:
    """Whether a template workload selects the unit: its op, and its benchmark file (and function) if named."""
    mark, file, function = unit
    if workload.get("provider") != PROVIDER or workload.get("op") != mark:
        return False
    file_part, _, function_part = str(workload.get("benchmark") or "").partition("::")
    return not file_part or (file_part == file and function_part in ("", function))


def _benchmark(unit: Unit, places: set[tuple[str, str]]) -> Optional[str]:
    """The unit's ``benchmark:`` when its mark is found in more than one (file, function), else None."""
    _, file, function = unit
    if len(places) == 1:
        return None
    return file if sum(1 for f, _ in places if f == file) == 1 else f"{file}::{function}"


def _suffix(mark: str, benchmark: str) -> str:
    """A readable tag of the benchmark: the file's stem, or the function without test/perf words and the mark."""
    file, _, function = benchmark.partition("::")
    if not function:
        return Path(file).stem.removeprefix("test_").removesuffix("_perf")
    short = function.removeprefix("test_").removeprefix("perf_").removesuffix("_perf").removesuffix("_benchmark")
    return short.removeprefix(mark).strip("_") or function.removeprefix("test_")


def _name(base: str, taken: set[str]) -> str:
    """``base`` as a workload name (lower case, [a-z0-9_.-], at most 80), made unique among ``taken``."""
    name = re.sub(r"[^a-z0-9_.-]", "_", base.lower()).lstrip("_.-")[:80] or "item"
    unique, n = name, 2
    while unique in taken:
        unique, n = f"{name[:76]}-{n}", n + 1
    taken.add(unique)
    return unique


def candidates(found: dict[Unit, list[upstream.Item]], template: list[dict[str, Any]],
               inventory: Inventory) -> tuple[list[tuple[Unit, dict[str, Any]]], list[str], int, int]:
    """(unit and its workload, for every unit the template does not cover nor the dismiss list
    set aside), the dismissed units' comment lines, and how many were covered and dismissed."""
    places: dict[str, set[tuple[str, str]]] = {}
    for mark, file, function in found:
        places.setdefault(mark, set()).add((file, function))
    kept: list[Unit] = []
    left_out: list[str] = []
    covered = dismissed = 0
    for unit, rows in found.items():
        mark, file, function = unit
        if any(covers(workload, unit) for workload in template):
            covered += 1
            continue
        reasons = {inventory.upstream_reason(row.node, mark) for row in rows}
        if None not in reasons:
            dismissed += 1
            left_out.append(f"dismissed: {mark or '(no op mark)'} in {file}::{function} (ops/{UPSTREAM_DISMISS_FILE}): "
                            + "; ".join(sorted(reasons)))
        elif not mark:
            left_out.append(f"not emitted: {file}::{function} carries no op mark: -m cannot select it")
        else:
            kept.append(unit)
    per_mark: dict[str, int] = {}
    for mark, _, _ in kept:
        per_mark[mark] = per_mark.get(mark, 0) + 1
    taken = {str(workload.get("name")) for workload in template}
    out = []
    for unit in kept:
        mark = unit[0]
        benchmark = _benchmark(unit, places[mark])
        suffix = f"-{_suffix(mark, benchmark)}" if benchmark is not None and per_mark[mark] > 1 else ""
        workload: dict[str, Any] = {"name": _name(mark + suffix, taken), "op": mark, "provider": PROVIDER}
        if benchmark is not None:
            workload["benchmark"] = benchmark
        out.append((unit, workload))
    return out, left_out, covered, dismissed


def plan(data: dict[str, Any], document: Any, where: Path, items: list[upstream.Item], inventory: Inventory) -> Suite:
    """The template (``data`` as loaded from ``where``) grown by a workload per runnable unit of ``items``."""
    template = list(data.get("workloads") or [])
    found = units(items)
    proposed, left_out, covered, dismissed = candidates(found, template, inventory)
    valid: list[tuple[Unit, dict[str, Any]]] = []
    for unit, workload in proposed:
        try:
            Workload.model_validate(workload)
        except ValidationError as exc:
            left_out.append(f"not emitted: {unit[0]} in {unit[1]}::{unit[2]}: {exc.errors()[0]['msg']}")
            continue
        valid.append((unit, workload))
    try:
        manifest = Manifest.model_validate({**data, "workloads": [*template, *(w for _, w in valid)]})
    except ValidationError as exc:
        raise InputError(yamlio.errors_to_lines(exc, document, str(where), Manifest)) from None
    if manifest.sources.flag_gems_checkout is None:
        raise InputError(f"{where}: sources -> flag_gems_checkout: the template names no FlagGems checkout; "
                         "add flag_gems_checkout: {path: ..., commit: ...}")
    checkouts, problems = Checkouts(where), Problems()
    opened = checkouts.open(manifest, problems)
    if opened is None or problems.found:
        raise InputError([f"{where}: {' -> '.join(map(str, loc))}: {detail}" for _, loc, detail in problems.found])
    shown = manifest.sources.flag_gems_checkout.path
    emitted = []
    for index, (unit, workload) in enumerate(valid, start=len(template)):
        refused = Problems()
        resolve_workload(manifest, manifest.workloads[index], index, inventory, checkouts, refused)
        if not refused.found:
            emitted.append(workload)
            continue
        why = "; ".join(f"check={check}: {detail}" for check, _, detail in refused.found).replace(str(opened[0]), shown)
        left_out.append(f"not emitted: {unit[0]} in {unit[1]}::{unit[2]} ({why})")
    return Suite(workloads=tuple(emitted), left_out=tuple(left_out), items=len(items), units=len(found),
                 covered=covered, dismissed=dismissed, refused=len(left_out) - dismissed)


@dataclass(frozen=True)
class Split:
    workloads: tuple[dict[str, Any], ...]   # the emitted workloads, each heavy one replaced by one per dtype
    notes: tuple[str, ...]                  # one line per heavy workload: split, or why not


def split_heavy(workloads: tuple[dict[str, Any], ...], above: float, ran: dict[str, tuple[str, ...]],
                measured: Optional[dict[str, dict[str, float]]] = None) -> Split:
    """Each workload weighing more than ``above`` seconds as one workload per dtype it ran (``ran``: the
    dtypes of its rows in the root that weighed it; its own ``dtypes`` where it names several), named
    ``<name>-<dtype>``, each weighing its share of the whole: an estimate, the root times no dtype apart.
    One the root ran split already (``measured``: {dtype: seconds} of its parts,
    `campaign.planning.screenweights`) is split into those parts, each weighing what the root measured.

    Why: an IR-pass cell is one process compiling one variant after another, so the heaviest cell bounds
    an IR pass however many lanes it has. In the sealed 2-core suite root upsample_bicubic2d_aa_backward's
    cell was 1,031 s of the IR pass's 12,983 cell-seconds: 16 lanes span 1,032 s where the cells
    themselves would fill 811 s. Its three dtypes as three workloads are three cells of about a third.
    A workload that ran one dtype is left whole, said."""
    out, notes = [], []
    for workload in workloads:
        weight = workload.get("weight_s")
        if weight is None or weight <= above:
            out.append(workload)
            continue
        parts = (measured or {}).get(workload["name"])
        if parts and len(parts) >= 2:
            out.extend({**workload, "name": f"{workload['name']}-{dtype}", "dtypes": [dtype], "weight_s": seconds}
                       for dtype, seconds in parts.items())
            notes.append(f"{workload['name']} ({weight:.0f} s) split by dtype as the root ran it: "
                         + ", ".join(f"{dtype} {seconds:.0f} s" for dtype, seconds in parts.items()))
            continue
        dtypes = tuple(workload.get("dtypes") or ran.get(workload["name"], ()))
        if len(dtypes) < 2:
            out.append(workload)
            notes.append(f"{workload['name']} ({weight:.0f} s) left whole: it ran {len(dtypes)} dtype(s)")
            continue
        share = round(weight / len(dtypes), 3)
        out.extend({**workload, "name": f"{workload['name']}-{dtype}", "dtypes": [dtype], "weight_s": share}
                   for dtype in dtypes)
        notes.append(f"{workload['name']} ({weight:.0f} s) split by dtype: {', '.join(dtypes)}, ~{share:.0f} s each")
    return Split(workloads=tuple(out), notes=tuple(notes))
