"""Bounded, typed reading: whatever a root's file or a manifest's path turns out to be, a named error
with its exit code, never a traceback, never a wait.

Each case is one the tester met as a traceback or a hang: a FIFO as run.lock or status.tsv, a receipt
too large, too deep, empty, with a byte-order mark or a 5,000-digit integer (verify, report,
reaccount, attest), forged counts, a shape_file that is a loop, a FIFO or holds a NUL, a target
file that is not UTF-8 or nested past the parser, a NUL in a cell's variable, a path past the OS's
limits, a `data:` file that is a loop of links or under /proc, /sys or /dev, a 200 kB cell value
(exec would refuse it in every cell), `attest --out` on a
loop, an `autotune_from` root that is not there (validate refuses it as prepare does), a workload
whose worker wrote no identity. The CLI runs in-process (`campaign.cli.main`) where a process adds
nothing; as a subprocess, with a timeout, where a hang is the fault.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import rootbuilder as rb
from conftest import PROJECT_ROOT, run_cli
from runroots import HEAD, demo, fault, prepare, start_run

from campaign.cli import main
from campaign.contract import canonical

UNEXPECTED = "unexpected error"
DEEP = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


def _cli(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert UNEXPECTED not in err and "Traceback" not in err, err
    return rc, err


# --- a root's files -------------------------------------------------------------------------------

def test_a_fifo_as_run_lock_is_refused_unopened(tmp_path: Path):
    root = prepare(tmp_path, [fault("add", "test_bench_noop", canary=True)])
    os.mkfifo(root / "run.lock")
    done = run_cli("run", root, "--grace", "1", "--scratch-dir", tmp_path, timeout=60)   # a wait is a failure
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"RUN_REFUSED check=lock: {root / 'run.lock'} exists and cannot be read (a FIFO (never opened))" in done.stderr


def test_a_fifo_as_status_tsv_is_refused_before_a_finished_cell_is_moved(tmp_path: Path):
    root = prepare(tmp_path, [fault("held", "test_bench_wait_release")])
    proc = start_run(root)                                # held's baseline finishes; its candidate waits; interrupted
    try:
        deadline = time.monotonic() + 120
        while not (root / "cells" / "held" / "r1" / "candidate" / "task.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    before = sorted(p.relative_to(root).as_posix() for p in (root / "cells").rglob("*"))
    assert "cells/held/r1/baseline/result.json" in before
    (root / "status.tsv").unlink()
    os.mkfifo(root / "status.tsv")
    done = run_cli("run", root, "--grace", "1", "--scratch-dir", tmp_path, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{root / 'status.tsv'}: a FIFO (never opened): not a status ledger that can be read" in done.stderr
    assert sorted(p.relative_to(root).as_posix() for p in (root / "cells").rglob("*")) == before
    assert not (root / "run.lock").exists() and not (root / "receipt.json").exists()


RECEIPTS = {
    "deep": (DEEP, "nested deeper than 64 levels: not a record"),
    "empty": (b"", "not JSON: Expecting value: line 1 column 1 (char 0)"),
    "bom": (None, "not JSON: Unexpected UTF-8 BOM"),
    "huge_integer": (b'{"schema_version": ' + b"9" * 5000 + b"}", "not JSON: Exceeds the limit (4300 digits)"),
    "list": (b"[]", "not a receipt: a JSON list"),
}


@pytest.fixture(scope="module")
def sealed_root(tmp_path_factory) -> Path:
    return rb.sealed(tmp_path_factory.mktemp("sealed"))


def _with_receipt(tmp_path: Path, sealed: Path, data: bytes) -> Path:
    root = tmp_path / "root"
    subprocess.run(["cp", "-a", str(sealed), str(root)], check=True)
    rb.edit_sealed(root / "receipt.json", "")
    (root / "receipt.json").chmod(0o644)
    (root / "receipt.json").write_bytes(data)
    (root / "receipt.json").chmod(0o444)
    return root


@pytest.mark.parametrize("form", sorted(RECEIPTS))
def test_a_receipt_that_is_no_record_is_named_by_every_reader(tmp_path: Path, sealed_root: Path, capsys, form: str):
    data, named = RECEIPTS[form]
    if data is None:
        data = b"\xef\xbb\xbf" + (sealed_root / "receipt.json").read_bytes()
    root = _with_receipt(tmp_path, sealed_root, data)
    for argv, prefix in ((("verify", root), "VERIFY_FAILED receipt: receipt.json ("),
                         (("report", root), "REPORT_REFUSED check=verify:"),
                         (("reaccount", root, "--floor", "2", "--out", tmp_path / "out"), "REACCOUNT_REFUSED check=verify:"),
                         (("attest", root), "ATTEST_REFUSED check=verify:")):
        rc, err = _cli(capsys, *argv)
        assert rc == 5 and err.startswith(prefix) and named in err, (argv[0], err)


def test_a_receipt_the_size_of_a_disk_is_refused_unread(tmp_path: Path, sealed_root: Path, capsys):
    root = _with_receipt(tmp_path, sealed_root, b"")
    (root / "receipt.json").chmod(0o644)
    os.truncate(root / "receipt.json", 8 << 30)          # sparse: 8 GB that take no disk
    (root / "receipt.json").chmod(0o444)
    rc, err = _cli(capsys, "verify", root)
    assert rc == 5 and f"receipt.json ({8 << 30} bytes, over the cap of {canonical.JSON_CAP} bytes)" in err, err


def test_forged_counts_are_a_schema_difference_not_a_key_error(tmp_path: Path, capsys):
    root = rb.sealed(tmp_path)
    rb.rewrite_receipt(root, lambda data: data["verdicts"]["counts"].pop("X"), redigest=True)
    rc, err = _cli(capsys, "report", root)
    assert rc == 5 and "are not the tally of the workloads' classes" in err, err


def test_one_workload_without_an_identity_is_x_and_the_report_exits_0(tmp_path: Path, capsys):
    from campaign.flows import session
    root = rb.build(tmp_path, [rb.mm(), rb.pointwise()])
    for cell in ("r1/baseline", "r1/candidate"):      # a worker killed before it wrote one, twice
        (root / "cells" / "add" / cell / "run_identity.json").unlink()
    session.seal_root(root)
    rc, _ = _cli(capsys, "report", root, "--format", "json")
    verdicts = canonical.read_json(root / "receipt.json")["verdicts"]
    assert rc == 0
    assert verdicts["workloads"]["add"]["class"] == "X"
    assert "run_identity.json: present vs missing" in verdicts["workloads"]["add"]["reason"]
    assert verdicts["workloads"]["matmul"]["class"] != "X" and verdicts["caliber"]["findings"] == []


def test_attest_out_on_a_loop_or_a_missing_folder_is_refused(tmp_path: Path, sealed_root: Path, capsys):
    (tmp_path / "loop").symlink_to("loop")
    for out, named in ((tmp_path / "loop", "--out cannot be resolved"), (tmp_path / "loop" / "s.json", "cannot be resolved"),
                       (tmp_path / "none" / "s.json", "is not a folder that exists")):
        rc, err = _cli(capsys, "attest", sealed_root, "--out", out)
        assert rc == 2 and err.startswith(f"ATTEST_REFUSED check=out: {out}") and named in err, err


# --- a manifest's strings and paths ---------------------------------------------------------------

def _manifest(tmp_path: Path, defaults: str = "", workload: str = demo("add"), candidate: str = '"1"') -> Path:
    text = HEAD.format(campaign="bounded", rounds=1, extra_sources="", per_process="")
    text = text.replace("  timeout_s: 120\n", "  timeout_s: 120\n" + defaults)
    text = text.replace('candidate: {DISABLE_MMA_V3: "1"}', f"candidate: {{DISABLE_MMA_V3: {candidate}}}")
    path = tmp_path / "m.yaml"
    path.write_text(text + workload, encoding="utf-8")
    return path


def _refused(capsys, path: Path, key: str, named: str) -> None:
    rc, err = _cli(capsys, "validate", path)
    assert rc == 2, err
    assert re.match(rf"(PREPARE_REFUSED check=\w+: )?{re.escape(str(path))}:\d+:\d+: {re.escape(key)}: ", err), err
    assert named in err, err


def test_a_shape_file_that_is_a_loop_a_fifo_or_holds_a_nul_is_refused_located(tmp_path: Path, capsys):
    (tmp_path / "loop").symlink_to("loop")
    os.mkfifo(tmp_path / "fifo")
    for given, named in ((tmp_path / "loop", "symbolic link to loop (a loop)"), (tmp_path / "fifo", "a FIFO (never opened)"),
                         ('"shapes\\0.yaml"', "a NUL byte (\\0) is refused")):
        _refused(capsys, _manifest(tmp_path, f"  shape_file: {given}\n"), "defaults -> shape_file", named)


def test_a_nul_in_a_cell_variable_is_refused_at_validate(tmp_path: Path, capsys):
    _refused(capsys, _manifest(tmp_path, candidate='"1\\0-x"'), "switch -> cells -> candidate -> DISABLE_MMA_V3",
             "a NUL byte (\\0) is refused: a path or a process argument would end there")


@pytest.mark.parametrize("source, named", [
    (b"def test_bench_x():\n    s = '\xff\xfe'\n", "does not parse: (unicode error) 'utf-8' codec can't decode byte 0xff"),
    (b"def test_bench_x():\n    x = " + b"-" * 200_000 + b"1\n", "does not parse: nested too deeply to parse"),
])
def test_a_target_file_not_utf8_or_nested_too_deep_is_refused_located(tmp_path: Path, capsys, source: bytes, named: str):
    (tmp_path / "own.py").write_bytes(source)
    workload = f'  - {{name: add, op: add, provider: pytest, benchmark: "{tmp_path}/own.py::test_bench_x"}}\n'
    _refused(capsys, _manifest(tmp_path, workload=workload), "workloads -> 0 -> benchmark", named)


def test_validate_refuses_a_missing_autotune_from_root_as_prepare_does(tmp_path: Path, capsys):
    path = _manifest(tmp_path, f"  autotune_from: {{root: {tmp_path / 'gone'}, receipt_sha256: {'a' * 64}}}\n")
    for command in ("validate", "prepare"):
        rc, err = _cli(capsys, command, path, *(("--runs-dir", tmp_path / "runs") if command == "prepare" else ()))
        assert rc == 2 and err.startswith(f"PREPARE_REFUSED check=autotune_from: {path}:"), err
        assert f"defaults -> autotune_from -> root: {tmp_path / 'gone'}: not a folder" in err
    assert not (tmp_path / "runs").exists()


def test_a_harness_file_that_is_a_fifo_is_named_by_validate_and_prepare_never_waited_on(tmp_path: Path):
    """An own kernel file's conftest.py (read by the cell's pytest, so digested at prepare) made a FIFO:
    validate digests what prepare digests, so both refuse it by name; neither waits for a writer."""
    kern = tmp_path / "kern"
    kern.mkdir()
    (kern / "test_k.py").write_text((PROJECT_ROOT / "tests/data/dobench/dobench_my_kernel.py").read_text())
    os.mkfifo(kern / "conftest.py")
    path = _manifest(tmp_path, workload="  - {name: mine, provider: pytest, benchmark: ./kern/test_k.py}\n")
    for command in ("validate", "prepare"):
        done = run_cli(command, path, *(("--runs-dir", tmp_path / "runs") if command == "prepare" else ()), timeout=60)
        assert done.returncode == 2, done.stderr
        assert f"harness file {kern / 'conftest.py'}: cannot be digested: a FIFO (never opened)" in done.stderr
        assert UNEXPECTED not in done.stderr
    assert not (tmp_path / "runs").exists()


def _own(tmp_path: Path, data: str, candidate: str = '"1"') -> Path:
    kern = tmp_path / "kern"
    kern.mkdir(exist_ok=True)
    (kern / "test_k.py").write_text((PROJECT_ROOT / "tests/data/dobench/dobench_my_kernel.py").read_text())
    workload = f"  - {{name: mine, provider: pytest, benchmark: ./kern/test_k.py, data: [{data}]}}\n"
    return _manifest(tmp_path, workload=workload, candidate=candidate)


DATA = "workloads -> 0 -> data -> 0"
# (what the manifest gives, its key, what the refusal names): the tester's tracebacks and silent passes
EDGES = {
    "a 5,000-char data path": ("./" + "a" * 5000, DATA, "a path of 5,002 bytes: the OS takes at most 4,096 (PATH_MAX)"),
    "a 5,000-char benchmark path": (None, "workloads -> 0 -> benchmark", "a path of 5,005 bytes: the OS takes at most 4,096"),
    "a 300-byte name in a path": ("./kern/" + "b" * 300, DATA, "a name of 300 bytes (bbbbbbbbbbbbbbbb...): the OS takes "
                                                             "at most 255 bytes a name (NAME_MAX)"),
    "a data file that is a loop of links": ("./kern/loop", DATA, "kern/loop: symbolic link to loop (a loop)"),
    "a data file under /proc": ("/proc/self/environ", DATA, "environ: is under /proc: the kernel's view of a process"),
    "a link to a file under /proc": ("./kern/status", DATA, "/status: is under /proc: the kernel's view of a process"),
    "a data file under /sys": ("/sys/devices/system/cpu/possible", DATA, "possible: is under /sys: the kernel's view"),
    "a data file under /dev": ("/dev/null", DATA, "/dev/null: a device (never opened)"),
    "a 200 kB cell value": ("./kern/test_k.py", "switch -> cells -> candidate -> DISABLE_MMA_V3",
                            "DISABLE_MMA_V3: a value of 200,000 bytes is over the 4,096-byte limit of a cell variable"),
}


@pytest.mark.parametrize("edge", sorted(EDGES))
def test_a_manifest_edge_case_is_refused_at_validate_by_name(tmp_path: Path, capsys, edge: str):
    given, key, named = EDGES[edge]
    path = _own(tmp_path, given or "./kern/test_k.py", '"' + "1" * 200_000 + '"' if "200 kB" in edge else '"1"')
    (tmp_path / "kern" / "loop").symlink_to("loop")
    (tmp_path / "kern" / "status").symlink_to("/proc/self/status")
    if given is None:
        path.write_text(path.read_text().replace("benchmark: ./kern/test_k.py", f"benchmark: ./{'c' * 5000}.py"))
    _refused(capsys, path, key, named)
