"""Every compiled variant's IR, and how often each variant was launched.

Files written into ``<cell_dir>/ir/`` (see `campaign.contract.artifacts`)::

    <hash>-<kernel>.<stage>   stage in ttir, ttgir, llir, ptx (cuda) or amdgcn (hip); sass (see below)
    index.tsv                 header INDEX_COLUMNS = hash, kernel, launches, stages;
                              one row per variant, sorted by kernel then hash;
                              stages is a comma-joined list of the stages written

The hash is Triton's cache hash of the variant: it joins an IR file to its launches
within this cell only (it includes the set environment variables, so it differs
between cells even for byte-identical code; compare cells by kernel name and content).

How the join is made (Triton 3.6): ``knobs.compilation.listener`` fires once per
variant per process, on cache hits too, with the hash, the name and the cached
stage files; ``kernel_load_end_hook`` maps the loaded function handle to the hash;
``launch_enter_hook`` sees the handle of every launch. Launches whose handle was
never loaded under this plugin cannot be joined: they are counted and reported in
run.log, never folded into a variant.

Several workloads in one process (`campaign.worker.batch`): a kernel an earlier workload
compiled and loaded is in Triton's in-memory cache, so neither the listener nor the load
hook fires for it again. `PROCESS` keeps, for the whole process, every loaded variant
(hash, name, stage files in the process's Triton cache) and its handle; a launch of a
variant this workload has not captured copies its stages from there into this workload's
``ir/`` and counts the launch, so each workload's evidence is what a process of its own
would hold for the kernels it launched. Loads in any session (correctness too) are recorded.
The same holds for the configs the autotune warm-up compiles without launching them (every
config under first-config): `campaign.plugins.warmup` hands each one here (`WARMED_HOOKS`),
and one compiled by an earlier workload is copied from its CompiledKernel's stage files.

SASS is ``nvdisasm -hex`` over the variant's cubin from Triton's cache (the listener
hands its path on a GPU and offline alike; ``CompiledKernel.asm`` is not read),
without the debug sections (`campaign.contract.sasstext.sass_code`: source paths and an
embedded PTX copy, more than half of the output for the demo kernels). It is written
where the backend declares nvdisasm, and wherever the manifest fingerprints at sass:
on the compile-only backend ptxas runs as part of every compile (the cubin is a stage
of Triton's cuda backend) and Triton's wheel ships nvdisasm, so only the disassembly
is extra, paid only when asked for, and once a run per cubin (`campaign.plugins.disassembly`).
"""
from __future__ import annotations

import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from triton import knobs

from campaign.contract.artifacts import FAILED_SUFFIX, INDEX_COLUMNS, INDEX_FILE, IR_DIR
from campaign.contract.canonical import write_new
from campaign.contract.cores import worker_threads
from campaign.contract.platforms import TEXT_STAGES, family
from campaign.plugins import flaggems_offline, warmup
from campaign.plugins.disassembly import SassStore, disassembled

STAGES = TEXT_STAGES                # every family's text stages; a variant writes those its compiler made
SASS_TOOL = "nvdisasm"


def ir_file_name(hash_: str, kernel: str, stage: str) -> str:
    return f"{hash_}-{kernel}.{stage}"


def index_text(variants: dict[str, tuple[str, tuple[str, ...]]], launches: Counter) -> str:
    """index.tsv's content: variants maps hash -> (kernel, stages written)."""
    lines = ["\t".join(INDEX_COLUMNS)]
    for hash_, (kernel, stages) in sorted(variants.items(), key=lambda item: (item[1][0], item[0])):
        lines.append("\t".join((hash_, kernel, str(launches.get(hash_, 0)), ",".join(stages))))
    return "\n".join(lines) + "\n"


def writes_sass(ctx) -> bool:
    """Where the backend declares nvdisasm; offline, where the manifest fingerprints at sass, and in a
    FlagGems cell answered as its card (`campaign.plugins.flaggems_offline`) for a target nvdisasm
    reads: it keeps the card's stages, so the two are held side by side at every one
    (`tests/bench/fidelity.py`). Elsewhere offline it is left out: nvdisasm per variant cost the demo
    screen 44 % more CPU (41.8 s against 29.0 s user)."""
    if ctx.backend.capabilities.disassembler == SASS_TOOL:
        return True
    terms = getattr(ctx, "terms", None)             # unit tests build a context without them
    if terms is None or family(terms.device.target).disassembly != "sass":
        return False
    return terms.ir_stage == "sass" or flaggems_offline.ACTIVE is not None


def _launch_handle(metadata) -> object:
    # The launcher passes Triton's LazyDict; its raw data holds name/function/stream.
    # Reading .data, not .get(), keeps a kernel's own launch_metadata callback unevaluated.
    data = getattr(metadata, "data", metadata)
    return data.get("function") if isinstance(data, dict) else None


class ProcessRecord:
    """Every variant loaded in this process and its function handle, across pytest sessions."""

    def __init__(self):
        self.handles: dict[object, str] = {}        # function handle -> hash
        self.variants: dict[str, tuple[str, dict]] = {}   # hash -> (kernel, stage file name -> path)
        self.installed = False

    def on_loaded(self, module, function, name, metadata_group, hash):
        self.handles[function] = hash
        self.variants.setdefault(hash, (name, dict(metadata_group)))

    def install(self) -> None:
        # Never removed: the next workload of the process launches what this one loaded.
        if not self.installed:
            knobs.runtime.kernel_load_end_hook.add(self.on_loaded)
            self.installed = True


PROCESS = ProcessRecord()


class IrCapturePlugin:
    def __init__(self, ctx):
        self.ctx = ctx
        self.ir_dir = Path(ctx.cell_dir) / IR_DIR
        self.sass = writes_sass(ctx)
        self.variants: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.cubins: dict[str, str] = {}            # hash -> cubin path, disassembled at the end
        plan = getattr(ctx, "plan", None)               # unit tests build a context without one
        self.store = SassStore(Path(plan.sass_cache_dir) if plan is not None and plan.sass_cache_dir else None)
        self.earlier: set[str] = set()              # variants loaded by an earlier workload of the process
        self.launches: Counter = Counter()
        self.unjoined: Counter = Counter()          # kernel name -> launches with an unknown handle
        self.previous_listener = None
        self.installed = False

    # -- Triton callbacks -------------------------------------------------------------

    def on_compiled(self, *, src, metadata, metadata_group, times, cache_hit):
        try:
            self._copy_variant(metadata["hash"], metadata["name"], metadata_group)
        finally:
            if self.previous_listener is not None:
                self.previous_listener(src=src, metadata=metadata, metadata_group=metadata_group,
                                       times=times, cache_hit=cache_hit)

    def on_launch(self, metadata):
        handle = _launch_handle(metadata)
        hash_ = PROCESS.handles.get(handle)
        if hash_ is None:
            data = getattr(metadata, "data", metadata)
            self.unjoined[data.get("name", "?") if isinstance(data, dict) else "?"] += 1
            return
        if hash_ not in self.variants:              # compiled before this session: no event fired here
            kernel, metadata_group = PROCESS.variants[hash_]
            self._copy_variant(hash_, kernel, metadata_group)
            self.earlier.add(hash_)
        self.launches[hash_] += 1

    def on_warmed(self, kernel) -> None:
        """A config the warm-up compiled (`campaign.plugins.warmup`); not yet captured here, it was
        compiled by an earlier workload of this process (no compile event fired for it now)."""
        if kernel.hash not in self.variants:
            self._copy_variant(kernel.hash, kernel.name, kernel.metadata_group)
            self.earlier.add(kernel.hash)

    def _copy_variant(self, hash_: str, kernel: str, metadata_group: dict) -> None:
        if hash_ in self.variants:
            return
        by_stage = {Path(name).suffix[1:]: path for name, path in metadata_group.items()}
        written = []
        for stage in STAGES:
            if stage in by_stage:
                shutil.copyfile(by_stage[stage], self.ir_dir / ir_file_name(hash_, kernel, stage))
                written.append(stage)
        if self.sass and "cubin" in by_stage:
            self.cubins[hash_] = by_stage["cubin"]
        self.variants[hash_] = (kernel, tuple(written))

    def _disassemble(self) -> None:
        # One nvdisasm process per variant, run on every core this process may use: a recording
        # cell holds a variant per benchmarked config (FlagGems mm on the H200: 162), and one
        # after another they were most of its write-out. Results are written in hash order.
        order = sorted(self.cubins.items())
        with ThreadPoolExecutor(max_workers=min(worker_threads(), max(1, len(order)))) as pool:
            done = list(pool.map(lambda item: disassembled(self.store, Path(item[1])), order))
        for (hash_, _), (text, why) in zip(order, done):
            kernel, stages = self.variants[hash_]
            if why is not None:                 # a missing tool must not hide the other stages
                self.ctx.log.line(f"ir-capture: sass of {hash_}-{kernel} failed: {why}")
                # a variant left out of the sass set would let two failing sides fingerprint as
                # equal: the marker makes the cell's sass evidence missing, not smaller
                (self.ir_dir / (ir_file_name(hash_, kernel, "sass") + FAILED_SUFFIX)).write_text(why + "\n", encoding="utf-8")
                continue
            (self.ir_dir / ir_file_name(hash_, kernel, "sass")).write_text(text, encoding="utf-8")
            self.variants[hash_] = (kernel, stages + ("sass",))

    # -- pytest hooks -----------------------------------------------------------------

    def pytest_configure(self, config):
        self.ir_dir.mkdir(parents=True, exist_ok=True)
        self.previous_listener = knobs.compilation.listener
        knobs.compilation.listener = self.on_compiled
        PROCESS.install()
        knobs.runtime.launch_enter_hook.add(self.on_launch)
        warmup.WARMED_HOOKS.append(self.on_warmed)
        self.installed = True

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        if self.sass:
            self._disassemble()
        write_new(self.ir_dir / INDEX_FILE, index_text(self.variants, self.launches))
        total = sum(self.launches.values())
        self.ctx.log.line(f"ir-capture: {len(self.variants)} variants, {total} joined launches")
        if self.earlier:
            self.ctx.log.line(f"ir-capture: {len(self.earlier)} of them compiled by an earlier workload of this "
                              "process, taken from its record at their first launch or warm-up here")
        if self.unjoined:
            detail = " ".join(f"{name}={count}" for name, count in sorted(self.unjoined.items()))
            self.ctx.log.line(f"ir-capture: launches not joinable to a variant: {detail}")

    def pytest_unconfigure(self, config):
        if not self.installed:
            return
        if knobs.compilation.listener == self.on_compiled:
            knobs.compilation.listener = self.previous_listener
        knobs.runtime.launch_enter_hook.remove(self.on_launch)
        warmup.WARMED_HOOKS.remove(self.on_warmed)
        self.installed = False


def make(ctx) -> IrCapturePlugin:
    return IrCapturePlugin(ctx)
