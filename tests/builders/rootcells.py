"""One cell folder of a built root (`rootbuilder.build`), laid out as prepare, the runner and the
plugins lay it out, each file through its product model: task.json (`campaign.contract.plans.CellPlan`),
run_identity.json (`campaign.contract.rootrecords.RunIdentity`), rows, outcomes, autotune and
result (`campaign.contract.cellfiles`), ir/ and its index. Every jitter comes from a generator
seeded by the task and shape, so a cell written twice in one root is byte-identical.
"""
from __future__ import annotations

import dataclasses
import hashlib
import random
from pathlib import Path
from typing import TYPE_CHECKING

from campaign.backends import get_backend
from campaign.backends.plan import plugin_plan
from campaign.contract import canonical, status
from campaign.contract.artifacts import (
    AUTOTUNE_FILE,
    IDENTITY_FILE,
    INDEX_COLUMNS,
    IR_DIR,
    MARKERS,
    OUTCOMES_FILE,
    RESULT_FILE,
    ROWS_FILE,
    TASK_FILE,
    cell_dir_name,
)
from campaign.contract.cellfiles import AutotuneFile, CellResult, Outcomes, Rows
from campaign.contract.manifest import Manifest
from campaign.contract.plans import CellPlan
from campaign.contract.rootrecords import RunIdentity
from campaign.planning import harness
from campaign.planning.matrix import cell_terms
from campaign.running.cellenv import pinned_env

if TYPE_CHECKING:
    from rootbuilder import Kernel, Options, Workload

DEMO = "ops/workloads/demo"


def _hex(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:40]


def ttgir(kernel: Kernel, cell: str) -> str:
    """A TTGIR module; source locations differ per cell (they must not count)."""
    lines = ['#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>',
             '#mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1]}>' if kernel.code == "mma_v3"
             else '#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1]}>',
             'module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {',
             f'  tt.func public @{kernel.name}(%arg0: !tt.ptr<f16> loc("/work/{cell}/k.py":12:0)) attributes {{noinline = false}} {{',
             '    %0 = tt.get_program_id x : i32 loc(#loc1)',
             '    %1 = tt.splat %arg0 : !tt.ptr<f16> -> tensor<128x64x!tt.ptr<f16>, #blocked> loc(#loc2)']
    for i in range(kernel.converts):
        lines.append(f'    %c{i} = ttg.convert_layout %1 : tensor<128x64xf16, #blocked> -> tensor<128x64xf16, #mma> loc(#loc{3 + i % 2})')
    lines.append(f'    // body: {kernel.code}')
    lines += ['    tt.return loc(#loc5)', '  } loc(#loc)', '} loc(#loc)',
              f'#loc = loc("/work/{cell}/k.py":0:0)', f'#loc1 = loc("/work/{cell}/k.py":13:7)',
              f'#loc2 = loc("/work/{cell}/k.py":14:9)', f'#loc3 = loc("/work/{cell}/k.py":20:11)',
              f'#loc4 = loc("/work/{cell}/k.py":21:11)', f'#loc5 = loc("/work/{cell}/k.py":30:4)']
    return "\n".join(lines) + "\n"


def timed(task, options: Options) -> bool:
    """Whether the cell times its rows: never on the compile-only backend, nor in a screen's IR pass."""
    return options.backend != "cpu" and task.timed


def identity(task, options: Options, pinned: dict[str, str]) -> dict:
    cpu = options.backend == "cpu"
    # the worker's own rule (`campaign.plugins.run_identity.timer_section`): an untimed cell's timer is "none"
    timer = ({"kind": "none", "warmup_ms": None, "rep_ms": None, "return_mode": None, "direct_repeat": None, "l2_flush": None}
             if not timed(task, options) else {"kind": "graph", "warmup_ms": 25.0, "rep_ms": 100.0, "return_mode": "median",
                          "direct_repeat": None, "l2_flush": False})
    if options.max_noise_pct is not None and timed(task, options):
        timer |= {"max_noise_pct": options.max_noise_pct, "min_samples": 10, "timeout_s": 15.0}
    data = {"schema_version": 1, "task_id": task.id, "backend": options.backend,
            "device_name": None if cpu else "NVIDIA H200",
            "device_uuid": None if cpu else "GPU-5f2c0d3e-8a41-4c2b-9d7e-1b6f0a9c3e22", "device_target": "cuda:90",
            "driver": None if cpu else "570.124.06", "cuda": None if cpu else "13.0", "torch": "2.11.0+cu130",
            "triton": "3.6.0", "triton_env": dict(task.env), "flag_gems": None, "python": "3.12.3",
            "platform": "Linux-6.8.0-x86_64-with-glibc2.39", "bench_level": "core", "shape_mode": "project",
            "tuner_cache": options.tuner_cache, "autotune_mode": task.autotune.mode,
            "autotune_source": task.autotune.source, "autotune_policy": task.autotune.policy,
            "env": dict(task.env), "pinned_env": dict(pinned), "harness_digest": "0" * 64,
            "timer": timer, "direct_repeat": None, "tuner_cache_at_start": {"files": 0, "bytes": 0},
            **({} if options.tuning == "pinned" else {"tuning": options.tuning})}   # pinned: as roots before it
    return {**RunIdentity.model_validate(data).dump(), **options.every_identity, **options.identity.get(task.id, {})}


def _rows(task, w: Workload, options: Options) -> list[dict]:
    rows = []
    for i, (shape, dtype, ms) in enumerate(w.shapes):
        node = f"{DEMO}/bench_demo.py::test_bench_{w.op}[{dtype}-{'x'.join(map(str, shape))}]"
        row = {"test": node, "function": f"test_bench_{w.op}", "op": w.op, "shape": list(shape), "dtype": dtype,
               "markers": [], "status": "ok", "timer": "graph"}
        if not timed(task, options):
            row.update(status="compiled", timer="none", latency_ms=None)
        else:
            ratio = (w.effect(task.round, i) if callable(w.effect) else w.effect) if task.cell == "candidate" else 1.0
            if task.autotune.mode == "record" and task.autotune.policy == "measured" and w.tuning_configs:
                ratio *= w.recording_bias
            jitter = random.Random(f"{task.id}/{i}").uniform(-w.noise, w.noise)
            row["latency_ms"] = round(ms * ratio * (1 + jitter), 6)
            if i in w.failed_rows.get(task.cell, ()):
                row.update(status="failed", latency_ms=None, error="RuntimeError: CUDA error: an illegal memory access")
            if options.max_noise_pct is not None and row["status"] == "ok":
                capped = i in w.noise_capped.get(task.cell, ())
                # a capped row ran its 15 s of replays and stayed above the target; the others met it at 10
                row.update(samples=1500 if capped else 10, noise_capped=capped,
                           noise_pct=round(options.max_noise_pct * (3.0 if capped else 0.5), 6))
            if i in w.fallback_rows.get(task.cell, ()):
                row.update(timer="direct", markers=["BENCHMARK_DIRECT_NO_CUDAGRAPH"], fallback_phase="capture", repeat=1)
        rows.append(row)
    return rows


def _outcomes(task, w: Workload, options: Options) -> dict:
    if options.backend == "cpu":
        return {"schema_version": 1, "state": "not_run", "reason": "compile-only backend: nothing executed", "outcomes": []}
    if not task.timed:
        return {"schema_version": 1, "state": "not_run", "reason": "IR pass: untimed", "outcomes": []}
    failing = set(range(w.failing.get(task.cell, 0))) | set(w.failing_nodes.get(task.cell, ()))
    nodes = [f"{DEMO}/test_demo.py::test_{w.op}[{dtype}-{'x'.join(map(str, shape))}]" for shape, dtype, _ in w.shapes]
    erroring = set(w.erroring_nodes.get(task.cell, ()))
    outcomes = [{"node": n, "outcome": "error" if k in erroring else "failed" if k in failing else "passed",
                 "detail": ("RuntimeError: CUDA error: an illegal memory access (in the fixture)" if k in erroring else
                            "AssertionError: max abs diff 0.125 > atol 0.001" if k in failing else None)}
                for k, n in enumerate(nodes)]
    outcomes.append({"node": f"{DEMO}/test_demo.py::test_other_{w.op}", "outcome": "failed", "detail": "outside the target"})
    return {"schema_version": 1, "state": "run", "reason": None, "outcomes": outcomes}


def _plan(root: Path, cell: Path, task, manifest: Manifest, options: Options) -> CellPlan:
    """task.json as the runner plans the cell (`campaign.running.runner.Runner.plan`)."""
    scratch = root.parent / "scratch"
    return CellPlan(task=task, project_root=str(harness.PROJECT_ROOT), root=str(root), cell_dir=str(cell),
                    triton_cache_dir=str(scratch / f"triton-{task.order}"),
                    tuner_cache_dir=str(scratch / ("tuner-shared" if options.tuner_cache == "shared" else f"tuner-{task.order}")),
                    tuner_cache=options.tuner_cache, pinned_env=pinned_env(manifest),
                    plugins=plugin_plan(get_backend(manifest.device.backend)), terms=cell_terms(manifest),
                    harness_digest="0" * 64)


def write_cell(root: Path, task, w: Workload, options: Options, manifest: Manifest) -> status.StatusRow:
    cell = root / cell_dir_name(task.id)
    (cell / IR_DIR).mkdir(parents=True)
    plan = _plan(root, cell, task, manifest, options)
    canonical.write_json_new(cell / TASK_FILE, plan.model_dump(mode="json"))
    canonical.write_json_new(cell / IDENTITY_FILE, identity(task, options, plan.pinned_env))
    rows = _rows(task, w, options)
    canonical.write_json_new(cell / ROWS_FILE, Rows(rows=rows).model_dump(mode="json"))
    outcomes = _outcomes(task, w, options)
    canonical.write_json_new(cell / OUTCOMES_FILE, Outcomes.model_validate(outcomes).model_dump(mode="json"))
    kernels = w.cell_kernels(task.cell)
    recording = task.autotune.mode == "record"
    tunes = recording and task.autotune.policy == "measured" and w.tuning_configs > 0
    if tunes:
        # as on the H200: the recording cell compiles and benchmarks every config, so its ir/
        # holds a variant per config tried, each launched many times by the benchmarker
        kernels = kernels + tuple(dataclasses.replace(kernels[0], converts=10 + i, launches=40,
                                                      code=f"{kernels[0].code}_config{i}")
                                  for i in range(w.tuning_configs))
    index = ["\t".join(INDEX_COLUMNS)]
    for k in sorted(kernels, key=lambda k: k.name):
        h = _hex(task.cell, task.env, k.name, k.code)
        (cell / IR_DIR / f"{h}-{k.name}.ttgir").write_text(ttgir(k, task.cell), encoding="utf-8")
        index.append(f"{h}\t{k.name}\t{k.launches}\tttgir")
    if task.id not in options.no_index:
        (cell / IR_DIR / "index.tsv").write_text("\n".join(index) + "\n", encoding="utf-8")
    fallbacks = options.replay_fallbacks.get(task.id, 0)
    winner = w.winners.get(task.cell, w.winners.get("baseline", {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}))
    entry = {"tuner": "triton", "kernel": "matmul_kernel", "key": "(4096, 4096, 4096, 'torch.float16')",
             "config": {"kwargs": winner, "num_warps": 8, "num_stages": 3}}
    canonical.write_json_new(cell / AUTOTUNE_FILE, AutotuneFile.model_validate({
        "mode": task.autotune.mode, "policy": task.autotune.policy, "source": task.autotune.source,
        "entries": [entry], "fallbacks": [entry] * fallbacks,
        "tuning_runs": (w.tuning_configs + 1 if tunes else 0) if recording else fallbacks * 6}).model_dump(mode="json"))
    markers = {name: 0 for name in MARKERS}
    markers["AUTOTUNE_REPLAY_FALLBACK"] = fallbacks
    markers["BENCHMARK_DIRECT_NO_CUDAGRAPH"] = len(w.fallback_rows.get(task.cell, ()))
    passed = sum(o["outcome"] == "passed" for o in outcomes["outcomes"])
    failed = len(outcomes["outcomes"]) - passed
    rc = options.rc.get(task.id, 1 if failed else 0)
    untimed = not timed(task, options)
    result = CellResult.model_validate({"task_id": task.id, "rc": rc,
              "preflight": {"ok": True, "interpreter": "/usr/bin/python3.12", "checks": [["torch", True, "2.11.0"]]},
              "rows": {"ok": 0 if untimed else sum(r["status"] == "ok" for r in rows),
                       "failed": sum(r["status"] == "failed" for r in rows), "compiled": len(rows) if untimed else 0},
              "markers": markers,
              "correctness": {"state": outcomes["state"], "reason": outcomes["reason"], "passed": passed, "failed": failed},
              "autotune": {"mode": task.autotune.mode, "policy": task.autotune.policy, "recorded": 1, "injected": 0 if task.autotune.mode == "record" else 1},
              "ir_variants": len(kernels), "launches": sum(k.launches for k in kernels), "timed": not untimed,
              "elapsed_s": round(30 + random.Random(task.id).uniform(0, 20), 3)})
    canonical.write_json_new(cell / RESULT_FILE, result.model_dump(mode="json"))
    return status.StatusRow(task.id, task.round, task.workload, task.cell, rc, status.rc_name(rc, timed_out=rc in (124, 137)),
                            result.elapsed_s, result.rows.ok, result.rows.failed, markers)
