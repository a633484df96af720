"""Every exit code of `campaign.contract.errors.EXIT_CODES`, each built for real: a manifest
prepared and run on the CPU compile-only backend, a root built as a run lays it out, a
sealed root tampered with, a run interrupted by SIGINT."""
from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import rootbuilder as rb
import runroots
from conftest import PROJECT_ROOT, run_cli

from campaign import cli
from campaign.backends.cuda import CudaBackend
from campaign.contract.errors import EXIT_CALIBER, EXIT_CODES, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_PREFLIGHT, EXIT_REFUSED, EXIT_VERIFY
from campaign.flows import session

SEALED_COMMANDS = (("verify",), ("attest",), ("reaccount", "--floor", "1"), ("compare", "{root}", "{root}"))


def _prepare(tmp_path: Path, workloads: list[str], target: str = "cuda:90") -> Path:
    path = runroots.manifest(tmp_path, workloads, per_process=1)
    path.write_text(path.read_text(encoding="utf-8").replace('"cuda:90"', f'"{target}"'), encoding="utf-8")
    done = run_cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


@pytest.fixture
def sealed(sealed_add: Path) -> Path:
    """One demo workload run and sealed on the CPU compile-only backend (exit 0): the session's
    (`conftest.sealed_add`), read here, never written."""
    out, err = runroots.sealed_add_output(sealed_add)
    assert _last_line(out).startswith(f"sealed {sealed_add}: ") and "RUN_FAILED" not in err
    return sealed_add


def ok(tmp_path: Path, sealed: Path) -> None:
    """A compile-only root, sealed: `report --plot` prints the report and says why there is no plot."""
    plot = tmp_path / "forest.png"
    done = run_cli("report", sealed, "--plot", plot)
    assert done.returncode == EXIT_OK, done.stderr
    assert "| add | X |" in done.stdout and not plot.exists()
    assert (f"note: no plot written to {plot}: no workload has timed rows to plot (a compile-only backend times "
            "nothing)") in done.stderr


def cells_failed(tmp_path: Path, sealed: Path) -> None:
    """Every cell of a workload fails (its benchmark asks for CUDA): sealed, exit 1, the last line says so."""
    root = _prepare(tmp_path, [runroots.fault("cuda", "test_bench_no_cuda")])
    done = runroots.run(root)
    assert done.returncode == EXIT_REFUSED, done.stderr
    assert (root / "receipt.json").is_file()
    assert _last_line(done.stderr).startswith("RUN_FAILED check=cells: 1 of 1 workload(s) had no cell that ran (cuda; "
                                              "first cuda/r1/baseline: rc 1 tests_failed)")
    assert f"`campaign report {root}` says why" in _last_line(done.stderr)


def unsealed(tmp_path: Path, sealed: Path) -> None:
    """Every command that needs a sealed root refuses an unsealed one with one exit code and one message."""
    root = _prepare(tmp_path, [runroots.demo("add")])
    for words in SEALED_COMMANDS:
        argv = [word.format(root=root) for word in words] + ([] if "{root}" in words else [str(root)])
        done = run_cli(*argv)
        assert done.returncode == EXIT_INPUT, (argv, done.stderr)
        assert done.stderr.rstrip().endswith(f"check=sealed: {root}: no receipt.json: not a sealed root "
                                             "(`campaign run` seals a root when its matrix is done)"), (argv, done.stderr)


def preflight_everywhere(tmp_path: Path, sealed: Path) -> None:
    """No installed Triton compiles the target: every cell fails preflight; sealed, exit 3, and the report
    names why there is no caliber instead of refusing on it."""
    root = _prepare(tmp_path, [runroots.demo("add")], target="musa:31")
    done = runroots.run(root)
    assert done.returncode == EXIT_PREFLIGHT, done.stderr
    assert (root / "receipt.json").is_file()
    assert _last_line(done.stderr).startswith("RUN_FAILED check=preflight: every cell failed preflight (2 cells; "
                                              "check device, replay_file; first add/r1/baseline: check=device)")
    shown = run_cli("report", root)
    assert shown.returncode == EXIT_OK, shown.stderr
    assert "missing vs missing" not in shown.stderr
    assert ("warning [caliber] no caliber to compare: every cell failed preflight (2 cells; each cell's run.log says "
            "why)") in shown.stderr
    assert "- `warning [caliber] no caliber to compare: every cell failed preflight" in shown.stdout
    assert "preflight failed in add/r1/baseline, add/r1/candidate check=device" in shown.stdout


def caliber_differs(tmp_path: Path, sealed: Path) -> None:
    root = rb.build(tmp_path, [rb.mm()], rb.Options(identity={"matmul/r2/candidate": {"bench_level": "comprehensive"}}))
    done = run_cli("report", root)
    assert done.returncode == EXIT_CALIBER, done.stderr
    assert "!!! [caliber] bench_level: core vs comprehensive" in done.stderr


def does_not_verify(tmp_path: Path, sealed: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(sealed, root)
    log = root / "cells" / "add" / "r1" / "baseline" / "run.log"
    log.chmod(log.stat().st_mode | stat.S_IWUSR)
    log.write_text("edited after the seal\n", encoding="utf-8")
    done = run_cli("verify", root)
    assert done.returncode == EXIT_VERIFY, done.stderr
    assert "VERIFY_FAILED changed: cells/add/r1/baseline/run.log" in done.stderr


def interrupted(tmp_path: Path, sealed: Path) -> None:
    root = _prepare(tmp_path, [runroots.fault("slow", "test_bench_wait")])
    proc = runroots.start_run(root)
    try:
        waiting = root / "cells" / "slow" / "r1" / "candidate" / "task.json"
        deadline = time.monotonic() + 120
        while not waiting.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert f"`campaign run {root}` re-runs the interrupted cell" in err


CASES = {EXIT_OK: ok, EXIT_REFUSED: cells_failed, EXIT_INPUT: unsealed, EXIT_PREFLIGHT: preflight_everywhere,
         EXIT_CALIBER: caliber_differs, EXIT_VERIFY: does_not_verify, EXIT_INTERRUPTED: interrupted}


def test_every_exit_code_has_a_case():
    assert sorted(CASES) == sorted(EXIT_CODES)


@pytest.mark.parametrize("code", sorted(EXIT_CODES))
def test_exit_code(code: int, tmp_path: Path, sealed: Path):
    CASES[code](tmp_path, sealed)


def test_an_unexpected_exception_prints_one_line_and_writes_a_crash_log_beside_the_root(tmp_path, monkeypatch,
                                                                                       capsys):
    """A driver that fails while the devices are enumerated (device discovery replaced): one line, a log."""
    root = _prepare(tmp_path, [runroots.demo("add")])

    def broken() -> list:
        raise RuntimeError("CUDA driver initialization failed\nsecond line of the driver's message")

    monkeypatch.setattr(session, "get_backend", lambda name: CudaBackend(discover=broken))
    code = cli.main(["run", str(root), "--grace", "1", "--scratch-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == EXIT_REFUSED
    assert "Traceback" not in err
    line = _last_line(err)
    assert line.startswith("campaign: unexpected error: RuntimeError: CUDA driver initialization failed; the "
                           "traceback is in "), line
    log = Path(line.split("the traceback is in ")[1].split(" (include it")[0])
    assert log.parent == root.parent and log.name.startswith(f"{root.name}.crash-")
    text = log.read_text(encoding="utf-8")
    assert f"argv: campaign run {root}" in text and "Traceback (most recent call last)" in text
    assert "second line of the driver's message" in text


def test_a_crash_without_a_root_writes_its_log_in_the_temp_dir(tmp_path):
    code = ("import sys; from campaign import crash\n"
            "try:\n    raise ValueError('broken on purpose')\n"
            "except ValueError as exc:\n    crash.report(exc, ['validate'], None)\n")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    line = done.stderr.strip()
    assert line.startswith("campaign: unexpected error: ValueError: broken on purpose; the traceback is in "
                           f"{tmp_path}/campaign-crash-"), line
    assert len(done.stderr.strip().splitlines()) == 1
    assert "ValueError: broken on purpose" in next(tmp_path.glob("campaign-crash-*.log")).read_text(encoding="utf-8")


def test_an_unfinished_root_reports_unrun_workloads_as_not_run_with_the_reason(tmp_path):
    root = _prepare(tmp_path, [runroots.demo("add")])
    done = run_cli("report", root)
    assert done.returncode == EXIT_OK, done.stderr
    assert "NO_ROWS" not in done.stdout and "not run (None)" not in done.stdout
    assert "| add | X | MISSING |" in done.stdout
    assert ("not run: add/r1/baseline, add/r1/candidate did not finish (never started; `campaign run` resumes an "
            "unsealed root)") in done.stdout
    assert "baseline not run (the cell did not finish); candidate not run (the cell did not finish)" in done.stdout

