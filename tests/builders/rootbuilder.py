"""Builds run roots in a temporary folder exactly as prepare, the runner and the plugins lay them out.

The numbers are those of a real H200 campaign (graph replay: ~0.1-0.5 % spread between
processes; a 4096^3 fp16 matmul near 0.25 ms, a 1M-element add near 8 us), made
deterministic: every jitter comes from a generator seeded by the task and shape, so a
root built twice in one folder is byte-identical and a golden report can pin it.

A `Workload` describes one workload's truth (kernels per cell, the switch's effect,
correctness); `build` writes matrix.json (through the real `campaign.planning.matrix.expand`),
manifest.yaml, prepare.json (through the real `campaign.flows.freeze.prepare_record`), every
cell's task/result/rows/outcomes/autotune/identity/ir (`rootcells`, each file through its
product model) and status.tsv, so a built root holds only what a real run could write.
Hooks (`drop`, `identity`, `rc`, ...) bend single tasks into the traps; an `identity`
override is applied after the model, so a trap may be what no model allows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

import taskplan
from rootcells import DEMO, write_cell

from campaign.contract import canonical, journal, status, yamlio, yamlwrite
from campaign.contract.artifacts import MANIFEST_FILE, MATRIX_FILE, PREPARE_FILE, STATUS_FILE
from campaign.contract.manifest import Manifest
from campaign.contract.plans import Targets
from campaign.contract.receiptmodel import content_digest
from campaign.contract.runroot import RunRoot
from campaign.flows.freeze import Checked, prepare_record, resolved_targets
from campaign.planning import harness
from campaign.planning.matrix import expand
from campaign.planning.resolve import Resolved
from campaign.running.rounds import Rounds, skipped_row


@dataclass(frozen=True)
class Kernel:
    name: str
    converts: int
    launches: int
    code: str = "mma_v3"                 # what the body holds; differs => the IR differs


@dataclass
class Workload:
    name: str
    op: str
    shapes: tuple[tuple[tuple[int, ...], str, float], ...]          # (shape, dtype, baseline ms)
    kernels: dict[str, tuple[Kernel, ...]]                          # cell -> kernels; control defaults to baseline
    effect: Callable[[int, int], float] | float = 1.0               # (round, shape index) -> candidate/baseline
    noise: float = 0.002                                            # half-width of per-process jitter
    failing: dict[str, int] = field(default_factory=dict)           # cell -> correctness nodes failing
    failing_nodes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # cell -> shape indices whose node fails
    fallback_rows: dict[str, tuple[int, ...]] = field(default_factory=dict)  # cell -> shape indices direct-timed
    tuning_configs: int = 0                                         # configs the recording cell benchmarks besides the winner
    dtypes: tuple[str, ...] = ()                                    # the manifest's dtypes (none: unnarrowed)
    failed_rows: dict[str, tuple[int, ...]] = field(default_factory=dict)   # cell -> shape indices whose row fails
    recording_bias: float = 1.0                                     # latency factor of a cell that benchmarked configs
    noise_capped: dict[str, tuple[int, ...]] = field(default_factory=dict)  # cell -> shape indices stopped at the noise cap
    erroring_nodes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # cell -> shape indices whose node errors
    winners: dict[str, dict] = field(default_factory=dict)          # cell -> the matmul config it records (kwargs)
    # the correctness target as prepare resolved it (None: the demo's test_<op>) and the nodes its
    # session records, as pytest names them under the rootdir (None: one per shape, and an outside one);
    # `failing` and `failing_nodes` index these
    targets: Optional[Targets] = None
    nodes: Optional[tuple[str, ...]] = None
    import_error: dict[str, str] = field(default_factory=dict)      # cell -> the collector whose import fails

    def cell_kernels(self, cell: str) -> tuple[Kernel, ...]:
        return self.kernels.get(cell, self.kernels["baseline"])


def mm(name: str = "matmul", effect=0.92, before: int = 12, after: int = 4, **kw) -> Workload:
    shapes = (((1024, 1024, 1024), "float16", 0.0119), ((2048, 2048, 2048), "float16", 0.0371),
              ((4096, 4096, 4096), "float16", 0.2503), ((8192, 4096, 1024), "float16", 0.1342))
    base = (Kernel("matmul_kernel", before, 400, "mma_v3"), Kernel("randn_kernel", 0, 1, "rng"))
    cand = (Kernel("matmul_kernel", after, 400, "mma_v2"), Kernel("randn_kernel", 0, 1, "rng"))
    kw.setdefault("tuning_configs", 3)
    return Workload(name, "matmul", shapes, {"baseline": base, "candidate": cand}, effect, **kw)


def pointwise(name: str = "add", op: str = "add", effect=1.0, **kw) -> Workload:
    shapes = (((1048576,), "float16", 0.0081), ((16777216,), "float16", 0.0712), ((268435456,), "float32", 2.2113))
    kernel = (Kernel(f"{op}_kernel", 0, 300, "pointwise"),)
    return Workload(name, op, shapes, {"baseline": kernel}, effect, **kw)


def _rng_only(name: str, op: str, before: int, after: int, **kw) -> Workload:
    """The measured kernel is untouched; only the once-launched RNG kernel building inputs goes from
    ``before`` to ``after`` converts."""
    w = pointwise(name, op, **kw)
    main = w.kernels["baseline"][0]
    w.kernels = {"baseline": (main, Kernel("randn_kernel", before, 1, "rng_v3")),
                 "candidate": (main, Kernel("randn_kernel", after, 1, "rng_v2"))}
    return w


def rng_inputs(name: str = "gelu_backward", op: str = "gelu_backward", **kw) -> Workload:
    """The RNG kernel building inputs loses converts."""
    return _rng_only(name, op, 3, 1, **kw)


def rng_increase(name: str = "dropout", op: str = "dropout", **kw) -> Workload:
    """The RNG kernel building inputs gains converts."""
    return _rng_only(name, op, 1, 3, **kw)


@dataclass
class Options:
    backend: str = "cuda"
    rounds: int = 4
    floor: int = 1
    control: bool = True
    drop: set = field(default_factory=set)                           # task ids without result.json
    skip: set = field(default_factory=set)                           # task ids skipped by adaptive rounds
    identity: dict = field(default_factory=dict)                     # task id -> keys overriding run_identity
    every_identity: dict = field(default_factory=dict)               # keys overriding every task's run_identity
    rc: dict = field(default_factory=dict)                           # task id -> worker rc
    replay_fallbacks: dict = field(default_factory=dict)             # task id -> count
    no_index: set = field(default_factory=set)                       # task ids whose ir/index.tsv is missing
    tuner_cache: str = "isolated"
    mode: str = "campaign"                                           # prepare.json's: "screen" for a screen root
    ir_pass: bool = False                                            # a screen's matrix: round 0 untimed before round 1
    stopping: Optional[tuple[int, int]] = None                       # (min, max): rounds.stop decided, as the runner runs it
    max_noise_pct: Optional[float] = None                            # timer.max_noise_pct: rows sampled to a noise target
    min_effect_pct: Optional[float] = None                           # the manifest's smallest effect worth a claim
    tuning: str = "pinned"                                           # defaults.tuning: per_side, every timed cell records
    journal: bool = False                                            # digests.jsonl chained as prepare and the runner write it

# prepare.json's clock: a root built twice is byte-identical
PREPARED = datetime(2026, 11, 29, 8, 35, 32, tzinfo=timezone.utc)


def manifest_text(options: Options, workloads: list[Workload]) -> str:
    """`taskplan.MANIFEST` as this root's campaign asks, in block YAML."""
    cpu = options.backend == "cpu"
    device = ({"backend": "cpu", "target": "cuda:90"} if cpu else
              {"backend": options.backend, "name": "NVIDIA H200", "uuid": "GPU-5f2c0d3e-8a41-4c2b-9d7e-1b6f0a9c3e22",
               "target": "cuda:90"})
    cells = {"baseline": {}, **({"control": {"DISABLE_MMA_V3": "0"}} if options.control else {}),
             "candidate": {"DISABLE_MMA_V3": "1"}}
    return yamlwrite.dump(taskplan.manifest_data(
        campaign=f"test-{options.backend}", description="DISABLE_MMA_V3 over built roots", device=device,
        switch={"name": "DISABLE_MMA_V3", "cells": cells, "ir_stage": "ttgir"},
        timer={"kind": "event" if cpu else "graph",
               **({} if options.max_noise_pct is None else {"max_noise_pct": options.max_noise_pct})},
        rounds=({"count": options.rounds, "alternate_order": True, "later_only_if_ir_changed": True}
                if options.stopping is None else
                {"min": options.stopping[0], "max": options.stopping[1], "stop": "decided"}),
        measured_launch_floor=options.floor, production_default_policy="unchanged-off",
        **({} if options.min_effect_pct is None else {"min_effect_pct": options.min_effect_pct}),
        defaults={"timeout_s": 600, "bench_level": "core", "tuner_cache": options.tuner_cache,
                  **({} if options.tuning == "pinned" else {"tuning": options.tuning})},
        workloads=[{"name": w.name, "op": w.op, **({"dtypes": list(w.dtypes)} if w.dtypes else {})} for w in workloads]))


def build(base: Path, workloads: list[Workload], options: Optional[Options] = None, name: str = "root") -> Path:
    options = options or Options()
    root = Path(base) / name
    root.mkdir(parents=True)
    text = manifest_text(options, workloads)
    (root / MANIFEST_FILE).write_text(text, encoding="utf-8")
    manifest = yamlio.validate(Manifest, root / MANIFEST_FILE)
    resolved = {w.name: Resolved(wl, w.targets or Targets(benchmark=f"{DEMO}/bench_demo.py::test_bench_{w.op}",
                                                          correctness=f"{DEMO}/test_demo.py::test_{w.op}"),
                                 ("float16", "float32"), None, "demo")
                for w, wl in zip(workloads, manifest.workloads)}
    matrix = expand(manifest, resolved, ir_pass=options.ir_pass)
    canonical.write_json_new(root / MATRIX_FILE, matrix.model_dump(mode="json"))
    digests = harness.recorded_digests(harness.PROJECT_ROOT, resolved_targets(resolved))
    checked = Checked(root / MANIFEST_FILE, manifest, resolved, matrix, digests)
    record = prepare_record(checked, harness.PROJECT_ROOT, PREPARED, options.mode)
    if not options.journal:   # a root as prepared before the journal was chained: traps are bent into its cells after
        record.pop("journal")
    canonical.write_json_new(root / PREPARE_FILE, record)
    if options.journal:
        journal.open_root(RunRoot(root), (MANIFEST_FILE, MATRIX_FILE))
    append = ((lambda row: journal.record(RunRoot(root), row.task_id, row, root / STATUS_FILE)) if options.journal
              else (lambda row: status.append(root / STATUS_FILE, row)))
    by_name = {w.name: w for w in workloads}
    # adaptive rounds: the runner's own decisions, between rounds (fixed rounds: every task is written)
    rounds = Rounds(root, matrix, manifest, lambda text: None) if options.stopping else None
    for task in matrix.tasks:
        decided = rounds and rounds.skip(task, status.settled(status.read(root / STATUS_FILE)[0]))
        if decided:
            append(skipped_row(task, *decided))
            continue
        if task.id in options.skip:
            why = "IR unchanged in the IR pass; not timed: IR unchanged" if options.ir_pass else "IR unchanged in round 1"
            append(status.StatusRow(task.id, task.round, task.workload, task.cell, None, status.SKIPPED, note=why))
            continue
        if task.id in options.drop:
            continue
        append(write_cell(root, task, by_name[task.workload], options, manifest))
    return root


def screen_root(base: Path, workloads: list[Workload], options: Optional[Options] = None,
                name: str = "screen") -> Path:
    """A sealed one-round root prepared for the screen, its screen.tsv written before the seal as the screen does."""
    from campaign.flows import session
    from campaign.judging import screenroot, screentable
    options = options or Options()
    options.rounds, options.mode = 1, "screen"
    root = build(base, workloads, options, name)
    canonical.write_new(root / screenroot.SCREEN_FILE, screentable.render(screenroot.table(root)))
    session.seal_root(root)
    return root


def sealed(base: Path, workloads: Optional[list[Workload]] = None) -> Path:
    """A built root of matmul and add, sealed as `campaign run` seals it."""
    from campaign.flows import session
    root = build(base, workloads or [mm(), pointwise()])
    session.seal_root(root)
    return root


def edit_sealed(path: Path, text: str) -> None:
    """Write ``text`` over a file of a sealed (read-only) root, its folder's and its own modes restored."""
    folder_mode, file_mode = path.parent.stat().st_mode & 0o777, path.stat().st_mode & 0o777
    path.parent.chmod(0o755)
    path.chmod(0o644)
    path.write_text(text, encoding="utf-8")
    path.chmod(file_mode)
    path.parent.chmod(folder_mode)


def rewrite_receipt(root: Path, edit, redigest: bool = False) -> None:
    """A sealed root's receipt.json edited in place by ``edit(data)``; with ``redigest`` its
    content_sha256 recomputed (where it still has one), so the forgery is consistent with itself."""
    data = canonical.read_json(root / "receipt.json")
    edit(data)
    if redigest and "content_sha256" in data:
        data["content_sha256"] = content_digest(data)
    edit_sealed(root / "receipt.json", canonical.dumps(data))


def turn_class(workload: str, klass: str, reason: Optional[str] = None):
    """An edit for `rewrite_receipt`: ``workload``'s sealed class turned ``klass`` and the counts tallied
    again, as a careful forger (or an older classifier's seal) leaves them consistent with themselves."""
    def edit(data: dict) -> None:
        verdicts = data["verdicts"]
        verdicts["workloads"][workload].update({"class": klass, **({"reason": reason} if reason else {})})
        classes = [w["class"] for w in verdicts["workloads"].values()]
        verdicts["counts"] = {name: classes.count(name) for name in verdicts["counts"]}
    return edit


def as_version_1(data: dict) -> None:
    """A receipt's data downgraded to schema 1: no folder list, no self digest, no file modes."""
    data.update(schema_version=1)
    for key in ("folders", "content_sha256"):
        data.pop(key)
    for entry in data["files"].values():
        entry.pop("mode")
