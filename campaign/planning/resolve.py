"""Check a validated manifest against ops/ and the workload tree: what prepare freezes.

Every benchmark and correctness target is resolved before anything runs; each
refusal names its check and the manifest position of the key it concerns.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from campaign.contract import platforms
from campaign.contract.errors import EXIT_INPUT, CampaignError
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
        self.lines.append(f"PREPARE_REFUSED check={check}: {self.where}:{line}:{col}: {path}: {detail}")


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


def resolve(manifest: Manifest, inventory: Inventory, project_root: Path,  # noqa: C901 (each provider's refusals named in the manifest's own order)
            where: str, document: Any) -> dict[str, Resolved]:
    problems = _Problems(where, document, [])
    resolved: dict[str, Resolved] = {}
    shape_cache: dict[Path, dict] = {}
    checkouts, upstream_problems = upstreamtargets.Checkouts(Path(where)), upstreamtargets.Problems()
    # the campaign's own shape file, absolute in every task's targets (`campaign.planning.shapes`)
    given = str(checkout.locate(Path(where), manifest.defaults.shape_file)) if manifest.defaults.shape_file else None
    for index, workload in enumerate(manifest.workloads):
        loc = ("workloads", index)
        if workload.provider == "pytest":
            found = _own_test(workload, project_root, problems, loc, compile_only=not platforms.platform(manifest.device.backend).executes)
            if found is not None:
                resolved[workload.name] = found
            continue
        if workload.provider == "flaggems_upstream":
            found = upstreamtargets.resolve_workload(manifest, workload, index, inventory, checkouts, upstream_problems)
            if found is not None:
                resolved[workload.name] = Resolved(workload=workload, targets=found.targets, dtypes=tuple(workload.dtypes or ()),
                                                   shapes=None, family=found.family, notes=found.notes)
            continue
        entry = inventory.get(workload.op, workload.provider)
        dismissed = inventory.dismissed.get((workload.op, workload.provider))
        if entry is None and workload.reason is None:
            problems.add("inventory", loc + ("op",),
                         f"{workload.op} ({workload.provider}) is not in ops/inventory.csv"
                         + did_you_mean(workload.op, (op for op, provider in inventory.entries
                                                      if provider == workload.provider))
                         + "; add it there or give the workload a reason")
        if dismissed is not None and workload.reason is None:
            problems.add("dismissed", loc + ("op",),
                         f"{workload.op} is on ops/dismiss.csv ({dismissed}); give a reason to run it anyway")
        benchmark = workload.benchmark or (entry.benchmark if entry else None)
        if benchmark is None:
            problems.add("benchmark_target", loc, "no benchmark target: not in the inventory and none given")
            continue
        missing = targets.node_problem(project_root, benchmark)[0]   # a node id's [params] too
        if missing:
            problems.add("benchmark_target", loc + (("benchmark",) if workload.benchmark else ("op",)), missing)
        correctness = entry.correctness if entry else None
        node_ids = workload.correctness.node_ids if workload.correctness else None
        k = workload.correctness.k if workload.correctness else None
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
            problems.add("correctness_target", loc,
                         "no correctness target: not in the inventory; give correctness node_ids")
            continue
        if not node_ids:
            missing = targets.problem(project_root, correctness)
            if missing:
                problems.add("correctness_target", loc + ("op",), missing)
        if k is not None:
            correctness = targets.split(correctness)[0]  # -k selects within the file
        dtypes = workload.dtypes or (entry.dtypes if entry else ())
        if not dtypes:
            problems.add("dtypes", loc, "no dtypes: the op is not in the inventory; list the workload's dtypes")
        shape_path = shape_sets.shape_file(project_root, workload.provider, manifest.defaults.bench_level, given)
        shown = shape_path if given else shape_path.relative_to(project_root)
        if not shape_path.is_file():
            problems.add("shape_file", ("defaults", "shape_file") if given else loc + ("op",), f"{shown}: no such file")
            continue
        if shape_path not in shape_cache:
            shape_cache[shape_path] = shape_sets.load_shapes(shape_path)
        available = shape_cache[shape_path].get(workload.op)
        if available is None:
            own = "; a test file that builds its own inputs is provider: pytest (its parametrization is its shapes)"
            problems.add("shape_file", loc + ("op",), f"{shown} has no shapes for {workload.op}"
                         + (own if workload.benchmark and entry is None else ""))
            continue
        try:
            shape_sets.select(available, workload.shapes)
        except ValueError as exc:
            problems.add("shapes", loc + ("shapes",), str(exc))
        resolved[workload.name] = Resolved(
            workload=workload,
            targets=Targets(benchmark=benchmark, correctness=correctness,
                            correctness_node_ids=node_ids, correctness_k=k, shape_file=given),
            dtypes=tuple(dtypes),
            shapes=workload.shapes,
            family=entry.family if entry else None,
            notes=tuple(notes),
        )
    for check, loc, detail in upstream_problems.found:
        problems.add(check, loc, detail)
    if problems.lines:
        raise CampaignError(problems.lines, EXIT_INPUT)
    return resolved
