"""Checks run before pytest starts, each named, in order; the first failure stops the cell.

A broken environment must not look like a cell that ran: the earlier harness lost
whole campaigns to cells that died in a conftest ImportError under a second
(``pytest exit 4``), or to a missing directory that surfaced as "unrecognized
arguments: --level". So each check names itself, and a failure prints
``PREFLIGHT_FAILED check=<name>: <detail>`` and exits 78 (`WorkerExit.PREFLIGHT_FAILED`),
outside pytest's own codes. The check functions are pure over gathered facts (`campaign.worker.facts`,
``backend.enumerate_devices``); `run` is the edge that gathers them.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Callable, Mapping, Optional

from campaign.backends.base import Backend, DeviceInfo
from campaign.backends.plan import plugin_plan
from campaign.contract.canonical import read_json
from campaign.contract.cellfiles import AutotuneFile, Preflight
from campaign.contract.devicerule import device_mismatches, version_matches
from campaign.contract.manifest import Device, Pin
from campaign.contract.plans import CellPlan
from campaign.planning import shapes, targets
from campaign.worker import facts

CHECKS = ("interpreter", "targets", "replay_file", "shape_file", "plugin_plan", "device", "versions")
PACKAGES = ("torch", "triton", "flag_gems")
Result = tuple[bool, str]


def needed_modules(provider: str) -> tuple[str, ...]:
    return ("torch", "triton", "flag_gems") if provider in ("flaggems", "flaggems_upstream") else ("torch", "triton")


def check_interpreter(executable: str, errors: Mapping[str, Optional[str]]) -> Result:
    broken = [f"{name}: {error}" for name, error in errors.items() if error is not None]
    if broken:
        return False, f"{executable} cannot import " + "; ".join(broken)
    return True, f"{executable} imports {', '.join(errors)}"


def check_targets(project_root: Path, plan_targets) -> Result:
    wanted = [plan_targets.benchmark, plan_targets.correctness, *(plan_targets.correctness_node_ids or ())]
    tree = plan_targets.checkout or plan_targets.rootdir
    if tree:   # a FlagGems checkout's or an own file's targets are absolute paths inside its tree
        project_root = Path(tree)
        wanted = [t[len(tree) + 1:] if t.startswith(tree + "/") else t for t in wanted]
    problems = [p for p in (targets.problem(project_root, t) for t in wanted) if p is not None]
    if problems:
        return False, "; ".join(problems)
    k = f" -k {plan_targets.correctness_k!r}" if plan_targets.correctness_k else ""
    return True, f"{plan_targets.benchmark}, {plan_targets.correctness}{k}"


def check_replay_file(plan: CellPlan) -> Result:
    if plan.task.autotune.mode != "replay":
        return True, "records (nothing to replay)"
    if plan.replay_file is None:
        return False, "autotune mode is replay but the plan names no replay_file"
    path = Path(plan.replay_file)
    if not path.is_file():
        return False, f"{path}: no such file"
    recording = AutotuneFile.model_validate(read_json(path))
    if recording.mode != "record":
        return False, f"{path}: is a {recording.mode} file, not a recording"
    return True, f"{path}: {len(recording.entries)} recorded configs"


def check_shape_file(project_root: Path, provider: str, level: str, op: str, subset,
                     given: Optional[str] = None) -> Result:
    path = shapes.shape_file(project_root, provider, level, given)
    if not path.is_file():
        return False, f"{path}: no such file"
    available = shapes.load_shapes(path).get(op)
    if not available:
        return False, f"{path}: no shapes for op {op}"
    try:
        chosen = shapes.select(available, subset)
    except ValueError as exc:
        return False, f"{path}: {op}: {exc}"
    return True, f"{path}: {op}: {len(chosen)} of {len(available)} shapes"


def check_plugin_plan(planned: tuple[str, ...], derived: tuple[str, ...], missing: tuple[str, ...]) -> Result:
    if not planned:
        # an empty plan runs pytest with no timing, no IR, no autotune: a table that still looks fine
        return False, "the plan names no plugins"
    if planned != derived:
        return False, f"the plan {list(planned)} is not the backend's derived plan {list(derived)}"
    if missing:
        return False, f"no such module: {', '.join(missing)}"
    return True, ", ".join(name.rsplit(".", 1)[-1] for name in planned)


def check_device(device: Device, devices: list[DeviceInfo], visibility: str) -> Result:
    """The device the cell runs on (the first visible one) is the campaign's device (the manifest's, as matrix.json froze it)."""
    if not devices:
        return False, f"no {device.backend} device visible ({visibility})"
    seen = "; ".join(f"{d.index}: {d.name} {d.uuid or '-'} {d.target}" for d in devices)
    used = devices[0]
    mismatched = device_mismatches(device, used.name, used.uuid, used.target)
    worded = {"name": f"name {used.name!r} != {device.name!r}", "uuid": f"uuid {used.uuid!r} != {device.uuid!r}",
              "target": f"target {used.target} != {device.target}"}
    wrong = [worded[field] for field in ("name", "uuid", "target") if field in mismatched]
    if wrong:
        return False, f"device 0 is not the manifest's device: {', '.join(wrong)} (visible: {seen}; {visibility})"
    return True, f"device 0: {used.name} {used.uuid or '-'} {used.target} driver {used.driver or 'unknown'} ({visibility})"


def check_compile_target(target: str, triton_backend: Optional[str]) -> Result:
    if triton_backend is None:
        return False, f"no installed Triton backend compiles target {target}"
    return True, f"compile-only target {target} via Triton's {triton_backend} backend"


def check_versions(pins: Mapping[str, Optional[Pin]], installed: Mapping[str, facts.Installed]) -> Result:
    notes, wrong = [], []
    for name, pin in pins.items():
        have = installed[name]
        if pin is None or (pin.version is None and pin.commit is None):
            notes.append(f"{name} not pinned (have {have.version or 'none'})")
            continue
        if pin.version is not None:
            if have.version is None:
                wrong.append(f"{name} pinned {pin.version}, not installed")
            elif not version_matches(pin.version, have.version):
                wrong.append(f"{name} pinned {pin.version}, installed {have.version}")
            else:
                notes.append(f"{name} {have.version}")
        if pin.commit is not None:
            if have.commit is None:
                notes.append(f"{name} commit {pin.commit} not checked (the package exposes none)")
            elif not (have.commit.startswith(pin.commit) or pin.commit.startswith(have.commit)):
                wrong.append(f"{name} pinned commit {pin.commit}, installed {have.commit}")
            else:
                notes.append(f"{name} commit {have.commit[:12]}")
    if wrong:
        return False, "; ".join(wrong)
    return True, "; ".join(notes)


def run(plan: CellPlan, backend: Backend, env: Mapping[str, str],
        say: Callable[[str], None]) -> Preflight:
    """Run the checks in order, reporting each through ``say``; stop at the first failure."""
    root = Path(plan.project_root)
    task, terms = plan.task, plan.terms
    visibility = (f"{backend.visibility_variable}={env.get(backend.visibility_variable, '(unset)')}"
                  if backend.visibility_variable else "no visibility variable")

    def device() -> Result:
        if not backend.capabilities.executes:
            return check_compile_target(terms.device.target, facts.triton_backend_for(terms.device.target))
        return check_device(terms.device, backend.enumerate_devices(), visibility)

    steps: dict[str, Callable[[], Result]] = {
        "interpreter": lambda: check_interpreter(sys.executable, facts.import_errors(needed_modules(task.provider))),
        "targets": lambda: check_targets(root, task.targets),
        "replay_file": lambda: check_replay_file(plan),
        "shape_file": lambda: (check_shape_file(root, task.provider, terms.bench_level, task.op, task.shapes,
                                                task.targets.shape_file)
                               if task.provider not in ("pytest", "flaggems_upstream") else
                               (True, f"provider {task.provider}: the test builds its own inputs")),
        "plugin_plan": lambda: check_plugin_plan(plan.plugins, plugin_plan(backend), tuple(
            name for name in plan.plugins if importlib.util.find_spec(name) is None)),
        "device": device,
        "versions": lambda: check_versions(
            {"torch": terms.torch, "triton": terms.triton, "flag_gems": terms.flag_gems},
            {name: facts.installed(name) for name in PACKAGES}),
    }
    done: list[tuple[str, bool, str]] = []
    for name in CHECKS:
        try:
            ok, detail = steps[name]()
        except Exception as exc:    # a check that cannot complete is a failed check, named
            ok, detail = False, " | ".join(f"{type(exc).__name__}: {exc}".splitlines()[:4])
        done.append((name, ok, detail))
        say(f"preflight {name} {'ok' if ok else 'FAILED'}: {detail}")
        if not ok:
            return Preflight(ok=False, interpreter=sys.executable, checks=tuple(done), failed_check=name)
    return Preflight(ok=True, interpreter=sys.executable, checks=tuple(done))
