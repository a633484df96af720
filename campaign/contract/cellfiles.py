"""What a cell writes: the worker's result.json and its plugins' rows.json, outcomes.json,
autotune*.json, phases.json and (offline FlagGems cells) offline.json. `campaign.contract.artifacts` says where each file lives.

A timed row of rows.json carries its timing window (``window_start_unix``..``window_end_unix``)
and its own clock (`RowClock`): the SM clock and clocks-event reasons the worker read inside
that window (`campaign.plugins.rowclock`), and the environmental reasons it was re-timed for;
under a noise target, the samples it took and the relative spread they reached (``noise_capped``:
the time cap stopped it above the target).

A cell that met a device out of memory says so in its result's note, in torch's own words
(`device_out_of_memory`, the one test of them): its status row carries the line, and the runner reads
it back there (`campaign.contract.status.settled`).
"""
from __future__ import annotations

import re
from typing import Literal, Optional

from campaign.contract.artifacts import SCHEMA_VERSION, Record
from campaign.contract.timers import ROW_TIMERS


class Preflight(Record):
    ok: bool
    interpreter: str
    checks: tuple[tuple[str, bool, str], ...]     # (name, ok, detail) in the order run
    failed_check: Optional[str] = None


class Correctness(Record):
    state: Literal["run", "not_run"]
    reason: Optional[str] = None         # why not run (compile-only backend, preflight, crash)
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0


class RowCounts(Record):
    ok: int = 0
    failed: int = 0
    compiled: int = 0                    # compile-only rows: launched for IR, not timed


class AutotuneSummary(Record):
    mode: Literal["record", "replay"]
    policy: Literal["measured", "first-config"]
    recorded: int = 0
    injected: int = 0
    tuning_runs: int = 0                 # configs benchmarked in this cell (replay wants 0)
    warmup_cold: int = 0                 # configs whose parallel compile failed: compiled inline


class CellResult(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    task_id: str
    rc: int                              # the worker's exit status: pytest's, 3 for preflight
    preflight: Preflight
    rows: RowCounts
    markers: dict[str, int]              # every name in MARKERS, zero included
    correctness: Correctness
    autotune: Optional[AutotuneSummary] = None
    ir_variants: int = 0
    launches: int = 0
    timed: bool                          # False on the compile-only backend: say so
    note: Optional[str] = None
    elapsed_s: float


class RowClock(Record):
    """The device clock of one timed row, read by the worker inside the row's own window.

    Reads come from the measuring thread at the window's open and just before its close, and
    from a sampling thread between (`campaign.plugins.rowclock`), so a window shorter than the
    sampling interval still holds two. ``reasons``: every clocks-event reason name read in the
    window, sorted (`campaign.contract.clockreasons`); a row whose reasons were environmental was
    timed again, and ``retimed`` says why, one entry per re-time (its environmental reasons
    joined by "|"): what is recorded is the last attempt's.
    """

    source: str                          # what read the clock: "nvml"
    samples: int                         # reads inside the window that gave a clock or a reason
    sm_mhz_median: Optional[float] = None
    sm_mhz_min: Optional[float] = None
    sm_mhz_max: Optional[float] = None
    reasons: tuple[str, ...] = ()
    retimed: tuple[str, ...] = ()


class Row(Record):
    test: str                            # pytest node id
    function: str                        # pytest function name (the capture deny list's key)
    op: str
    shape: tuple[int, ...]
    dtype: str
    timer: Literal[ROW_TIMERS]
    latency_ms: Optional[float] = None
    status: Literal["ok", "failed", "compiled"]
    markers: tuple[str, ...] = ()
    fallback_phase: Optional[str] = None
    repeat: Optional[int] = None
    l2_flush: Optional[bool] = None
    error: Optional[str] = None
    # Wall-clock span (time.time()) of what the timer measured, first call's compile excluded:
    # the telemetry samples inside it judge the row's clocks (`campaign.judging.throttle`). None: not timed,
    # or written before windows were recorded.
    window_start_unix: Optional[float] = None
    window_end_unix: Optional[float] = None
    # The clock read inside that window by the worker itself. None: not timed, no clock source
    # here (no NVML, cpu, musa: run.log says why), or written before rows carried their clocks.
    clock: Optional[RowClock] = None
    # Under the manifest's noise target (`campaign.contract.timers`): the samples taken, the relative
    # spread they reached (percent: the relative standard error of their mean; None below two samples)
    # and whether the time cap stopped them above the target. None: no noise target, or not timed.
    samples: Optional[int] = None
    noise_pct: Optional[float] = None
    noise_capped: Optional[bool] = None
    # reference: timed beside the measured rows (FlagGems' torch side), never paired (`campaign.judging.stats.keyed`)
    role: Literal["measured", "reference"] = "measured"


class Rows(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    rows: tuple[Row, ...]


class Outcome(Record):
    node: str
    outcome: Literal["passed", "failed", "error", "skipped"]
    detail: Optional[str] = None


class Outcomes(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    state: Literal["run", "not_run"]
    reason: Optional[str] = None
    outcomes: tuple[Outcome, ...]


class TunedConfig(Record):
    kwargs: dict[str, int | float | str | bool | None]
    num_warps: Optional[int] = None
    num_stages: Optional[int] = None
    num_ctas: Optional[int] = None
    maxnreg: Optional[int] = None


class AutotuneEntry(Record):
    tuner: Literal["triton", "libtuner"]
    kernel: str
    key: str                             # repr() of the tuner's cache key tuple
    config: TunedConfig


class WarmupEntry(Record):
    """One tuned key's parallel compile warm-up (`campaign.plugins.warmup`)."""

    kernel: str
    key: str
    configs: int                         # configs the tuner benchmarked (first-config: could pick) for this key
    warmed: int
    cold: tuple[str, ...] = ()           # configs that did not warm: compiled inline by the benchmark
                                         # (first-config: not compiled, absent from the IR evidence)


class AutotuneFile(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    mode: Literal["record", "replay"]
    policy: Literal["measured", "first-config"]
    source: Optional[str] = None
    entries: tuple[AutotuneEntry, ...]   # record: what was chosen; replay: what was injected
    fallbacks: tuple[AutotuneEntry, ...] = ()   # replay: keys tuned because the recording lacked them
    tuning_runs: int = 0
    session: Literal["benchmark", "correctness"] = "benchmark"
    warmup: tuple[WarmupEntry, ...] = ()
    # replay: the policy of the recording replayed; a first-config cell replaying measured
    # winners compiles those winners alone, as the device's replaying cell does
    replayed: Optional[Literal["measured", "first-config"]] = None


# Where a cell's seconds go, in the order they are spent; `campaign.worker.phases` says
# what each one includes. A cell written before phases existed has no phases.json.
PHASE_NAMES = ("start", "imports", "preflight", "compile", "tuning", "timing", "correctness", "write-out")


class Phase(Record):
    name: Literal[PHASE_NAMES]
    seconds: Optional[float] = None      # None: could not be measured here (the label says why)
    label: str                           # what the phase includes where its boundary is not exact


class Phases(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    task_id: str
    phases: tuple[Phase, ...]


class Site(Record):
    """Where something happened, and how often: ``allclose (flag_gems/ops/allclose.py:88)``."""

    site: str
    count: int


class OfflineTrust(Record):
    """offline.json: what made an offline FlagGems cell's IR untrustworthy (`campaign.plugins.flaggems_offline`).

    ``host_reads``: host reads (``item``, ``tolist``, ``bool``...) of a tensor a skipped launch was handed,
    by the first frame outside torch: host logic chose its next kernels from garbage. ``torch_fallbacks``:
    FlagGems' own ``OpOverload.redispatch`` calls (its ops handing the call back to aten: ``to``, ``copy_``
    under their conditions), by op and call site: no Triton kernel of that op compiled. A cell whose lists
    are both empty was not proved untrustworthy; what the shim cannot see (aten's C++ device branches, a
    value derived from a kernel's output before it is read) is not in it.
    """

    schema_version: Literal[1] = SCHEMA_VERSION
    answered_from: str                   # the device record the shim answered as
    flag_gems: str                       # the installed FlagGems version
    host_reads: tuple[Site, ...] = ()
    torch_fallbacks: tuple[Site, ...] = ()
    # kernels that raised compiling for the target (an autotune config may, harmlessly): not a reason for
    # the card, but where no row ran, what the screen names instead of "nothing ran"
    compile_errors: tuple[Site, ...] = ()

    @property
    def reasons(self) -> tuple[str, ...]:
        """Each proof that the IR needs the card, named: ``host reads kernel results: allclose x3``."""
        return (tuple(f"host reads kernel results: {s.site} x{s.count}" for s in self.host_reads)
                + tuple(f"FlagGems fell back to torch: {s.site} x{s.count}" for s in self.torch_fallbacks))


# torch's message for a card's allocator (``torch.OutOfMemoryError: CUDA out of memory. Tried to allocate
# 2.00 GiB``; ROCm's ``HIP out of memory``), and the runtime's own (``CUDA error: out of memory``). The class
# alone is not enough: torch raises OutOfMemoryError for the host's allocator too (``DefaultCPUAllocator:
# not enough memory``), which lanes on a card do not contend for, and the cpu backend allocates nothing else.
_DEVICE_OOM = re.compile(r"\b(?:CUDA|HIP|MUSA)(?: error:)? out of memory")


def device_out_of_memory(text: Optional[str]) -> Optional[str]:
    """The first line of ``text`` (an exception's, a row's note) that names a device out-of-memory error,
    cut to 300 characters; None: none does. The one test, on the worker's side (what it notes in its
    result, `campaign.worker.memoryfaults`) and on the runner's (`campaign.contract.status.in_lanes_out_of_memory`)."""
    for line in (text or "").splitlines():
        found = _DEVICE_OOM.search(line)
        if found is not None:
            return line.strip()[:300]
    return None
