"""Autotune record and replay for Triton's Autotuner and FlagGems' LibTuner.

The mode comes from the task (``ctx.plan.task.autotune``): *record* lets the tuner
choose and writes what it chose; *replay* seeds the recording of another cell
(``ctx.plan.replay_file``) so both sides of a comparison run the same configs and
only the switch and noise remain. Policy *measured* tunes by timing; *first-config*
(the compile-only backend, which can time nothing) takes the first config left
after the tuner's own pruning, untimed, and says so in autotune.json.

``<cell_dir>/autotune.json`` is `campaign.contract.cellfiles.AutotuneFile`: record lists
every (tuner, kernel, key) chosen; replay lists what it injected, the keys it had
to tune because the recording lacked them (``fallbacks``, each announced with an
``AUTOTUNE_REPLAY_FALLBACK reason=key_missing`` marker), and ``tuning_runs``:
configs benchmarked under *measured*, keys decided under *first-config*. A clean
replay has no fallbacks and zero tuning runs.

Mechanics (Triton 3.6, FlagGems 5.0.2): ``run`` of Autotuner and of every subclass
that defines its own (LibTuner) is wrapped, classes defined later included. The
key is computed as the tuner computes it (LibTuner through its ``get_key``). On the
first call with a key, replay overwrites the tuner's cache entry unconditionally
(LibTuner's cache is a persistent sqlite table that may already hold a different
winner), and record reads this call's own key back after the call (a warm sqlite
never writes it again, so diffing the cache would record nothing).

The correctness session gets its own instance (``session="correctness"``, made by
`campaign.worker.cell.correctness_plugins`), so correctness runs on the configs that
were timed: the recording cell records the winners of the correctness shapes into
``autotune-correctness.json`` (a key the benchmark session already tuned is read back
from the tuner's in-process cache, untuned); a replaying cell replays both recordings
there, and a key missing from both is an ``AUTOTUNE_REPLAY_FALLBACK`` counted on the
cell's one log, exactly as in the benchmark session. Under *measured*, a key about to
be tuned first has all its configs compiled in parallel (`campaign.plugins.warmup`).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import triton
from triton.runtime.autotuner import Autotuner

from campaign.contract import cores
from campaign.contract.artifacts import AUTOTUNE_CORRECTNESS_FILE, AUTOTUNE_FILE, REPLAY_FALLBACK_MARKER
from campaign.contract.canonical import read_json, write_json_new
from campaign.contract.cellfiles import AutotuneEntry, AutotuneFile, TunedConfig, WarmupEntry
from campaign.plugins import warmup

SESSION_FILES = {"benchmark": AUTOTUNE_FILE, "correctness": AUTOTUNE_CORRECTNESS_FILE}

Ident = tuple[str, str, str]                      # (tuner, kernel, repr(key))


def tuner_kind(tuner) -> str:
    return "libtuner" if any(cls.__name__ == "LibTuner" for cls in type(tuner).__mro__) else "triton"


def kernel_name(tuner) -> str:
    fn = tuner.base_fn
    return f"{fn.__module__}.{fn.__qualname__}"


def tuning_key(tuner, args: tuple, kwargs: dict):
    """The tuner's cache key for this call, or None when it has nothing to choose."""
    if len(tuner.configs) <= 1:
        return None
    all_args = {**dict(zip(tuner.arg_names, args)), **kwargs}
    named = {k: v for k, v in all_args.items() if k in tuner.arg_names}
    if hasattr(tuner, "get_key"):
        return tuner.get_key(named)
    # Autotuner.run (3.6): the key= values, then str(dtype) of every argument with a dtype.
    key = [named[k] for k in tuner.keys if k in named]
    key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return tuple(key)


def to_tuned(config) -> TunedConfig:
    plain = (int, float, str, bool, type(None))
    kwargs = {k: v if isinstance(v, plain) else repr(v) for k, v in config.kwargs.items()}
    return TunedConfig(kwargs=kwargs, num_warps=config.num_warps, num_stages=config.num_stages,
                       num_ctas=config.num_ctas, maxnreg=config.maxnreg)


def from_tuned(tuned: TunedConfig, configs) -> triton.Config:
    """The tuner's own matching config when there is one: it carries the pre_hook a file cannot."""
    for config in configs:
        if to_tuned(config) == tuned:
            return config
    options = {k: v for k, v in (("num_warps", tuned.num_warps), ("num_stages", tuned.num_stages),
                                 ("num_ctas", tuned.num_ctas), ("maxnreg", tuned.maxnreg)) if v is not None}
    return triton.Config(dict(tuned.kwargs), **options)


def recording_files(replay_file: Path, session: str) -> tuple[Path, ...]:
    """The recordings a session replays, first first: the benchmark session replays the
    benchmark's; correctness replays the benchmark's (the configs that were timed) and the
    correctness session's for the keys only correctness met. They lie side by side."""
    if session == "benchmark":
        return (replay_file,)
    return (replay_file, replay_file.parent / AUTOTUNE_CORRECTNESS_FILE)


class AutotunePlugin:
    def __init__(self, ctx, session: str = "benchmark"):
        self.ctx = ctx
        spec = ctx.plan.task.autotune
        self.mode, self.policy, self.source = spec.mode, spec.policy, spec.source
        self.session = session
        self.file = SESSION_FILES[session]
        self.workers = cores.worker_threads()
        self.recording: dict[Ident, TunedConfig] = {}
        self.replayed: str | None = None     # replay: the policy of the recording replayed
        self.entries: dict[Ident, AutotuneEntry] = {}
        self.fallbacks: dict[Ident, AutotuneEntry] = {}
        self.warmups: dict[Ident, WarmupEntry] = {}
        self.seen: set[tuple[int, str]] = set()
        self.tuning_runs = 0
        self.patched: dict[type, object] = {}
        self.original_bench = None
        self.added_init_subclass = False

    # -- the wrapped calls -------------------------------------------------------------

    def tuned_run(self, original, tuner, args, kwargs):
        key = tuning_key(tuner, args, kwargs)
        first = key is not None and (id(tuner), repr(key)) not in self.seen
        if not first:
            return original(tuner, *args, **kwargs)
        self.seen.add((id(tuner), repr(key)))
        ident = (tuner_kind(tuner), kernel_name(tuner), repr(key))
        fallback = False
        recorded = self.recording.get(ident) if self.mode == "replay" else None
        if self.mode == "replay":
            if recorded is not None:
                tuner.cache[key] = from_tuned(recorded, tuner.configs)
                self.entries[ident] = AutotuneEntry(tuner=ident[0], kernel=ident[1], key=ident[2], config=recorded)
            else:
                fallback = True
                self.ctx.log.marker(REPLAY_FALLBACK_MARKER, reason="key_missing", kernel=ident[1], key=ident[2])
        # a first-config cell holds every config's code as IR evidence, unless it replays a
        # measured winner: then it holds that winner's code alone, as the device cell does
        if self.policy == "first-config" and not (recorded is not None and self.replayed == "measured"):
            configs = self.warm(tuner, ident, args, kwargs)
            if key not in tuner.cache:
                tuner.cache[key] = configs[0]                    # untimed: nothing can be measured here
                self.tuning_runs += 1
        elif key not in tuner.cache:
            self.warm(tuner, ident, args, kwargs)
        result = original(tuner, *args, **kwargs)
        if self.mode == "record" or fallback:
            if key not in tuner.cache:
                raise RuntimeError(f"autotune: {ident[1]} ran but its key {ident[2]} is not in the tuner's cache; "
                                   "the key computation no longer matches this Triton/FlagGems version")
            entry = AutotuneEntry(tuner=ident[0], kernel=ident[1], key=ident[2], config=to_tuned(tuner.cache[key]))
            (self.fallbacks if fallback else self.entries)[ident] = entry
        return result

    def warm(self, tuner, ident: Ident, args: tuple, kwargs: dict) -> list:
        """Compile every config the tuner is about to benchmark (measured) or could pick
        (first-config: for the IR evidence); a config left cold is named. Returns the configs
        left after the tuner's own pruning, in its order."""
        tuner.nargs = dict(zip(tuner.arg_names, args))       # prune_configs reads it, as run does
        configs = tuner.prune_configs(kwargs)
        # looked up at call time: the worker's phase clock wraps `warm` as tuning, `compile_every` as compile
        compile_all = warmup.warm if self.policy == "measured" else warmup.compile_every
        done = compile_all(tuner, configs, args, kwargs, self.workers)
        cold = tuple(name for name, _ in done.cold)
        self.warmups[ident] = WarmupEntry(kernel=ident[1], key=ident[2], configs=done.configs,
                                          warmed=done.configs - len(cold), cold=cold)
        if cold:
            why = "; ".join(f"{name}: {reason}" for name, reason in done.cold)
            fate = ("compiled inline by the benchmark" if self.policy == "measured"
                    else "not compiled, absent from this cell's IR evidence (the first config is compiled by its call)")
            self.ctx.log.line(f"{warmup.PARTIAL_LINE} kernel={ident[1]} key={ident[2]} cold={len(cold)} "
                              f"of={done.configs}: {fate} ({why})")
        return configs

    def _patch(self, cls) -> None:
        if cls in self.patched or "run" not in cls.__dict__:
            return
        original = cls.__dict__["run"]
        plugin = self

        def run(tuner, *args, **kwargs):
            return plugin.tuned_run(original, tuner, args, kwargs)

        self.patched[cls] = original
        cls.run = run

    def _patch_tree(self, cls) -> None:
        self._patch(cls)
        for sub in cls.__subclasses__():
            self._patch_tree(sub)

    # -- pytest hooks ------------------------------------------------------------------

    def pytest_configure(self, config):
        if self.mode == "replay":
            path = self.ctx.plan.replay_file
            if path is None or not Path(path).is_file():
                raise pytest.UsageError(f"autotune replay: recording {path!r} (task {self.source}) does not exist")
            # a correctness recording is absent where the recording cell ran no correctness
            # session: its keys then fall back, each announced
            for found in reversed(recording_files(Path(path), self.session)):
                if found.is_file():
                    recorded = AutotuneFile.model_validate(read_json(found))
                    self.replayed = recorded.policy
                    self.recording.update({(e.tuner, e.kernel, e.key): e.config
                                           for e in recorded.entries + recorded.fallbacks})
            self.ctx.log.line(f"autotune ({self.session}): replaying {len(self.recording)} entries from {self.source}")
        self._patch_tree(Autotuner)
        plugin = self
        # Tuner classes defined after this point (FlagGems imported by a test) are wrapped as they appear.
        if "__init_subclass__" not in Autotuner.__dict__:
            Autotuner.__init_subclass__ = classmethod(lambda cls, **kw: plugin._patch(cls))
            self.added_init_subclass = True
        self.original_bench = Autotuner.__dict__["_bench"]
        original_bench = self.original_bench

        def _bench(tuner, *args, **kwargs):
            plugin.tuning_runs += 1
            return original_bench(tuner, *args, **kwargs)

        Autotuner._bench = _bench

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        record = AutotuneFile(mode=self.mode, policy=self.policy, source=self.source,
                              entries=tuple(self.entries[i] for i in sorted(self.entries)),
                              fallbacks=tuple(self.fallbacks[i] for i in sorted(self.fallbacks)),
                              tuning_runs=self.tuning_runs, session=self.session,
                              warmup=tuple(self.warmups[i] for i in sorted(self.warmups)), replayed=self.replayed)
        write_json_new(Path(self.ctx.cell_dir) / self.file, record.model_dump(mode="json"))
        cold = sum(len(w.cold) for w in self.warmups.values())
        self.ctx.log.line(f"autotune ({self.session}): {self.mode} ({self.policy}): {len(self.entries)} entries, "
                          f"{len(self.fallbacks)} fallbacks, {self.tuning_runs} tuning runs, "
                          f"{sum(w.warmed for w in self.warmups.values())} configs warmed, {cold} cold, "
                          f"on {self.workers} compile thread(s)")

    def pytest_unconfigure(self, config):
        for cls, original in self.patched.items():
            cls.run = original
        self.patched.clear()
        if self.original_bench is not None:
            Autotuner._bench = self.original_bench
            self.original_bench = None
        if self.added_init_subclass:
            del Autotuner.__init_subclass__
            self.added_init_subclass = False


def make(ctx, session: str = "benchmark") -> AutotunePlugin:
    return AutotunePlugin(ctx, session)
