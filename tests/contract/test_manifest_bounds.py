"""Hostile manifests: every case a located exit 2, in bounded time and memory, never a traceback or a hang."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, PROJECT_ROOT

from campaign.contract import stripregex, yamlio
from campaign.contract.errors import CampaignError, InputError
from campaign.contract.manifest import Manifest
from campaign.flows.freeze import check

BASE = (FIXTURES / "manifests" / "valid" / "minimal.yaml").read_text()
HOSTILE_REGEX = r"([^Z]|.)*\x01"


def _write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _refusal(path: Path) -> list[str]:
    with pytest.raises(InputError) as caught:
        check(path)
    return caught.value.lines


# Reaps the CLI and prints its exit code and peak RSS. A child forked from the pytest worker itself
# would start its ru_maxrss at the worker's own RSS (Linux keeps the pre-exec high-water mark, and a
# worker that has run half the suite holds hundreds of MB), so the CLI is forked from this small
# process instead: its peak is then its own.
_REAPER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def _cli(*args: str, timeout: float = 60) -> tuple[int, str, float, float]:
    """rc, stderr, seconds and the CLI's own peak RSS in MB."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as err:
        reaper = subprocess.Popen([sys.executable, "-c", _REAPER, sys.executable, "-m", "campaign", *args],
                                  cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        try:
            out, _ = reaper.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(reaper.pid, 9)
            reaper.wait()
            pytest.fail(f"campaign {' '.join(args)} ran over {timeout} s")
        seconds = time.monotonic() - start
        err.seek(0)
        rc, peak_kb = (int(word) for word in out.split())
        return rc, err.read().decode(), seconds, peak_kb / 1024


# --- paths that are not a manifest ------------------------------------------------------------

def test_a_directory_is_refused_by_name(tmp_path: Path):
    assert _refusal(tmp_path) == [f"{tmp_path}: is a folder, not a file"]


def test_a_fifo_is_refused_without_opening_it(tmp_path: Path):
    fifo = tmp_path / "m.yaml"
    os.mkfifo(fifo)
    rc, err, seconds, _ = _cli("validate", str(fifo), timeout=30)   # opening it would block forever
    assert (rc, err.strip()) == (2, f"{fifo}: is a FIFO (never opened)")


def test_dev_zero_is_refused_as_a_device():
    rc, err, _, _ = _cli("validate", "/dev/zero")
    assert (rc, err.strip()) == (2, "/dev/zero: is a device (never opened)")


def test_a_symlink_loop_and_a_long_name_are_named_errors(tmp_path: Path):
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    assert _refusal(tmp_path / "a.yaml") == [f"{tmp_path / 'a.yaml'}: symbolic link to {tmp_path / 'b.yaml'} (a loop)"]
    long = tmp_path / ("m" * 295 + ".yaml")
    assert _refusal(long) == [f"{long}: cannot be read: File name too long"]
    nul = tmp_path / "m\x00.yaml"      # only in-process: argv cannot carry a NUL
    assert _refusal(nul) == [f"{nul}: cannot be read: embedded null byte"]


def test_a_file_over_the_size_limit_is_refused_after_reading_at_most_the_limit(tmp_path: Path):
    path = _write(tmp_path, BASE + ("#" * 99 + "\n") * (yamlio.MAX_BYTES // 100 + 1))
    start = time.monotonic()
    assert _refusal(path) == [f"{path}: larger than {yamlio.MAX_BYTES} bytes: not a manifest"]
    assert time.monotonic() - start < 2


def test_bytes_that_are_not_utf8_are_located(tmp_path: Path):
    path = tmp_path / "m.yaml"
    path.write_bytes(BASE.encode().replace(b"minimal\n", b"min\xffimal\n", 1))
    assert _refusal(path) == [f"{path}:2:14: not UTF-8: invalid start byte (byte 0xff)"]


# --- the YAML itself ------------------------------------------------------------------------

@pytest.mark.parametrize("char", ["\x00", "\x07"], ids=["NUL", "BEL"])
def test_a_control_character_is_located(tmp_path: Path, char: str):
    path = _write(tmp_path, BASE.replace("the smallest", f"the {char}smallest"))
    assert _refusal(path) == [f"{path}:3:18: character {ord(char):#06x} is not allowed in YAML"]


def test_deep_nesting_is_refused_at_the_limit_not_a_recursion_error(tmp_path: Path):
    path = _write(tmp_path, BASE + "extra: " + "[" * 300 + "]" * 300 + "\n")
    assert _refusal(path) == [f"{path}:15:{7 + yamlio.MAX_DEPTH}: extra{' -> 0' * (yamlio.MAX_DEPTH - 1)}: "
                              f"nested more than {yamlio.MAX_DEPTH} deep: not a manifest"]


def test_an_alias_bomb_fails_fast_in_bounded_memory(tmp_path: Path):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 10)]   # 9**10 strings expanded
    path = _write(tmp_path, BASE + "\n".join(lines) + "\n")
    rc, err, seconds, peak_mb = _cli("validate", str(path))
    assert rc == 2 and err.strip().endswith(f"a5 -> 0: more than {yamlio.MAX_NODES} values once aliases are expanded: not a manifest")
    assert err.startswith(f"{path}:20:10: ")
    assert seconds < 20 and 0 < peak_mb < 120   # a valid manifest's validate peaks near 38 MB (the reaper measures the CLI alone)


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path):
    path = _write(tmp_path, BASE + "loop: &l [1, *l]\n")
    assert _refusal(path) == [f"{path}:15:14: loop -> 1: alias *l names no finished anchor (an alias inside its own anchor loops)"]


def test_aliases_within_the_limit_still_work(tmp_path: Path):
    text = BASE.replace("description: the smallest", "description: &d the smallest").replace(
        "  - {name: matmul, op: matmul}",
        "  - {name: matmul, op: matmul, shapes: &s ['1'], reason: *d}\n  - {name: mm2, op: matmul, shapes: *s, reason: *d}")
    manifest = yamlio.validate(Manifest, _write(tmp_path, text))
    assert manifest.workloads[1].reason == manifest.description and manifest.workloads[1].shapes == ("1",)


def test_a_5000_digit_integer_is_located(tmp_path: Path):
    path = _write(tmp_path, BASE.replace("timer: {kind: event}", "timer: {kind: event}\nrounds: {count: " + "9" * 5000 + "}"))
    assert _refusal(path) == [f"{path}:13:17: rounds -> count: an integer of 5000 characters is out of range "
                              "(quote it if it is a string)"]


@pytest.mark.parametrize("text", ["0b3f9a6c1d2e0b3f9a6c1d2e0b3f9a6c1d2e0b3f", "0b1010101010101010101010101010101010101f"])
def test_a_long_string_that_only_looks_numeric_is_a_string_not_a_refused_integer(text: str):
    # a git commit starting 0b (1 in 256) read as "an integer of 40 characters": YAML reads it as a string
    assert yamlio.load_text(f"commit: {text}\n", "m.yaml")[0] == {"commit": text}


@pytest.mark.parametrize("text", ["0x" + "f" * 38, "0b" + "1" * 38, "0o" + "7" * 38, "-" + "1" * 39])
def test_a_long_integer_in_each_base_is_refused(text: str):
    with pytest.raises(InputError, match="an integer of 40 characters is out of range"):
        yamlio.load_text(f"count: {text}\n", "m.yaml")


@pytest.mark.parametrize(("tagged", "tag"), [("!!omap [{kind: event}]", "tag:yaml.org,2002:omap"),
                                             ("{kind: !!str event}", "tag:yaml.org,2002:str"),
                                             ("!custom {kind: event}", "!custom")])
def test_every_explicit_tag_is_refused(tmp_path: Path, tagged: str, tag: str):
    path = _write(tmp_path, BASE.replace("timer: {kind: event}", f"timer: {tagged}"))
    where = "12:15: timer -> kind" if "str" in tag else "12:8: timer"
    assert _refusal(path) == [f"{path}:{where}: explicit tag {tag} is not allowed (plain data only)"]


def test_an_anchored_boolean_is_still_a_boolean(tmp_path: Path):
    # ruamel builds an anchored true as an int subclass: it must not pass as the integer 1
    path = _write(tmp_path, BASE.replace("timer: {kind: event}", "timer: {kind: event}\ndefaults: {timeout_s: &t true}"))
    assert _refusal(path) == [f"{path}:13:12: defaults -> timeout_s: Input should be a valid integer (got True, a bool)"]


# --- strict, bounded values -------------------------------------------------------------------

@pytest.mark.parametrize(("line", "message"), [
    ("defaults: {timeout_s: true}", "13:12: defaults -> timeout_s: Input should be a valid integer (got True, a bool)"),
    ('defaults: {timeout_s: "600"}', "13:12: defaults -> timeout_s: Input should be a valid integer (got '600', a str)"),
    ("defaults: {timeout_s: 600.0}", "13:12: defaults -> timeout_s: Input should be a valid integer"),
    ("defaults: {timeout_s: 100000}", "13:12: defaults -> timeout_s: Input should be less than or equal to 86400"),
    ("rounds: {count: 1000000}", "13:10: rounds -> count: Input should be less than or equal to 100"),
    ("rounds: {count: false}", "13:10: rounds -> count: Input should be a valid integer (got False, a bool)"),
    ("measured_launch_floor: 10000000", "13:1: measured_launch_floor: Input should be less than or equal to 1000000"),
    ("min_effect_pct: 101", "13:1: min_effect_pct: Input should be less than or equal to 100"),
    ("min_effect_pct: -0.5", "13:1: min_effect_pct: Input should be greater than or equal to 0"),
    ('min_effect_pct: "1"', "13:1: min_effect_pct: Input should be a valid number (got '1', a str)"),
])
def test_numbers_are_strict_and_bounded(tmp_path: Path, line: str, message: str):
    path = _write(tmp_path, BASE.replace("timer: {kind: event}", f"timer: {{kind: event}}\n{line}"))
    assert _refusal(path) == [f"{path}:{message}"]


@pytest.mark.parametrize(("value", "kind"), [("true", "bool"), ("1.0", "float")])
def test_schema_version_is_the_integer_1(tmp_path: Path, value: str, kind: str):
    path = _write(tmp_path, BASE.replace("schema_version: 1", f"schema_version: {value}"))
    assert _refusal(path) == [f"{path}:1:1: schema_version: Input should be an integer, not {kind}"]


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e999"])
def test_no_infinite_or_nan_times(tmp_path: Path, value: str):
    path = _write(tmp_path, BASE.replace("timer: {kind: event}", f"timer: {{kind: event, warmup_ms: {value}}}").replace(
        "  - {name: matmul, op: matmul}", f"  - {{name: matmul, op: matmul, weight_s: {value}}}"))
    lines = _refusal(path)
    assert [line.split(": ", 1)[1].split(":")[0] for line in lines] == ["timer -> warmup_ms", "workloads -> 0 -> weight_s"]
    assert all(("finite number" in line or "greater than" in line) for line in lines), lines


def test_an_integer_time_is_still_a_float_time(tmp_path: Path):
    path = _write(tmp_path, BASE.replace("timer: {kind: event}", "timer: {kind: event, warmup_ms: 10, rep_ms: 50.5}"))
    assert yamlio.validate(Manifest, path).timer.warmup_ms == 10.0


def test_an_empty_shape_subset_is_refused(tmp_path: Path):
    path = _write(tmp_path, BASE.replace("  - {name: matmul, op: matmul}",
                                         "  - {name: matmul, op: matmul, shapes: [], reason: smoke test only}"))
    assert _refusal(path) == [f"{path}:14:32: workloads -> 0 -> shapes: shapes is empty: a subset of no shapes "
                              "measures nothing; leave it out to use them all"]


@pytest.mark.parametrize(("dtype", "hint"), [("fp16", "did you mean float16?"), ("bf16", "did you mean bfloat16?"),
                                             ("Float32", "did you mean float32?"), ("float6", "did you mean float64?")])
def test_an_unknown_dtype_suggests_the_torch_name(tmp_path: Path, dtype: str, hint: str):
    path = _write(tmp_path, BASE.replace("  - {name: matmul, op: matmul}", f"  - {{name: matmul, op: matmul, dtypes: [float32, {dtype}]}}"))
    assert _refusal(path) == [f"{path}:14:50: workloads -> 0 -> dtypes -> 1: unknown dtype {dtype!r}: {hint}"]


def test_a_known_dtype_list_validates(tmp_path: Path):
    path = _write(tmp_path, BASE.replace("  - {name: matmul, op: matmul}", "  - {name: matmul, op: matmul, dtypes: [bfloat16, float32]}"))
    assert check(path).resolved["matmul"].dtypes == ("bfloat16", "float32")


# --- annotation regexes ---------------------------------------------------------------------

def test_a_backtracking_annotation_regex_is_refused_at_validate(tmp_path: Path):
    path = _write(tmp_path, BASE.replace("    candidate: {DISABLE_MMA_V3: \"1\"}",
                                         f"    candidate: {{DISABLE_MMA_V3: \"1\"}}\n  strip_annotations: ['{HOSTILE_REGEX}', 'rlc = \\d+']"))
    start = time.monotonic()
    lines = _refusal(path)
    assert time.monotonic() - start < 10
    assert lines == [f"{path}:12:23: switch -> strip_annotations -> 0: regex {HOSTILE_REGEX!r} takes over "
                     f"{stripregex.PROBE_BUDGET_S} s on 49-character probes such as '\\x01aaa'...: it backtracks; "
                     "write it without nested or overlapping quantifiers"]


def test_a_backtracking_regex_at_use_is_an_error_naming_it_not_a_hang():
    # in a child process: without the limit the C matcher ignores every signal, and only a kill ends it
    script = ("import sys\nfrom campaign.judging import irevidence\n"
              "text = '\\x01' + 'tt.func @kernel() { ttg.rlc = 3 }\\n' * 40\n"
              "assert 'rlc' not in irevidence.normalize(text, 'ttgir', [r'ttg\\.rlc = \\d+'])\n"
              "irevidence.normalize(text, 'ttgir', [sys.argv[1]])\n")
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, HOSTILE_REGEX], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 20      # `regex` checks its clock coarsely: ~3x the 1 s limit, measured
    assert done.returncode == 1 and done.stderr.strip().splitlines()[-1] == (
        f"campaign.contract.errors.CampaignError: strip_annotations regex {HOSTILE_REGEX!r} ran over 1.0 s on one "
        "1360-character IR file: it backtracks; fix the manifest's pattern")


def test_a_pattern_that_does_not_compile_at_use_is_an_error_naming_it():
    with pytest.raises(CampaignError, match=r"strip_annotations regex '\(' does not compile"):
        stripregex.strip("text", ["("])


def test_validate_checks_every_manifest_given(tmp_path: Path, cli):
    bad = _write(tmp_path, BASE.replace("kind: event", "kind: event, warmup_ms: .inf"), "bad.yaml")
    good = FIXTURES / "manifests" / "valid" / "minimal.yaml"
    done = cli("validate", bad, tmp_path, good)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [f"{bad}:12:22: timer -> warmup_ms: Input should be a finite number",
                                        f"{tmp_path}: is a folder, not a file"]
    assert done.stdout.startswith(f"{good}: ok (1 workloads")
