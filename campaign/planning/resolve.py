"""Check a validated manifest against ops/ and the workload tree: what prepare freezes.

Every benchmark and correctness target is resolved before anything runs; each
refusal names its check and the manifest position of the key it concerns.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from campaign.contract import platforms, regular
from campaign.contract.errors import EXIT_INPUT, PREPARE_REFUSED, CampaignError, InputError
from campaign.contract.manifest import Manifest
from campaign.contract.plans import Targets
from campaign.contract.suggest import did_you_mean
from campaign.contract.workloads import Workload, own_path
from campaign.contract.yamlio import position
from campaign.planning import checkout, owntargets, targets, upstreamtargets
from campaign.planning import shapes as shape_sets
from campaign.planning.inventory import Inventory


@dataclass(frozen=True)
class Resolved:
    workload: Workload
    targets: Targets
    dtypes: tuple[str, ...]
    shapes: Optional[tuple[str, ...]]
    family: Optional[str]
    notes: tuple[str, ...] = ()     # what could not be checked statically, said rather than claimed


@dataclass
class _Problems:
    where: str
    document: Any
    lines: list[str]

    def add(self, check: str, loc: tuple, detail: str) -> None:
        line, col = position(self.document, loc)
        path = " -> ".join(str(p) for p in loc)
        self.lines.append(f"{PREPARE_REFUSED} check={check}: {self.where}:{line}:{col}: {path}: {detail}")


def _own_test(workload: Workload, project_root: Path, problems: _Problems, loc: tuple,
              compile_only: bool) -> Optional[Resolved]:
    """A ``provider: pytest`` workload: a test file that times with do_bench, the project's or the
    user's own anywhere on disk (`campaign.planning.owntargets`).

    No inventory entry, shape set or dtypes: the test builds its own inputs. Its correctness
    target is the benchmark target itself (the test's own assertions) unless the manifest
    names some of its tests."""
    if own_path(workload.benchmark):
        own = owntargets.resolve(workload, Path(problems.where), compile_only)
        for check, key, detail in own.problems:
            problems.add(check, loc + key, detail)
        if own.targets is None or own.problems:
            return None
        return Resolved(workload=workload, targets=own.targets, dtypes=(), shapes=None, family=None, notes=tuple(own.notes))
    benchmark = workload.benchmark
    missing, note = targets.node_problem(project_root, benchmark)
    if missing:
        problems.add("benchmark_target", loc + ("benchmark",), missing)
        return None
    node_ids = workload.correctness.node_ids if workload.correctness else None
    k = workload.correctness.k if workload.correctness else None
    notes = [note] if note else []
    for n, node in enumerate(node_ids or ()):
        missing, note = targets.node_problem(project_root, node)
        if missing:
            problems.add("correctness_target", loc + ("correctness", "node_ids", n), missing)
        if note:
            notes.append(note)
    correctness = targets.split(node_ids[0])[0] if node_ids else benchmark
    if k is not None:
        correctness = targets.split(benchmark)[0]   # -k selects within the file
    return Resolved(workload=workload, targets=Targets(benchmark=benchmark, correctness=correctness,
                                                       correctness_node_ids=node_ids, correctness_k=k),
                    dtypes=(), shapes=None, family=None, notes=tuple(notes))


def resolve(manifest: Manifest, inventory: Inventory, project_root: Path,
            where: str, document: Any) -> dict[str, Resolved]:
    """Every workload's targets, dtypes and shapes, by its provider; all refusals at once, located."""
    problems = _Problems(where, document, [])
    resolved: dict[str, Resolved] = {}
    checkouts, upstream_problems = upstreamtargets.Checkouts(Path(where)), upstreamtargets.Problems()
    # the campaign's own shape file, absolute in every task's targets (`campaign.planning.shapes`)
    given = str(checkout.locate(Path(where), manifest.defaults.shape_file)) if manifest.defaults.shape_file else None
    shapes = _ShapeFiles(project_root, manifest.defaults.bench_level, given, {})
    for index, workload in enumerate(manifest.workloads):
        loc = ("workloads", index)
        if workload.provider == "pytest":
            found = _own_test(workload, project_root, problems, loc,
                              compile_only=not platforms.platform(manifest.device.backend).executes)
        elif workload.provider == "flaggems_upstream":
            up = upstreamtargets.resolve_workload(manifest, workload, index, inventory, checkouts, upstream_problems)
            found = None if up is None else Resolved(workload=workload, targets=up.targets, dtypes=tuple(workload.dtypes or ()),
                                                     shapes=None, family=up.family, notes=up.notes)
        else:
            found = _inventory_workload(workload, loc, inventory, project_root, problems, shapes)
        if found is not None:
            resolved[workload.name] = found
    for check, loc, detail in upstream_problems.found:
        problems.add(check, loc, detail)
    if problems.lines:
        raise CampaignError(problems.lines, EXIT_INPUT)
    return resolved


@dataclass
class _ShapeFiles:
    """The shape file each provider reads at the campaign's bench level (or the campaign's own), loaded once."""

    project_root: Path
    bench_level: str
    given: Optional[str]
    loaded: dict[Path, dict]

    def available(self, workload: Workload, entry, loc: tuple, problems: "_Problems") -> Optional[list]:
        """The op's shapes in its shape file; None (refused, located) when the file or the op is missing."""
        path = shape_sets.shape_file(self.project_root, workload.provider, self.bench_level, self.given)
        shown = path if self.given else path.relative_to(self.project_root)
        where = ("defaults", "shape_file") if self.given else loc + ("op",)
        why = regular.not_regular(path)
        if why is not None:
            problems.add("shape_file", where, f"{shown}: {why}")
            return None
        if path not in self.loaded:
            try:
                self.loaded[path] = shape_sets.load_shapes(path)
            except InputError as exc:   # not UTF-8, not YAML, not shapes: named where the manifest names the file
                problems.add("shape_file", where, "; ".join(exc.lines))
                return None
        available = self.loaded[path].get(workload.op)
        if available is None:
            own = "; a test file that builds its own inputs is provider: pytest (its parametrization is its shapes)"
            problems.add("shape_file", loc + ("op",), f"{shown} has no shapes for {workload.op}"
                         + (own if workload.benchmark and entry is None else ""))
        return available


def _inventory_workload(workload: Workload, loc: tuple, inventory: Inventory, project_root: Path,
                        problems: "_Problems", shapes: _ShapeFiles) -> Optional[Resolved]:
    """A builtin or flaggems workload: its targets from the inventory (or the manifest), then its shapes."""
    entry = inventory.get(workload.op, workload.provider)
    dismissed = inventory.dismissed.get((workload.op, workload.provider))
    if entry is None and workload.reason is None:
        problems.add("inventory", loc + ("op",),
                     f"{workload.op} ({workload.provider}) is not in ops/inventory.csv"
                     + did_you_mean(workload.op, (op for op, provider in inventory.entries if provider == workload.provider))
                     + "; add it there or give the workload a reason")
    if dismissed is not None and workload.reason is None:
        problems.add("dismissed", loc + ("op",),
                     f"{workload.op} is on ops/dismiss.csv ({dismissed}); give a reason to run it anyway")
    benchmark = workload.benchmark or (entry.benchmark if entry else None)
    if benchmark is None:
        problems.add("benchmark_target", loc, "no benchmark target: not in the inventory and none given")
        return None
    missing = targets.node_problem(project_root, benchmark)[0]   # a node id's [params] too
    if missing:
        problems.add("benchmark_target", loc + (("benchmark",) if workload.benchmark else ("op",)), missing)
    node_ids = workload.correctness.node_ids if workload.correctness else None
    k = workload.correctness.k if workload.correctness else None
    correctness, notes = _correctness(entry.correctness if entry else None, node_ids, k, project_root, problems, loc)
    if correctness is None:
        return None
    dtypes = workload.dtypes or (entry.dtypes if entry else ())
    if not dtypes:
        problems.add("dtypes", loc, "no dtypes: the op is not in the inventory; list the workload's dtypes")
    available = shapes.available(workload, entry, loc, problems)
    if available is None:
        return None
    try:
        shape_sets.select(available, workload.shapes)
    except ValueError as exc:
        problems.add("shapes", loc + ("shapes",), str(exc))
    return Resolved(workload=workload,
                    targets=Targets(benchmark=benchmark, correctness=correctness,
                                    correctness_node_ids=node_ids, correctness_k=k, shape_file=shapes.given),
                    dtypes=tuple(dtypes), shapes=workload.shapes, family=entry.family if entry else None,
                    notes=tuple(notes))


def _correctness(correctness: Optional[str], node_ids, k, project_root: Path, problems: "_Problems",
                 loc: tuple) -> tuple[Optional[str], list[str]]:
    """The correctness target (the inventory's, else the file of the first node id) and the node ids'
    notes; None (refused, located) when there is none."""
    notes: list[str] = []
    if node_ids:
        correctness = correctness or targets.split(node_ids[0])[0]
        for n, node in enumerate(node_ids):
            missing, note = targets.node_problem(project_root, node)
            if missing:
                problems.add("correctness_target", loc + ("correctness", "node_ids", n), missing)
            if note:
                notes.append(note)
    if correctness is None:
        problems.add("correctness_target", loc, "no correctness target: not in the inventory; give correctness node_ids")
        return None, notes
    if not node_ids:
        missing = targets.problem(project_root, correctness)
        if missing:
            problems.add("correctness_target", loc + ("op",), missing)
    if k is not None:
        correctness = targets.split(correctness)[0]  # -k selects within the file
    return correctness, notes
