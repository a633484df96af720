"""run_identity.json: the cell's caliber, read at run time, written once at pytest_configure
(the model: `campaign.contract.rootrecords.RunIdentity`).

Keys (all always present; a value that does not apply is null)::

    schema_version, task_id, backend,
    device_name, device_uuid, device_target, driver, cuda,   the device as this process sees it
    torch, triton, triton_env, flag_gems, python, platform,  versions; triton_env holds the set
                                                             cache-invalidating variables, as Triton
                                                             normalises them for its cache key
    bench_level, shape_mode, tuner_cache,
    tuner_cache_at_start {files, bytes}                      what the tuner cache dir held when this
                                                             process began: empty in an isolated cell,
                                                             warm in a shared one after the first
    tuner_store_at_start {tables, rows}                      the rows FlagGems' tuner store held then
                                                             (`campaign.worker.tunerstore`); null where
                                                             no FlagGems tuner is loaded: emptied by a
                                                             batch before its later workloads, so its
                                                             folder holds files and still reads as fresh
    autotune_mode, autotune_source, autotune_policy,
    autotune_from                                            the pinned source root's receipt digest, or null
    tuning                                                   pinned, or per_side where every side tunes for
                                                             itself (`defaults.tuning`)
    env, pinned_env, harness_digest,
    inherited_env                                            the code-selecting variables this process
                                                             inherited (PYTHONPATH, LD_LIBRARY_PATH, ...):
                                                             not caliber (paths differ per machine), shown
    offline_device                                           the device record an offline cell's FlagGems
                                                             was answered from, or null
    timer {kind, warmup_ms, rep_ms, return_mode, direct_repeat, l2_flush,
           max_noise_pct, min_samples, timeout_s}, direct_repeat   the noise target: null where none

The timer object is what the manifest asks for (the timing plugin owns what was
measured); on a compile-only backend, and in a screen's untimed IR pass, nothing is timed and
``kind`` is "none".

`CALIBER_FIELDS` (defined once, in `campaign.contract.rootrecords`, re-exported here) names the
top-level keys whose values must be equal across the cells of a comparison; this
module writes every one of them. Keys that differ by design are written but are not
caliber: the switch's env and triton_env, the autotune mode and source (round 1's
baseline records, every other cell replays), task id and platform text.
"""
from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Optional

from campaign.contract.artifacts import CODE_PATH_VARIABLES, IDENTITY_FILE, SCHEMA_VERSION
from campaign.contract.canonical import write_json_new
from campaign.contract.platforms import platform as backend_platform
from campaign.contract.rootrecords import CALIBER_FIELDS, RunIdentity
from campaign.contract.timers import L2_FLUSH, UNTIMED
from campaign.plugins import flaggems_offline
from campaign.worker import tunerstore

__all__ = ("CALIBER_FIELDS", "L2_FLUSH", "device_section", "identity", "make", "timer_section")


def timer_section(timer, executes: bool) -> dict:
    if not executes:
        return {"kind": UNTIMED, "warmup_ms": None, "rep_ms": None, "return_mode": None,
                "direct_repeat": None, "l2_flush": None, "max_noise_pct": None, "min_samples": None,
                "timeout_s": None}
    return {"kind": timer.kind, "warmup_ms": timer.warmup_ms, "rep_ms": timer.rep_ms,
            "return_mode": timer.return_mode, "direct_repeat": timer.direct_repeat,
            "l2_flush": L2_FLUSH[timer.kind], "max_noise_pct": timer.max_noise_pct,
            "min_samples": timer.min_samples, "timeout_s": timer.timeout_s}


def _runtime_version(torch, backend: str) -> Optional[str]:
    attribute = backend_platform(backend).runtime_version
    return getattr(torch.version, attribute, None) if attribute else None


def _installed(distribution: str) -> Optional[str]:
    # Package metadata, not an import: importing flag_gems probes the device.
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def device_section(ctx) -> dict:
    """Name, uuid, target and driver of the device this process runs on."""
    declared = ctx.terms.device
    if not ctx.backend.capabilities.executes:
        return {"device_name": declared.name, "device_uuid": declared.uuid, "device_target": declared.target,
                "driver": None}
    # The backend owns enumeration (and its uuid spelling); the device is the one the
    # runtime has current, after the visibility variable pinned it.
    index = ctx.backend.device_interface().current_device()
    device = next((d for d in ctx.backend.enumerate_devices() if d.index == index), None)
    if device is None:
        raise RuntimeError(f"run identity: the {ctx.backend.name} backend enumerates no device {index}")
    return {"device_name": device.name, "device_uuid": device.uuid, "device_target": device.target,
            "driver": device.driver}


def identity(ctx) -> dict:
    import torch
    import triton
    from triton._C.libtriton import get_cache_invalidating_env_vars

    plan, task, terms = ctx.plan, ctx.plan.task, ctx.terms
    executes = ctx.backend.capabilities.executes
    # a screen's IR pass runs each row once, untimed, on any backend: its timer is "none" too
    times = executes and task.timed
    return RunIdentity.model_validate({
        "schema_version": SCHEMA_VERSION,
        "task_id": task.id,
        "backend": terms.device.backend,
        **device_section(ctx),
        "runtime": _runtime_version(torch, terms.device.backend) if executes else None,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "triton_env": dict(sorted(get_cache_invalidating_env_vars().items())),
        "flag_gems": _installed("flag_gems") if task.provider in ("flaggems", "flaggems_upstream") else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "bench_level": terms.bench_level,
        "shape_mode": terms.shape_mode,
        "tuner_cache": plan.tuner_cache,
        "tuner_cache_at_start": _folder_size(Path(plan.tuner_cache_dir)),
        "tuner_store_at_start": tunerstore.at_start(),
        "autotune_mode": task.autotune.mode,
        "autotune_source": task.autotune.source,
        "autotune_policy": task.autotune.policy,
        "autotune_from": terms.autotune_from,
        "tuning": terms.tuning,
        "env": dict(task.env),
        "pinned_env": dict(plan.pinned_env),
        "harness_digest": plan.harness_digest,
        "inherited_env": {name: os.environ[name] for name in CODE_PATH_VARIABLES if name in os.environ},
        "timer": timer_section(terms.timer, times),
        # Also top level: the caliber lists it on its own (a repeat count changes what a
        # direct-timed number is, even where the timer kind is the same).
        "direct_repeat": terms.timer.direct_repeat if times else None,
        "offline_device": flaggems_offline.ACTIVE.answered_from if flaggems_offline.ACTIVE is not None else None,
    }).dump()


def _folder_size(folder: Path) -> dict[str, int]:
    files = [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}


class RunIdentityPlugin:
    def __init__(self, ctx):
        self.ctx = ctx

    def pytest_configure(self, config):
        write_json_new(Path(self.ctx.cell_dir) / IDENTITY_FILE, identity(self.ctx))


def make(ctx) -> RunIdentityPlugin:
    return RunIdentityPlugin(ctx)
