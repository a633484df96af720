"""`campaign run [ROOT]`: execute a prepared root's matrix serially, then seal it.

Without ROOT, the newest prepared, unsealed campaign root under --runs-dir.
Refusals name their check (``RUN_REFUSED check=<name>: ...``, exit 1), in this
order: prepared, mode (a screen root is run only by `campaign screen`, which
also resumes it), sealed,
lock, project_root, harness, versions, device. `execute` is the run-and-seal flow
itself, shared with `campaign screen`. A failed canary stops the
campaign (``RUN_FAILED check=canary``, exit 1, the root stays unsealed: its
status rows say why). SIGINT/SIGTERM end the running cell's process group,
record it as ``interrupted`` and exit 130; `run` again re-runs that cell and
completes the campaign. A full disk or an unwritable path stops the run with
``RUN_FAILED check=disk|write`` (`campaign.running.faults`, exit 1), finished cells kept.
A completed matrix is sealed (`campaign.sealing.receipt`) and exits 0 even when some
cells failed: those are rows, and the verdicts say what
they mean. A seal stopped by a crash (run.lock left beside receipt.json) is
completed by `run` again, under the lock it takes over (`receipt.complete`).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Callable

from campaign.contract import canonical, yamlio
from campaign.running import faults, runchecks
from campaign.planning import harness
from campaign.sealing import receipt
from campaign.contract.artifacts import MANIFEST_FILE, MATRIX_FILE, PREPARE_FILE, Matrix
from campaign.contract.errors import EXIT_INTERRUPTED, EXIT_OK, CampaignError, Refused
from campaign.running.lock import RunLock
from campaign.contract.manifest import Manifest
from campaign.running.progress import make_progress
from campaign.running.runner import CANARY_FAILED, COMPLETED, Runner, RunSetup
from campaign.running.telemetry import INTERVAL_S, Sampler, make_source, visible_devices

PREFIX = "RUN_REFUSED"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", nargs="?", type=Path, help="the run root (default: newest prepared, unsealed)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where roots are looked for (default: runs/)")
    add_execution_arguments(parser)


def add_execution_arguments(parser: argparse.ArgumentParser) -> None:
    """How cells are executed; shared with `campaign screen`."""
    parser.add_argument("--scratch-dir", type=Path, default=None,
                        help="where per-cell caches are made, outside the root (default: the system temp dir)")
    parser.add_argument("--telemetry-interval", type=float, default=INTERVAL_S,
                        help=f"seconds between samples (default {INTERVAL_S}: a sample inside every timing window)")
    parser.add_argument("--grace", type=float, default=10.0,
                        help="seconds between SIGTERM and SIGKILL when a cell is ended (default 10)")


def find_root(args: argparse.Namespace) -> Path:
    if args.root is not None:
        root = args.root.resolve()
        mode = runchecks.root_mode(root)
        if mode is None:
            raise Refused(PREFIX, "prepared", f"{root}: no {PREPARE_FILE}; run `campaign prepare` first")
        if mode != "campaign" and not receipt.seal_interrupted(root):   # any root's seal is finished here
            raise Refused(PREFIX, "mode", f"{root} was prepared by `campaign {mode}`, which runs and seals its own "
                          f"root (its table is written before the seal); `campaign {mode} --resume {root}` "
                          "completes it")
        return root
    roots = runchecks.prepared_roots(args.runs_dir)
    if not roots:
        raise Refused(PREFIX, "prepared", f"no prepared, unsealed root under {args.runs_dir}/")
    return roots[0].resolve()


def check(root: Path, prepare: dict, manifest: Manifest, backend) -> None:
    """Every refusal taken under the lock; the first failing check is raised."""
    if receipt.is_sealed(root):  # sealed between the first look and the lock
        raise Refused(PREFIX, "sealed", f"{root} is sealed: a sealed root is never run again")
    recorded_root = Path(prepare["project_root"])
    if recorded_root.resolve() != harness.PROJECT_ROOT.resolve():
        raise Refused(PREFIX, "project_root", f"prepared from {recorded_root}, this code is at {harness.PROJECT_ROOT}")
    drift = runchecks.harness_problems(prepare["harness"], harness.harness_digests(harness.PROJECT_ROOT,
                                                                                    harness.prepared_targets(prepare)))
    if drift:
        raise Refused(PREFIX, "harness", "code changed since prepare: " + ", ".join(drift)
                      + "; prepare a new root (a root measures the code it was prepared with)")
    versions = runchecks.version_problems(manifest.sources, runchecks.installed_versions(manifest.sources))
    if versions:
        raise Refused(PREFIX, "versions", "; ".join(versions))
    devices = [] if manifest.device.backend == "cpu" else backend.enumerate_devices()
    problems = runchecks.device_problems(manifest.device, devices)
    if problems:
        raise Refused(PREFIX, "device", "; ".join(problems))


def _sampler(root: Path, backend, pinned: dict, interval: float) -> Sampler:
    variable = backend.visibility_variable
    value = pinned.get(variable, os.environ.get(variable)) if variable else None
    devices = visible_devices(value)
    return Sampler(root, lambda: make_source(backend.capabilities.telemetry, devices), interval)


def main(args: argparse.Namespace) -> int:
    return execute(find_root(args), args)


def execute(root: Path, args: argparse.Namespace,
            before_seal: Callable[[Path], None] = lambda root: None) -> int:
    """Run a prepared root's matrix and seal it; ``before_seal(root)`` writes what the seal must hash.

    ``args`` carries the execution arguments (`add_execution_arguments`).
    """
    from campaign.backends import get_backend
    from campaign.backends.plan import plugin_plan
    from campaign.running.cellenv import pinned_env

    prepare = canonical.read_json(root / PREPARE_FILE)
    matrix = Matrix.model_validate(canonical.read_json(root / MATRIX_FILE))
    manifest = yamlio.validate(Manifest, root / MANIFEST_FILE)
    backend = get_backend(matrix.backend)
    interrupted = receipt.seal_interrupted(root)
    if receipt.is_sealed(root) and not interrupted:
        raise Refused(PREFIX, "sealed", f"{root} is sealed: a sealed root is never run again")
    # The lock first: with another run active, nothing else about this root is news.
    lock = RunLock(root, report=lambda text: print(text, file=sys.stderr), grace_s=args.grace)
    lock.acquire()
    sealed = False
    try:
        if interrupted and receipt.is_sealed(root):   # the stale lock taken over was the seal's
            finished = receipt.complete(root, release=lock.release)
            if finished is not None:
                sealed = True
                print(f"sealed {root}: completed an interrupted seal, {len(finished['files'])} files in receipt.json")
                return EXIT_OK
            print(f"RUN_SEAL an unfinished receipt.json of an interrupted seal was removed; sealing {root} again",
                  file=sys.stderr)
        check(root, prepare, manifest, backend)
        pinned = pinned_env(manifest)
        scratch = Path(tempfile.mkdtemp(prefix=f"campaign-{matrix.campaign}-", dir=args.scratch_dir))
        sampler = _sampler(root, backend, pinned, args.telemetry_interval)
        if not sampler.start():
            print(f"{sampler.reason} (recorded in telemetry.err; the campaign goes on)", file=sys.stderr)
        setup = RunSetup(root=root, project_root=Path(prepare["project_root"]), matrix=matrix, manifest=manifest,
                         harness_digest=prepare["harness_digest"], plugins=plugin_plan(backend),
                         pinned_env=pinned, parent_env=dict(os.environ), scratch=scratch,
                         python=sys.executable, grace_s=args.grace, lock=lock)
        progress = make_progress()
        runner = Runner(setup, progress, sampler)
        previous = {sig: signal.signal(sig, lambda num, _frame: runner.interrupt(signal.Signals(num).name))
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            outcome = runner.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            progress.close()
            sampler.stop()
            shutil.rmtree(scratch, ignore_errors=True)
        if outcome.state == CANARY_FAILED:
            raise CampaignError(f"RUN_FAILED check=canary: {outcome.detail}; the campaign stopped before the "
                                "rest was measured (the root stays unsealed; fix the cause and prepare anew)")
        if outcome.state != COMPLETED:
            mode = prepare.get("mode", "campaign")
            emit = getattr(args, "emit_manifest", None)
            again = f" --emit-manifest {emit}" if emit is not None else ""
            hint = (f"`campaign run {root}` re-runs the interrupted cell and completes the campaign"
                    if mode == "campaign" else
                    f"`campaign {mode} --resume {root}{again}` re-runs the interrupted cell and completes the {mode}"
                    + ("" if again else " (add --emit-manifest FILE there if a manifest should be emitted)"))
            print(f"RUN_INTERRUPTED: {outcome.detail}; {hint}", file=sys.stderr)
            return EXIT_INTERRUPTED
        before_seal(root)
        sealed_receipt = receipt.seal(root, release=lock.release)
        sealed = True
    except OSError as exc:   # a full disk, an unwritable path: named, never a traceback
        mode = prepare.get("mode", "campaign")
        resume = f"`campaign run {root}`" if mode == "campaign" else f"`campaign {mode} --resume {root}`"
        raise faults.write_failed(exc, f"{resume} resumes") from exc
    finally:
        if not sealed:
            lock.release()
    print(f"sealed {root}: {len(sealed_receipt['files'])} files in receipt.json")
    if sealed_receipt["verdicts"] is None:
        print(f"note: verdicts are null: {sealed_receipt['verdicts_note']}")
    return EXIT_OK
