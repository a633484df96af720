"""Property-based: mutated manifests through the real validation entry.

Each case starts from a valid manifest and applies one to four mutations -- wrong
types, out-of-range or huge numbers, booleans and quoted numbers, explicit tags,
deep nesting, aliases (a fair use and a bomb), control bytes, refused cell
variables (never declarable, not on the knob list, or set without a declaration),
values a knob's reader does not parse as meant, unknown dtypes,
backtracking regexes, missing and unknown keys. The
generator knows which mutations make a manifest invalid, so each case asserts:
no exception but the project's CampaignError, exit 2 with located lines when
invalid, acceptance when (and only when) valid, and a bounded time.
"""
from __future__ import annotations

import collections
import json
import os
import re
import shutil
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaign.contract import knobtable
from campaign.contract.errors import CampaignError
from campaign.contract.fields import DTYPES
from campaign.flows.freeze import check

CASE_LIMIT_S = 10        # one case; a hang is a failure, not a stuck CI job
REFUSED_ENV = ("LD_PRELOAD", "PYTHONPATH", "PATH", "BASH_ENV", "TRITON_KERNEL_DUMP", "TRITON_CACHE_DIR",
               "HOME", "XDG_CONFIG_HOME", "CUDA_VISIBLE_DEVICES", "USE_FLAGTUNE", "PYTHONHASHSEED",
               "FOO_KNOB", "GIT_CONFIG_GLOBAL", "OMP_TOOL_LIBRARIES")    # the last three: not on the knob list
FAIR_ENV = ("TRITON_DEBUG", "MLIR_ENABLE_TIMING", "TRITON_F32_DEFAULT", "FLAGTREE_RLC_ENHANCE", "FLAGTREE_RLC_PHASE_MASK")
# values no knob's reader parses as meant (`campaign.contract.knobtable`)
BAD_VALUES = ("1✓", "yes", " 1", "0x3", "", "on\n", "x" * 5000)
UNDECLARED_ENV = ("BAR_KNOB", "TRITON_ALWAYS_COMPILE")     # never declared: apart from FAIR_ENV


def _base() -> dict:
    return {
        "schema_version": 1, "campaign": "fuzz", "description": "a fuzzed manifest",
        "sources": {"triton": {"version": "3.6.0"}},
        "device": {"backend": "cpu", "target": "cuda:90"},
        "switch": {"name": "DISABLE_MMA_V3", "cells": {"baseline": {}, "candidate": {"DISABLE_MMA_V3": "1"}},
                   "also": {}},
        "timer": {"kind": "event", "warmup_ms": 25.0, "rep_ms": 100.0},
        "rounds": {"count": 2, "alternate_order": True, "later_only_if_ir_changed": True},
        "measured_launch_floor": 1,
        "defaults": {"timeout_s": 2400},
        "workloads": [{"name": "matmul", "op": "matmul", "timeout_s": 600, "weight_s": 1.5,
                       "dtypes": ["float16"], "canary": False}],
    }


@dataclass(frozen=True)
class Raw:
    """YAML text placed as it is."""
    text: str


@dataclass
class Case:
    sets: list = field(default_factory=list)            # (path, value, valid)
    deleted: list = field(default_factory=list)         # top-level keys removed at the end
    byte: tuple | None = None                           # (fraction of the text, control character)
    block: bool = False

    def valid(self) -> bool:
        last = {}
        for path, _, ok in self.sets:
            last[path] = ok
        return all(last.values()) and not self.deleted and self.byte is None


def _render(value) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_render(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.3f}"
    return json.dumps(value)


def text_of(case: Case) -> str:
    data = _base()
    for path, value, _ in case.sets:
        node = data
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    for key in case.deleted:
        data.pop(key, None)
    if case.block:
        text = "".join(f"{key}: {_render(value)}\n" for key, value in data.items())
    else:
        text = _render(data) + "\n"
    if case.byte is not None:
        at = int(case.byte[0] * len(text))
        text = text[:at] + case.byte[1] + text[at:]
    return text


# --- mutations: each draws (path, value, valid) ------------------------------------------------

INTS = {("rounds", "count"): (1, 100), ("defaults", "timeout_s"): (1, 86_400),
        ("workloads", 0, "timeout_s"): (1, 86_400), ("measured_launch_floor",): (0, 1_000_000)}
FLOATS = {("timer", "warmup_ms"): (0.001, 60_000.0), ("timer", "rep_ms"): (0.001, 60_000.0),
          ("workloads", 0, "weight_s"): (0.0, 259_200.0)}
BOOLS = (("rounds", "alternate_order"), ("rounds", "later_only_if_ir_changed"), ("workloads", 0, "canary"))
LEAVES = tuple(INTS) + tuple(FLOATS) + BOOLS + (("campaign",), ("device", "backend"), ("timer", "kind"),
                                                 ("switch", "name"), ("workloads", 0, "op"))


@st.composite
def int_mutation(draw, fair: bool = False):
    path = draw(st.sampled_from(sorted(INTS)))
    lo, hi = INTS[path]
    kind = "ok" if fair else draw(st.sampled_from(["ok", "above", "below", "bool", "quoted", "float", "inf", "digits"]))
    value = {
        "ok": lambda: Raw(str(draw(st.integers(lo, hi)))),
        "above": lambda: Raw(str(draw(st.integers(hi + 1, 10**18)))),
        "below": lambda: Raw(str(draw(st.integers(-10**6, lo - 1)))),
        "bool": lambda: draw(st.booleans()),
        "quoted": lambda: str(draw(st.integers(lo, hi))),
        "float": lambda: Raw(f"{draw(st.integers(lo, hi))}.0"),
        "inf": lambda: Raw(draw(st.sampled_from([".inf", "-.inf", ".nan"]))),
        "digits": lambda: Raw("9" * draw(st.integers(19, 5000))),
    }[kind]()
    return path, value, kind == "ok"


@st.composite
def float_mutation(draw, fair: bool = False):
    path = draw(st.sampled_from(sorted(FLOATS)))
    lo, hi = FLOATS[path]
    kind = draw(st.sampled_from(["ok", "int"] if fair else ["ok", "int", "above", "negative", "bool", "quoted", "inf"]))
    value = {
        "ok": lambda: draw(st.integers(int(lo * 1000), int(hi * 1000))) / 1000,
        "int": lambda: Raw(str(draw(st.integers(max(1, int(lo)), int(hi))))),
        "above": lambda: Raw(f"{hi + draw(st.integers(1, 10**9))}.5"),
        "negative": lambda: Raw(f"-{draw(st.integers(1, 1000))}.25"),
        "bool": lambda: draw(st.booleans()),
        "quoted": lambda: "25.0",
        "inf": lambda: Raw(draw(st.sampled_from([".inf", "-.inf", ".nan", ".NaN", "1e999"]))),
    }[kind]()
    return path, value, kind in ("ok", "int")


@st.composite
def bool_mutation(draw):
    path = draw(st.sampled_from(BOOLS))
    value = draw(st.one_of(st.booleans(), st.sampled_from([Raw("1"), Raw("0"), Raw("yes"), "true", Raw("null")])))
    return path, value, isinstance(value, bool)


@st.composite
def tag_mutation(draw):
    path = draw(st.sampled_from(LEAVES))
    tag = draw(st.sampled_from(["!!str", "!!int", "!!float", "!!bool", "!!omap", "!!python/object:os.system", "!x"]))
    value = {"campaign": "fuzz", "backend": "cpu", "kind": "event", "name": "DISABLE_MMA_V3", "op": "matmul"}.get(path[-1], "1")
    return path, Raw(f"{tag} {json.dumps(value)}"), False


def _parsed(name: str):
    """A value the knob's reader parses as meant."""
    grammar = knobtable.KNOBS[name].grammar
    if grammar.kind == "bool":
        return st.sampled_from(("0", "1", "true", "FALSE", "On", "off"))
    if grammar.kind == "int":
        return st.integers(0, 10**9 - 1).map(str)
    return st.sampled_from(grammar.words)


@st.composite
def env_mutation(draw, fair: bool = False):
    kind = draw(st.sampled_from(["fair", "pinned_switch"] if fair else [
        "fair", "refused", "not_a_string", "pinned_switch", "undeclared", "declared_refused", "bad_value"]))
    if kind == "pinned_switch":   # a pinned variable is a legitimate switch when it is the switch
        return [(("switch", "name"), "TRITON_DEFAULT_FP_FUSION", True),
                (("switch", "cells", "candidate", "TRITON_DEFAULT_FP_FUSION"), "0", True),
                (("switch", "also", "DISABLE_MMA_V3"), "the earlier switch, kept on in the candidate", True)]
    pool = {"refused": REFUSED_ENV, "declared_refused": REFUSED_ENV, "undeclared": UNDECLARED_ENV}.get(kind, FAIR_ENV)
    name = draw(st.sampled_from(pool))
    value = {"not_a_string": lambda: Raw(str(draw(st.integers(0, 9)))), "fair": lambda: draw(_parsed(name)),
             "bad_value": lambda: draw(st.sampled_from(BAD_VALUES))}.get(kind, lambda: draw(st.text("abcXYZ019_", max_size=6)))()
    # a variable besides the switch is allowed only declared with its reason, and some never
    declared = [] if kind == "undeclared" else [(("switch", "also", name), "set beside the switch on purpose", kind == "fair")]
    return [(("switch", "cells", "candidate", name), value, kind == "fair")] + declared


@st.composite
def structure_mutation(draw):
    kind = draw(st.sampled_from(["nest", "bomb", "alias", "unknown", "dtypes", "shapes", "regex"]))
    if kind == "nest":
        depth = draw(st.integers(1, 400))
        where = draw(st.sampled_from([("nested",), ("sources", "triton"), ("workloads", 0, "dtypes")]))
        return [(where, Raw("[" * depth + "]" * depth), False)]
    if kind == "bomb":
        levels = draw(st.integers(2, 9))
        parts = ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
        parts += [f"&a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, levels)]
        return [(("bomb",), Raw("[" + ", ".join(parts) + "]"), False)]
    if kind == "alias":     # a fair alias: the description reused as a reason
        return [(("description",), Raw('&d "a fuzzed manifest"'), True), (("workloads", 0, "reason"), Raw("*d"), True)]
    if kind == "unknown":
        return [(draw(st.sampled_from([("colour",), ("timer", "colour"), ("workloads", 0, "dtype")])), 1, False)]
    if kind == "dtypes":
        names = draw(st.lists(st.sampled_from(DTYPES + ("fp16", "bf16", "Float32", "half", "float8")), min_size=0, max_size=3))
        return [(("workloads", 0, "dtypes"), names, bool(names) and all(n in DTYPES for n in names))]
    if kind == "shapes":
        return [(("workloads", 0, "shapes"), [], False), (("workloads", 0, "reason"), "an empty subset on purpose", True)]
    pattern = draw(st.sampled_from([r"rlc = \d+", r"ttg\.rlc[^}]*", r"([^Z]|.)*\x01", "(", "[a-"]))
    return [(("switch", "strip_annotations"), [pattern], pattern in (r"rlc = \d+", r"ttg\.rlc[^}]*"))]


def _as_list(strategy):
    return strategy.map(lambda one: [one])


MUTATION = st.one_of(_as_list(int_mutation()), _as_list(float_mutation()), _as_list(bool_mutation()),
                     _as_list(tag_mutation()), env_mutation(), structure_mutation())
# mutations that keep a manifest valid: about one case in four draws only these, so the valid side is
# exercised by design (drawn from MUTATION alone, about one case in ten was valid: a bound of 30 of 300
# sat at its mean, and hypothesis's pool of the loaded modules' constants moved the count across it)
FAIR = st.one_of(_as_list(int_mutation(fair=True)), _as_list(float_mutation(fair=True)),
                 _as_list(st.tuples(st.sampled_from(BOOLS), st.booleans(), st.just(True))), env_mutation(fair=True))


@st.composite
def cases(draw) -> Case:
    case = Case(block=draw(st.booleans()))
    fair = draw(st.integers(0, 3)) == 0
    for mutation in draw(st.lists(FAIR if fair else MUTATION, min_size=1, max_size=4)):
        case.sets.extend(mutation)
    if draw(st.integers(0, 9)) == 0:
        case.deleted.append(draw(st.sampled_from(["campaign", "sources", "device", "switch", "workloads"])))
    if draw(st.integers(0, 9)) == 0:
        bad = draw(st.sampled_from([chr(c) for c in (*range(0, 9), *range(14, 32), 127)]))
        case.byte = (draw(st.floats(0, 1)), bad)
    return case


# --- the property -----------------------------------------------------------------------------

class Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise Hang(f"a case ran over {CASE_LIMIT_S} s")


def outcome(path: Path) -> tuple[int, list[str]]:
    """Exit code and lines of the real validation entry, under a wall-clock limit."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_LIMIT_S)
    try:
        check(path)
        return 0, []
    except CampaignError as exc:     # anything else fails the test with its traceback
        return exc.exit_code, exc.lines
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def assert_judged(path: Path, valid: bool, rc: int, lines: list[str]) -> None:
    if valid:
        assert (rc, lines) == (0, []), f"a valid manifest was refused:\n{path.read_text()}\n{lines}"
        return
    assert rc == 2, f"an invalid manifest was accepted (rc {rc}):\n{path.read_text()}"
    assert lines and all(str(path) in line for line in lines), lines     # every line names the file


FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])


def test_base_manifest_is_valid():
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.yaml"
        for block in (False, True):
            path.write_text(text_of(Case(block=block)))
            assert outcome(path) == (0, [])


def test_mutated_manifests_are_judged_in_process():
    seen = collections.Counter()

    @FUZZ
    @given(case=cases())
    def judged(case: Case) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "m.yaml"
            path.write_text(text_of(case), encoding="utf-8")
            valid = case.valid()
            assert_judged(path, valid, *outcome(path))
            seen[valid] += 1

    judged()
    # the generator must exercise both sides, or the property says little
    assert sum(seen.values()) >= 300 and seen[True] >= 30 and seen[False] >= 150, seen


@settings(FUZZ, max_examples=6)
@given(case=cases())
def test_mutated_manifests_through_the_cli(case: Case):
    from conftest import run_cli
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.yaml"
        path.write_text(text_of(case), encoding="utf-8")
        done = run_cli("validate", path, timeout=60)
        assert "Traceback" not in done.stderr, done.stderr
        assert_judged(path, case.valid(), done.returncode, done.stderr.splitlines())


# --- hostile manifests: strings that reach a path or a process, paths that are no file ----------------

HOSTILE = Path(tempfile.gettempdir()) / f"campaign-fuzz-hostile-{os.getpid()}"
SHAPES_OK = "matmul: [[64, 64, 64]]\n"


def _hostile_files() -> None:
    """A loop of links, a FIFO, a folder, a shape file that is not UTF-8 and a fair one, under HOSTILE."""
    HOSTILE.mkdir(exist_ok=True)
    (HOSTILE / "loop").symlink_to("loop")
    os.mkfifo(HOSTILE / "fifo")
    (HOSTILE / "folder").mkdir()
    (HOSTILE / "latin1.yaml").write_bytes(b"matmul: [[64, 64, 64]] # \xe9\n")
    (HOSTILE / "shapes.yaml").write_text(SHAPES_OK, encoding="utf-8")


@st.composite
def hostile_mutation(draw):
    kind = draw(st.sampled_from(["nul", "shape_file", "autotune_from", "fair"]))
    if kind == "nul":     # a NUL anywhere a string goes: a name, a path, a variable's value, a reason
        where = draw(st.sampled_from([("description",), ("campaign",), ("workloads", 0, "name"), ("workloads", 0, "reason"),
                                      ("switch", "cells", "candidate", "DISABLE_MMA_V3"), ("defaults", "shape_file")]))
        at = draw(st.integers(0, 4))
        return [(where, Raw(json.dumps("fuzzed"[:at] + "\0" + "fuzzed"[at:]).replace("\\u0000", "\\0")), False)]
    if kind == "shape_file":
        name = draw(st.sampled_from(["loop", "fifo", "folder", "latin1.yaml", "missing.yaml"]))
        return [(("defaults", "shape_file"), str(HOSTILE / name), False)]
    if kind == "autotune_from":
        root = draw(st.sampled_from([HOSTILE / "gone", HOSTILE / "loop", HOSTILE / "fifo", HOSTILE / "folder"]))
        return [(("defaults", "autotune_from"), {"root": str(root), "receipt_sha256": "a" * 64}, False)]
    return [(("defaults", "shape_file"), str(HOSTILE / "shapes.yaml"), True)]


HOSTILE_CASES = st.lists(st.one_of(hostile_mutation(), MUTATION), min_size=1, max_size=3).map(
    lambda mutations: Case(sets=[one for mutation in mutations for one in mutation]))
LOCATED = re.compile(r"^(\w+ check=\w+: )?(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<key>[^:]+): ")


def test_hostile_manifests_are_refused_located_or_valid():
    """100 %: exit 0 when valid; exit 2 with file, line and key on each refusal's first line; no other
    exception (a traceback fails the test); no case past CASE_LIMIT_S (a FIFO waited on is a hang)."""
    seen = collections.Counter()
    _hostile_files()

    @settings(FUZZ, max_examples=60)
    @given(case=HOSTILE_CASES)
    def judged(case: Case) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "m.yaml"
            path.write_text(text_of(case), encoding="utf-8")
            rc, lines = outcome(path)
            assert_judged(path, case.valid(), rc, lines)
            located = [LOCATED.match(line) for line in lines if line.startswith(("PREPARE_REFUSED", str(path)))]
            assert all(m is not None and m["file"] == str(path) for m in located), lines
            seen[rc] += 1

    try:
        judged()
    finally:
        shutil.rmtree(HOSTILE)
    assert seen[2] >= 30 and seen[0] >= 3, seen
