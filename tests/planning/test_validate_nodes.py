"""A correctness node id's ``[params]`` must be an id pytest would collect, read from the files.

The static reading (`campaign.planning.paramids`) is held against pytest's own collection of a
module in tmp_path: every collected id is accepted, near misses are refused. Where the
ids cannot be read without running the code, `campaign validate` says the id was not
checked (exit 0, a note) instead of claiming it was.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import projectcopy
import pytest

from campaign.planning import paramids, targets

GROUND = '''import enum

import pytest

from consts import SIZES


class Color(enum.Enum):
    RED = 1


def helper():
    pass


PAIRS = [(1, 2), (3, 4)]
MODES = ["fast", "slow", "fast"]


@pytest.mark.parametrize("n", SIZES[:2] + [-3, 0.5, None, True])
@pytest.mark.parametrize("a,b", PAIRS)
@pytest.mark.parametrize("mode", MODES)
def test_mix(mode, a, b, n):
    pass


@pytest.mark.parametrize("shape", [(1, 2), (3, 4), [5]])
@pytest.mark.parametrize("kind", [Color.RED, helper, int, "x y", "a-b"])
def test_objects(kind, shape):
    pass


@pytest.mark.parametrize("v", [1, 2, 3], ids=["one", None, "three"])
@pytest.mark.parametrize("w", [pytest.param(1, id="first"), pytest.param(2), pytest.param(3, marks=pytest.mark.skip)])
def test_ids(w, v):
    pass


@pytest.mark.parametrize(("p", "q"), [(1, 1), (1, 1)])
def test_repeated(p, q):
    pass


@pytest.mark.skip(reason="a mark other than parametrize adds no id")
@pytest.mark.parametrize("s", ["LONG", "short"])
def test_long(s):
    pass


def test_plain():
    pass
'''.replace("LONG", "x" * 101)   # pytest ids a str over 100 characters by its argname

UNREADABLE = {
    "computed": ('@pytest.mark.parametrize("d", [object(), object()])\ndef test_it(d):\n    pass\n',
                 "value 0 of d is computed (object())"),
    "ids function": ('@pytest.mark.parametrize("d", [1, 2], ids=lambda v: f"n{v}")\ndef test_it(d):\n    pass\n',
                     "is not a literal list"),
    "hook": ('def pytest_generate_tests(metafunc):\n    pass\n\n\n@pytest.mark.parametrize("d", [1])\n'
             'def test_it(d):\n    pass\n', "defines pytest_generate_tests"),
    "fixture": ('@pytest.fixture(params=[1, 2])\ndef thing(request):\n    return request.param\n\n\n'
                '@pytest.mark.parametrize("d", [1])\ndef test_it(d, thing):\n    pass\n',
                "fixture thing is parametrised"),
    "decorator": ('import functools\n\n\n@functools.lru_cache\n@pytest.mark.parametrize("d", [1])\n'
                  'def test_it(d):\n    pass\n', "decorator @functools.lru_cache may change"),
    "not imported": ('from elsewhere_pkg import VALUES\n\n\n@pytest.mark.parametrize("d", VALUES)\n'
                     'def test_it(d):\n    pass\n', "VALUES is not a list defined in the project"),
}


def _collected(folder: Path, name: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           f"--rootdir={folder}", name], cwd=folder, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith(name + "::")]


def test_every_id_pytest_collects_is_accepted_and_near_misses_are_refused(tmp_path: Path):
    (tmp_path / "test_ground.py").write_text(GROUND)
    (tmp_path / "consts.py").write_text("SIZES = [10, 20, 30]\n")
    collected = _collected(tmp_path, "test_ground.py")
    assert len(collected) == 6 * 2 * 3 + 5 * 3 + 3 * 3 + 2 + 2 + 1
    for node in collected:
        assert targets.node_problem(tmp_path, node) == (None, None), node
    # the decorator closest to the function gives the first part; a repeated id gets pytest's counter
    assert "test_ground.py::test_mix[fast0-1-2-10]" in collected
    assert "test_ground.py::test_ids[first-2]" in collected             # ids=[..., None, ...]: that one is automatic

    path = tmp_path / "test_ground.py"
    misses = {"test_mix": ["fast-1-2-10", "fast0-1-2-30", "fast0-1-2", "fast0-1-2-10-x", "fast0-1-2-n0",
                           "10-1-2-fast0"],
              "test_objects": ["kind5-shape0", "Color.RED-shape3", "kind0"],
              "test_ids": ["first-v0", "w0-one", "first-1"],
              "test_repeated": ["1-1", "1-1_2"],
              "test_long": ["short-x", "x" * 101, "s1"]}
    for function, brackets in misses.items():
        for bracket in brackets:
            problem = paramids.check(tmp_path, path, function, bracket)
            assert problem is not None and problem.startswith(f"{function}[{bracket}] is not one of its ids"), \
                (function, bracket, problem)
    assert paramids.check(tmp_path, path, "test_plain", "x") == \
        "test_plain is not parametrised: [x] names no test it collects"


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_what_cannot_be_read_is_said_not_checked(tmp_path: Path, case: str):
    source, why = UNREADABLE[case]
    (tmp_path / "test_dyn.py").write_text("import pytest\n\n\n" + source)
    problem, note = targets.node_problem(tmp_path, "test_dyn.py::test_it[d0]")
    assert problem is None
    assert note is not None and note.startswith("test_dyn.py::test_it[d0]: parameters not checked") and why in note


def test_a_parametrised_fixture_in_a_conftest_on_the_path_makes_ids_unreadable(tmp_path: Path):
    (tmp_path / "suite").mkdir()
    (tmp_path / "conftest.py").write_text("import pytest\n\n\n@pytest.fixture(params=[1, 2])\ndef size(request):\n"
                                          "    return request.param\n")
    (tmp_path / "suite" / "test_s.py").write_text("import pytest\n\n\n@pytest.mark.parametrize('d', [1])\n"
                                                  "def test_it(d, size):\n    pass\n")
    problem, note = targets.node_problem(tmp_path, "suite/test_s.py::test_it[1-1]")
    assert problem is None and "conftest.py: fixture size is parametrised" in note


def test_validate_refuses_a_node_id_flag_gems_would_not_collect(tmp_path: Path, cli):
    blas = "ops/workloads/flaggems/test_fg_blas.py"
    path = projectcopy.manifest(tmp_path, f"""  - name: bmm
    op: bmm
    provider: flaggems
    reason: one shape is enough here
    correctness:
      node_ids:
        - "{blas}::test_bmm[mnk1-dtype0]"
        - "{blas}::test_bmm[5-mnk2-dtype2]"
        - "{blas}::test_bmm[5-mnk3-dtype0]"
        - "{blas}::test_bmm[1-mnk0-dtype3]"
""", campaign="nodes")
    done = cli("validate", path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"PREPARE_REFUSED check=correctness_target: {path}:32:11: workloads -> 0 -> "
                               f"correctness -> node_ids -> 0: {blas}::test_bmm[mnk1-dtype0] is not one of its ids: "
                               "3 parametrisation(s) (batch: 1, 5; mnk: mnk0, mnk1, mnk2; "
                               "dtype: dtype0, dtype1, dtype2), e.g. test_bmm[1-mnk0-dtype0]"), lines
    assert f"{path}:34:11: workloads -> 0 -> correctness -> node_ids -> 2: {blas}::test_bmm[5-mnk3-dtype0]" in lines[1]
    assert f"{path}:35:11: workloads -> 0 -> correctness -> node_ids -> 3: {blas}::test_bmm[1-mnk0-dtype3]" in lines[2]


def test_validate_says_which_node_ids_it_could_not_check(tmp_path: Path):
    project = projectcopy.make(tmp_path)
    (project / "suite").mkdir()
    (project / "suite" / "test_dyn.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('d', [object(), object()])\ndef test_d(d):\n    pass\n")
    path = projectcopy.manifest(tmp_path, "  - name: add\n    op: add\n    reason: dynamic ids on purpose\n"
                                          "    correctness:\n      node_ids: ['suite/test_dyn.py::test_d[d0]']\n")
    done = projectcopy.cli(project, "validate", path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == (
        f"{path}: note: suite/test_dyn.py::test_d[d0]: parameters not checked (cannot be read without running "
        "the code: value 0 of d is computed (object()))")
