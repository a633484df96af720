"""A test file of the user's own, outside the project (`campaign.planning.ownfile`, `owntargets`, `ownrules`).

Prepare digests the file with what pytest reads with it (its rootdir's configuration and conftest.py
chain, the local modules it imports, the data files the manifest lists) into the harness record;
`campaign run` refuses a root whose file, local module, data file or conftest.py changed since, by
name. The rootdir follows pytest's rule; what such a file must not do is refused at validate with
the file and line. The run through the worker is `tests/flows/test_readme_walkthrough.py`'s.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import runroots

from campaign.contract import canonical, yamlio
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest
from campaign.planning import ownfile, ownrules

KERNEL = '''import pytest
import torch
import triton

import helper
from triton.testing import do_bench

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@pytest.mark.parametrize("n", [1024])
def test_bench_copy(n):
    x = torch.ones(n, device=DEVICE)
    do_bench(lambda: helper.copy(x))


def test_copy():
    assert helper.WEIGHTS.name == "weights.txt"
'''
HELPER = '''from pathlib import Path

WEIGHTS = Path(__file__).parent / "weights.txt"


def copy(x):
    return x.clone()
'''


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def _manifest(tmp_path: Path, workload: str) -> Path:
    return runroots.manifest(tmp_path, [workload], campaign="own-file")


OWN = ('  - {name: own, provider: pytest, benchmark: ./mine/test_copy.py::test_bench_copy, '
       'correctness: {node_ids: ["./mine/test_copy.py::test_copy"]}, data: [./mine/weights.txt]}\n')


@pytest.fixture
def prepared(tmp_path: Path, cli):
    mine = tmp_path / "mine"
    _write(mine, {"test_copy.py": KERNEL, "helper.py": HELPER, "weights.txt": "1 2 3\n"})
    path = _manifest(tmp_path, OWN)
    done = cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    return mine.resolve(), Path(done.stdout.strip().splitlines()[-1]), done.stdout


def test_prepare_digests_the_file_its_local_imports_and_data_and_names_what_it_cannot(prepared):
    mine, root, said = prepared
    record = canonical.read_json(root / "prepare.json")
    targets = record["resolved_targets"]["own"]
    assert targets["benchmark"] == f"{mine}/test_copy.py::test_bench_copy"
    assert targets["correctness_node_ids"] == [f"{mine}/test_copy.py::test_copy"]
    assert (targets["rootdir"], targets["data"]) == (str(mine), [f"{mine}/weights.txt"])
    assert {f"{mine}/test_copy.py", f"{mine}/helper.py", f"{mine}/weights.txt"} <= set(record["harness"])
    assert f"note: {mine}/test_copy.py: imports not digested" in said
    assert said.split("imports not digested", 1)[1].split("\n")[0].endswith(": pytest, torch, triton")
    matrix = canonical.read_json(root / "matrix.json")
    assert {t["targets"]["rootdir"] for t in matrix["tasks"]} == {str(mine)}


@pytest.mark.parametrize("edit", ["test_copy.py", "helper.py", "weights.txt", "conftest.py"])
def test_a_change_after_prepare_is_refused_by_run_naming_the_file(prepared, cli, edit: str):
    mine, root, _ = prepared
    path = mine / edit
    path.write_text((path.read_text(encoding="utf-8") if path.exists() else "") + "# edited after prepare\n",
                    encoding="utf-8")
    done = cli("run", root, "--grace", "1")
    assert done.returncode == 1, done.stderr
    assert f"RUN_REFUSED check=harness: code changed since prepare: {path}" in done.stderr
    assert not (root / "status.tsv").exists()


# -- where the file is, and what its targets may be ------------------------------------------------

def test_correctness_node_ids_of_a_pytest_file_need_no_reason_a_builtin_ops_do(tmp_path: Path):
    manifest = yamlio.validate(Manifest, _manifest(tmp_path, OWN))
    assert manifest.workloads[0].correctness.node_ids == ("./mine/test_copy.py::test_copy",)
    with pytest.raises(InputError, match=r"narrowing \(correctness node_ids\) requires a reason"):
        yamlio.validate(Manifest, _manifest(tmp_path, '  - {name: a, op: add, correctness: {node_ids: ["x.py::t"]}}\n'))


@pytest.mark.parametrize("workload, check, detail", [
    ('  - {name: w, provider: pytest, benchmark: ./nowhere/test_x.py}\n', "benchmark_target", "nowhere/test_x.py: no such file"),
    ('  - {name: w, provider: pytest, benchmark: ./mine/test_copy.py::test_nothing}\n', "benchmark_target",
     "test_copy.py: no function test_nothing"),
    ('  - {name: w, provider: pytest, benchmark: ./mine/test_copy.py, correctness: {node_ids: ["mine/test_copy.py::test_copy"]}}\n',
     "correctness_target", "a file of your own is named from the manifest's folder"),
    ('  - {name: w, provider: pytest, benchmark: ./mine/test_copy.py, data: [./mine/gone.bin]}\n', "data", "mine/gone.bin: no such file"),
])
def test_targets_and_data_that_do_not_resolve_are_refused_with_their_position(tmp_path: Path, cli, workload, check, detail):
    _write(tmp_path / "mine", {"test_copy.py": KERNEL, "helper.py": HELPER})
    done = cli("validate", _manifest(tmp_path, workload))
    assert done.returncode == 2, done.stdout
    assert f"PREPARE_REFUSED check={check}: {tmp_path}/own-file.yaml:" in done.stderr, done.stderr
    assert detail in done.stderr, done.stderr


@pytest.mark.parametrize("files, expected", [
    ({"a/b/test_k.py": ""}, "a/b"),
    ({"pytest.ini": "[pytest]\n", "a/b/test_k.py": ""}, "."),
    ({"tox.ini": "[pytest]\n", "a/tox.ini": "[tox]\n", "a/b/test_k.py": ""}, "."),     # a/tox.ini holds no pytest section
    ({"a/pyproject.toml": "[tool.pytest.ini_options]\n", "a/b/setup.cfg": "[metadata]\n", "a/b/test_k.py": ""}, "a"),
    ({"pyproject.toml": "[project]\nname = 'x'\n", "a/setup.py": "", "a/b/test_k.py": ""}, "."),
    ({"a/setup.py": "", "a/b/test_k.py": ""}, "a"),
])
def test_the_rootdir_is_pytests(tmp_path: Path, files: dict[str, str], expected: str):
    base = tmp_path / "tree"
    _write(base, files)
    assert ownfile.rootdir(base / "a" / "b" / "test_k.py") == base / expected


# -- what the file must not do ---------------------------------------------------------------------

@pytest.mark.parametrize("line, rule, compile_only", [
    ("os.environ['TRITON_DEFAULT_FP_FUSION'] = '0'", "environment", False),
    ("os.environ.setdefault('X', '1')", "environment", False),
    ("os.putenv('X', '1')", "environment", False),
    ("import subprocess", "process", False),
    ("from multiprocessing import Pool", "process", False),
    ("from concurrent.futures import ProcessPoolExecutor", "process", False),
    ("os.system('nvidia-smi')", "process", False),
    ("os.chdir('/tmp')", "cwd", False),
    ("torch.cuda.synchronize()", "device", True),
    ("x = torch.ones(4, device='cuda')", "device", True),
    ("x = torch.ones(4).cuda()", "device", True),
    ("x = torch.ones(4).to('cuda:0')", "device", True),
    ("@pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\ndef test_x():\n    pass", "device", True),
])
def test_each_rule_names_the_file_the_line_and_the_fix(line: str, rule: str, compile_only: bool):
    text = f"import os\nimport pytest\nimport torch\n{line}\n"
    found = list(ownrules.broken(Path("k.py"), text, compile_only))
    assert len(found) == 1 and found[0].startswith(f"k.py:4: {rule}: "), found
    assert ownrules.FIXES[rule] in found[0]
    if rule == "device":    # on a GPU backend the file's own device is the device
        assert list(ownrules.broken(Path("k.py"), text, compile_only=False)) == []


def test_what_a_file_may_do_is_not_refused():
    text = ("import os\nimport torch\nimport triton\nDEVICE = triton.runtime.driver.active.get_active_torch_device()\n"
            "SEED = os.environ.get('SEED', '0')\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"
            "x = torch.ones(4, device=DEVICE)\n")
    assert list(ownrules.broken(Path("k.py"), text, compile_only=True)) == []


def test_a_rule_broken_in_a_local_module_the_file_imports_is_refused_at_validate(tmp_path: Path, cli):
    _write(tmp_path / "mine", {"test_copy.py": KERNEL, "helper.py": HELPER + "\nimport os\nos.environ['X'] = '1'\n",
                               "weights.txt": ""})
    done = cli("validate", _manifest(tmp_path, OWN))
    assert done.returncode == 2, done.stdout
    helper = (tmp_path / "mine" / "helper.py").resolve()
    assert (f"PREPARE_REFUSED check=own_file: {tmp_path}/own-file.yaml:25:35: workloads -> 0 -> benchmark: " in done.stderr
            and f"{helper}:10: environment: assigns os.environ[...]; the switch under test" in done.stderr), done.stderr
