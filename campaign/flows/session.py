"""One session over a prepared root: lock -> checks -> runner -> judge -> seal.

`execute` is what `campaign run` runs, and `campaign screen` with the screen's
table written before the seal. Refusals name their check (``RUN_REFUSED
check=<name>: ...``, exit 1), in this order: sealed, lock, project_root, harness,
versions, device, then the journal (exit 5: `campaign.sealing.verification.journal_on_resume`). A failed canary stops the campaign (``RUN_FAILED check=canary``,
exit 1, the root stays unsealed: its status rows say why). SIGINT/SIGTERM end
the running cell's process group, record it as ``interrupted`` and exit 130; the
hint printed says how to complete it. A full disk or an unwritable path stops the
run with ``RUN_FAILED check=disk|write`` (`campaign.contract.faults`, exit 1),
finished cells kept. A completed matrix is judged (`judge`: the classifier, here
and nowhere else) and sealed with those verdicts (`campaign.sealing.receipt`); it
exits 0 when some cells failed (those are rows, and the verdicts say what they
mean), but 3 when every cell failed preflight and 1 when a workload had no cell
that ran (`campaign.judging.runhealth`: sealed all the same, the last line says why; a
screen's table says it per workload instead).
A seal stopped by a crash (run.lock left beside receipt.json) is completed here again, under the lock it takes over (`receipt.complete`).
A manifest naming several cards runs one runner per card (`campaign.flows.cardrun`);
a card failing its check or dying stops the root unsealed with ``RUN_FAILED check=card``
(exit 3), its unfinished tasks marked for `campaign run --devices` to resume elsewhere.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.metadata
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Optional

from campaign.backends import get_backend
from campaign.backends.plan import plugin_plan
from campaign.contract import cores, faults
from campaign.contract.artifacts import PREPARE_FILE
from campaign.contract.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_PREFLIGHT, RUN_FAILED, RUN_REFUSED, CampaignError, InputError, Refused
from campaign.contract.manifest import Manifest, Sources
from campaign.contract.rootrecords import Prepare
from campaign.contract.runroot import RunRoot
from campaign.flows import cardrun
from campaign.flows.roots import prepared_roots
from campaign.judging import runhealth
from campaign.judging.classify import classify_root
from campaign.running import batching, bytecode, rayexec, runchecks, workerlaunch
from campaign.running.cellenv import pinned_env
from campaign.running.lock import RunLock
from campaign.running.progress import make_progress
from campaign.running.runner import CANARY_FAILED, COMPLETED, Runner, RunSetup
from campaign.running.telemetry import INTERVAL_S, Sampler, make_source, visible_devices
from campaign.sealing import receipt, verification

PREFIX = RUN_REFUSED


@dataclass(frozen=True)
class Execution:
    """How cells are executed (`campaign run`'s and `campaign screen`'s options)."""

    scratch_dir: Optional[Path] = None   # where per-cell caches are made, outside the root
    telemetry_interval: float = INTERVAL_S
    grace_s: float = 10.0
    emit_manifest: Optional[Path] = None  # a screen's --emit-manifest, repeated in its resume hint
    devices: Optional[tuple[int, ...]] = None   # --devices: the manifest's cards narrowed (`campaign.flows.cardrun`)
    weights_from: Optional[Path] = None         # --weights-from: a sealed root whose seconds weigh the partition
    ray: Optional[str] = None             # `campaign run|screen --ray`: a Ray cluster's address or "auto"
    sign_key: Any = None                  # `campaign run --sign`: an ed25519 private key, used as the seal ends
    resumed_as: tuple[Path, ...] = ()     # a screen set's shard roots: a shard's resume command names them all


def find_root(root: Optional[Path], runs_dir: Path) -> RunRoot:
    """The root `campaign run` runs: the one named, or the newest prepared, unsealed one."""
    if root is not None:
        found = RunRoot(root.resolve())
        mode = found.mode
        if mode is None:
            raise Refused(PREFIX, "prepared", f"{found}: no {PREPARE_FILE}; run `campaign prepare` first")
        if mode != "campaign" and not receipt.seal_interrupted(found):   # any root's seal is finished here
            raise Refused(PREFIX, "mode", f"{found} was prepared by `campaign {mode}`, which runs and seals its own "
                          f"root (its table is written before the seal); `campaign {mode} --resume {found}` "
                          "completes it")
        return found
    roots = prepared_roots(runs_dir)
    if not roots:
        raise Refused(PREFIX, "prepared", f"no prepared, unsealed root under {runs_dir}/: name the root "
                      "(`campaign prepare` prints it) or the folder it was prepared in (--runs-dir DIR)")
    return RunRoot(roots[0].resolve())


def installed_versions(sources: Sources) -> dict[str, Optional[str]]:
    """Installed version of each pinned package, read from metadata (nothing is imported)."""
    found: dict[str, Optional[str]] = {}
    for package, names in runchecks.distribution_names(sources).items():
        found[package] = None
        for name in names:
            try:
                found[package] = importlib.metadata.version(name)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    return found


def check(root: RunRoot, prepare: Prepare, manifest: Manifest, backend) -> None:
    """Every refusal taken under the lock; the first failing check is raised."""
    if root.sealed:  # sealed between the first look and the lock
        raise Refused(PREFIX, "sealed", f"{root} is sealed: a sealed root is never run again")
    different = runchecks.prepared_code_problems(prepare)
    if different is not None:
        name, detail = different
        raise Refused(PREFIX, name, detail + ("; prepare a new root (a root measures the code it was prepared with)"
                                              if name == "harness" else ""))
    versions = runchecks.version_problems(manifest.sources, installed_versions(manifest.sources))
    if versions:
        raise Refused(PREFIX, "versions", "; ".join(versions))
    if manifest.device.cards > 1:
        return   # each card is checked on its own (`campaign.planning.cardplan.select`): one failing is marked
    devices = backend.enumerate_devices() if backend.capabilities.executes else []
    problems = runchecks.device_problems(manifest.device, devices)
    if problems:
        raise Refused(PREFIX, "device", "; ".join(problems))


def judge(root: RunRoot) -> receipt.Judgement:
    """The verdicts the seal records. A changed harness is handed to the classifier: no G or R
    stands on it. A classifier that fails is recorded as the reason for null verdicts, and the
    evidence is still sealed. The root is read as it is (its manifest and matrix parsed once)."""
    drift = tuple(receipt.harness_drift(root))
    try:
        return receipt.Judgement(classify_root(root, harness_drift=drift), None, drift)
    except Exception as exc:   # the seal names the failure; the evidence is still sealed
        return receipt.Judgement(None, f"campaign.judging.classify.classify_root failed: {type(exc).__name__}: {exc}",
                                 drift)


def seal_root(root: RunRoot | Path, release: Callable[[], None] = lambda: None,
              now: Optional[datetime] = None) -> dict[str, Any]:
    """Judge a finished root and seal it with those verdicts; refusals that need no verdicts first."""
    root = RunRoot.of(root)
    receipt.require_sealable(root)
    return receipt.seal(root, judge(root), release=release, now=now)


def _sampler(root: RunRoot, backend, pinned: dict, interval: float) -> Sampler:
    variable = backend.visibility_variable
    value = pinned.get(variable, os.environ.get(variable)) if variable else None
    devices = visible_devices(value)
    return Sampler(root, lambda: make_source(backend.capabilities.telemetry, devices,
                                             not backend.capabilities.executes), interval)


def _resume_hint(root: RunRoot, mode: str, execution: Execution) -> str:
    if mode == "campaign":
        return f"{resume_command(root, mode, execution)} re-runs the interrupted cell and completes the campaign"
    what = "this shard and screens the shards after it" if execution.resumed_as else f"the {mode}"
    return (f"{resume_command(root, mode, execution)} re-runs the interrupted cell and completes {what}"
            + ("" if execution.emit_manifest else " (add --emit-manifest FILE there if a manifest should be emitted)"))


def execute(root: RunRoot | Path, execution: Execution, before_seal: Callable[[RunRoot], None] = lambda root: None) -> int:  # noqa: C901 (the run's phases in order (lock, checks, runner, judge, seal), each with its named exit)
    """Run a prepared root's matrix and seal it; ``before_seal(root)`` writes what the seal must hash."""
    root = RunRoot.of(root)
    prepare, matrix, manifest = root.prepare, root.matrix, root.manifest
    backend = get_backend(matrix.backend)
    interrupted = receipt.seal_interrupted(root)
    if root.sealed and not interrupted:
        raise Refused(PREFIX, "sealed", f"{root} is sealed: a sealed root is never run again")
    # The lock first: with another run active, nothing else about this root is news.
    lock = RunLock(root, report=lambda text: print(text, file=sys.stderr), grace_s=execution.grace_s)
    try:
        lock.acquire()
    except OSError as exc:   # a read-only or full root: named, as any write of the run
        raise faults.write_failed(exc, f"{resume_command(root, prepare.mode, execution)} resumes") from exc
    sealed = False
    try:
        if interrupted and root.sealed:   # the stale lock taken over was the seal's
            finished = receipt.complete(root, release=lock.release)
            if finished is not None:
                sealed = True
                print(f"sealed {root}: completed an interrupted seal, {len(finished['files'])} files in receipt.json")
                _sign(root, execution.sign_key)
                return EXIT_OK
            print(f"RUN_SEAL an unfinished receipt.json of an interrupted seal was removed; sealing {root} again",
                  file=sys.stderr)
        check(root, prepare, manifest, backend)
        for line in verification.journal_on_resume(root, PREFIX):   # before the runner reads the rows it holds
            print(f"RUN_REPAIR {line}", file=sys.stderr)
        cards = manifest.device.cards > 1
        if not cards and (execution.devices is not None or execution.weights_from is not None):
            raise InputError(f"--devices/--weights-from: {root}'s manifest names one card "
                             "(device count, indices or uuids name several)")
        pinned = pinned_env(manifest)
        scratch = Path(tempfile.mkdtemp(prefix=f"campaign-{matrix.campaign}-", dir=execution.scratch_dir))
        # installed packages' bytecode seeded before the first worker, kept after the last; a Ray head
        # starts no worker: each node does it with its own store (`campaign.running.raynode`)
        reuse = (contextlib.nullcontext() if execution.ray else
                 bytecode.reused(scratch / workerlaunch.PYCACHE, Path(prepare.project_root), prepare.harness))
        sampler = _sampler(root, backend, pinned, execution.telemetry_interval)
        # several cards: one sampler each (`campaign.flows.cardrun`); on Ray each task samples its own card
        if not cards and not execution.ray and not sampler.start():
            print(f"{sampler.reason} (recorded in telemetry.err; the campaign goes on)", file=sys.stderr)
        setup = RunSetup(root=root, project_root=Path(prepare.project_root), matrix=matrix, manifest=manifest,
                         harness_digest=prepare.harness_digest, plugins=plugin_plan(backend),
                         harness_drift=functools.partial(runchecks.harness_drift, prepare),
                         pinned_env=pinned, parent_env=dict(os.environ), scratch=scratch,
                         python=sys.executable, grace_s=execution.grace_s, lock=lock,
                         visibility_variable=backend.visibility_variable)
        if any(not task.timed for task in matrix.tasks) and not execution.ray:   # a Ray task holds one workload
            lanes, why = batching.lanes(matrix.ir_pass_lanes, cores.usable(),
                                        manifest.device.cards, matrix.tuner_cache)
            setup = dataclasses.replace(setup, lanes=lanes, lanes_why=why)
        progress = make_progress(sys.stdout)   # read now: a caller may have redirected it
        runner = (rayexec.RayExecutor(setup, progress, execution.ray, execution.telemetry_interval)
                  if execution.ray else cardrun.LocalCards() if cards else Runner(setup, progress, sampler))
        previous = {sig: signal.signal(sig, lambda num, _frame: runner.interrupt(signal.Signals(num).name))
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            with reuse:
                outcome = (cardrun.settle(cardrun.run(setup, backend, execution.devices, execution.weights_from,
                                                      execution.telemetry_interval, runner), setup)
                           if cards and not execution.ray else runner.run())
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            progress.close()
            sampler.stop()
            shutil.rmtree(scratch, ignore_errors=True)
        if outcome.state == CANARY_FAILED:
            raise CampaignError(f"{RUN_FAILED} check=canary: {outcome.detail}; the campaign stopped before the "
                                "rest was measured (the root stays unsealed; fix the cause and prepare anew)")
        if outcome.state == cardrun.CARD_FAILED:
            raise CampaignError(f"{RUN_FAILED} check=card: {outcome.detail} (the root stays unsealed)", EXIT_PREFLIGHT)
        if outcome.state != COMPLETED:
            hint = _resume_hint(root, prepare.mode, execution)
            print(f"RUN_INTERRUPTED: {outcome.detail}; {hint}", file=sys.stderr)
            return EXIT_INTERRUPTED
        before_seal(root)
        sealed_receipt = seal_root(root, release=lock.release)
        sealed = True
    except OSError as exc:   # a full disk, an unwritable path: named, never a traceback
        raise faults.write_failed(exc, f"{resume_command(root, prepare.mode, execution)} resumes") from exc
    finally:
        if not sealed and not receipt.seal_interrupted(root):   # a seal left unfinished keeps its lock
            lock.release()
    _sign(root, execution.sign_key)
    return _sealed(root, prepare, sealed_receipt)


def _sign(root: RunRoot, key) -> None:
    """`campaign run --sign`: the statement of the root as sealed, signed beside it."""
    if key is not None:
        from campaign.sealing import signing  # the signing library, only when asked for
        print(f"signed {root}: statement in {signing.sign_root(root, key)} (keyid {signing.keyid(key.public_key())})")


def resume_command(root: RunRoot, mode: str, execution: Execution) -> str:
    """The command that goes on from where ``root`` stopped: a shard of a screen set resumes as the whole
    set (one shard alone would seal and emit only its own workloads), with the screen's --emit-manifest."""
    if mode == "campaign":
        return f"`campaign run {root}`"
    roots = " ".join(str(path) for path in execution.resumed_as) or str(root)
    again = f" --emit-manifest {execution.emit_manifest}" if execution.emit_manifest is not None else ""
    return f"`campaign {mode} --resume {roots}{again}`"


def _sealed(root: RunRoot, prepare: Prepare, sealed_receipt: dict[str, Any]) -> int:
    """What the seal holds, and the run's exit: a workload none of whose cells ran is not a success."""
    print(f"sealed {root}: {len(sealed_receipt['files'])} files in receipt.json")
    if sealed_receipt["verdicts"] is None:
        print(f"note: verdicts are null: {sealed_receipt['verdicts_note']}")
    if prepare.mode != "campaign":
        return EXIT_OK   # a screen's table says it per workload (NO_ROWS), after the seal
    verdict = runhealth.health(root.latest(), root)
    if verdict.line:
        print(verdict.line, file=sys.stderr)
    return verdict.exit_code
