"""Targets live in the project, and every file a cell's pytest session reads from it is digested.

Refused at validate (located): an absolute target, one with '..', one behind a symbolic
link out of the project. Digested at prepare: the target files, the conftest.py and pytest
configuration of every folder from the root down to each target, and the project modules
they import -- each path whether or not a file is there yet, so a conftest.py that appears
after prepare is a change: `campaign run` refuses (check=harness) and, mid-run, the seal
names it and no verdict stands on it. The CLI tests run in a copy of the project
(`projectcopy`), never editing the shared checkout.
"""
from __future__ import annotations

import os
from pathlib import Path

import projectcopy
from conftest import PROJECT_ROOT

from campaign.contract import canonical
from campaign.planning import harness, targets

BENCH = """import os
from pathlib import Path

from bench_helpers import SIZES  # a module beside the target: pytest puts its folder on sys.path


def test_bench_probe():
    assert SIZES


def test_bench_drift():
    # the candidate cell adds a conftest.py at the project root while the campaign runs
    if os.environ.get("DISABLE_MMA_V3") == "1":
        Path("conftest.py").write_text("# appeared mid-run\\n")
"""


def _bench_project(tmp_path: Path) -> Path:
    project = projectcopy.make(tmp_path)
    (project / "bench").mkdir()
    (project / "bench" / "bench_probe.py").write_text(BENCH)
    (project / "bench" / "bench_helpers.py").write_text("SIZES = [1, 2]\n")
    return project


def test_targets_outside_the_project_are_refused_with_their_position(tmp_path: Path, cli):
    outside = tmp_path / "bench_outside.py"
    outside.write_text("def test_bench_add():\n    pass\n")
    escape = os.path.relpath(outside, PROJECT_ROOT)
    assert escape.startswith("..")
    # a benchmark of one's own outside the project is timed as provider: pytest, and says so
    path = projectcopy.manifest(tmp_path, f'  - {{name: a, op: add, benchmark: "{outside}::test_bench_add"}}\n'
                                          f'  - {{name: b, op: add, benchmark: "{escape}::test_bench_add"}}\n')
    done = cli("validate", path)
    assert done.returncode == 2, done.stdout
    for n, given, column in ((0, outside, 24), (1, escape, 24)):
        assert (f"{path}:{26 + n}:{column}: workloads -> {n} -> benchmark: {given}::test_bench_add is a file of your own, "
                "outside the project: such a file is timed as provider: pytest") in done.stderr, done.stderr
    # a builtin op's correctness node ids are the project's
    path = projectcopy.manifest(tmp_path, "  - name: c\n    op: add\n    reason: narrowed on purpose\n"
                                          f"    correctness:\n      node_ids: ['{outside}::test_bench_add', '{escape}::test_bench_add']\n")
    done = cli("validate", path)
    assert done.returncode == 2, done.stdout
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"PREPARE_REFUSED check=correctness_target: {path}:30:18: workloads -> 0 -> "
                               f"correctness -> node_ids -> 0: {outside}: an absolute path; a target must be a file of the project"), lines
    assert lines[1].startswith(f"PREPARE_REFUSED check=correctness_target: {path}:30:"), lines
    assert f"{escape}: '..' leaves the folder it names" in lines[1], lines


def test_a_symbolic_link_out_of_the_project_is_refused(tmp_path: Path):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (elsewhere / "bench_x.py").write_text("def test_bench_x():\n    pass\n")
    (project / "linked").symlink_to(elsewhere, target_is_directory=True)
    (project / "bench_y.py").write_text("def test_bench_y():\n    pass\n")
    assert "a symbolic link out of the project" in targets.problem(project, "linked/bench_x.py::test_bench_x")
    assert targets.problem(project, "bench_y.py::test_bench_y") is None


def test_digests_cover_what_pytest_reads_for_the_targets(tmp_path: Path):
    root = tmp_path / "project"
    (root / "suite" / "deep").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "other").mkdir()
    (root / "suite" / "deep" / "bench_z.py").write_text(
        "import shared\nfrom pkg.mod import thing\nfrom local_helper import VALUE\n\ndef test_bench_z():\n    pass\n")
    (root / "suite" / "deep" / "local_helper.py").write_text("VALUE = 1\n")
    (root / "suite" / "conftest.py").write_text("import fixtures_lib\n")
    (root / "fixtures_lib.py").write_text("X = 1\n")
    (root / "shared.py").write_text("Y = 2\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text("thing = 3\n")
    (root / "other" / "unrelated.py").write_text("Z = 4\n")
    (root / "tox.ini").write_text("[pytest]\n")
    target = ("suite/deep/bench_z.py::test_bench_z",)

    digests = harness.harness_digests(root, target)
    assert set(digests) == {"suite/deep/bench_z.py", "suite/deep/local_helper.py", "suite/conftest.py",
                            "fixtures_lib.py", "shared.py", "pkg/__init__.py", "pkg/mod.py", "tox.ini"}
    assert "tox.ini" in harness.harness_digests(root)       # the root's configuration, with no target at all

    for added in ("conftest.py", "pytest.ini", "setup.cfg", "suite/deep/conftest.py", "suite/deep/pytest.ini",
                  "suite/deep/shared.py"):                  # the last shadows the root's shared.py
        (root / added).write_text("# added after prepare\n")
        assert harness.changed_files(digests, harness.harness_digests(root, target)) == [added], added
        (root / added).unlink()
    (root / "pkg" / "mod.py").write_text("thing = 4\n")
    assert harness.changed_files(digests, harness.harness_digests(root, target)) == ["pkg/mod.py"]


def test_run_refuses_any_file_pytest_reads_added_or_changed_since_prepare(tmp_path: Path):
    project = _bench_project(tmp_path)
    root = projectcopy.prepare(project, projectcopy.manifest(
        tmp_path, '  - {name: add, op: add, benchmark: "bench/bench_probe.py::test_bench_probe"}\n'))
    recorded = canonical.read_json(root / "prepare.json")["harness"]
    assert {"bench/bench_probe.py", "bench/bench_helpers.py"} <= set(recorded)
    assert "conftest.py" not in recorded

    cases = {"conftest.py": "added", "pytest.ini": "added", "tox.ini": "added", "setup.cfg": "added",
             "bench/conftest.py": "added", "bench/bench_probe.py": "changed", "bench/bench_helpers.py": "changed"}
    for name, how in cases.items():
        path = project / name
        before = path.read_bytes() if path.exists() else None
        path.write_bytes((before or b"") + b"\n# edited after prepare\n")
        done = projectcopy.run(project, root)
        assert done.returncode == 1, (name, done.stderr)
        assert (f"RUN_REFUSED check=harness: code changed since prepare: {name} ({how} since prepare)"
                in done.stderr), (name, done.stderr)
        if before is None:
            path.unlink()
        else:
            path.write_bytes(before)
    assert not (root / "status.tsv").exists()


def test_a_conftest_added_mid_run_is_named_by_the_seal_and_no_verdict_stands_on_it(tmp_path: Path):
    project = _bench_project(tmp_path)
    root = projectcopy.prepare(project, projectcopy.manifest(
        tmp_path, '  - {name: add, op: add, benchmark: "bench/bench_probe.py::test_bench_drift"}\n'))
    done = projectcopy.run(project, root)
    assert done.returncode == 0, done.stderr
    assert (project / "conftest.py").is_file()              # the candidate cell wrote it
    sealed = canonical.read_json(root / "receipt.json")
    assert sealed["harness_changed_since_prepare"] == ["conftest.py"]
    assert sealed["verdicts"]["harness_drift"] == ["conftest.py"]
    assert sealed["verdicts"]["counts"]["G"] == 0 and sealed["verdicts"]["counts"]["R"] == 0
