"""A FlagGems checkout as a source, against small stand-in checkouts in both layouts.

tests/data/fake_flaggems_502 (category files, performance_utils.py) and fake_flaggems_53
(one file per op, base.py) are tiny files written here, not FlagGems code; each test makes a
git repository of one in tmp_path. What is checked: the reading of the items (marks, op
names, Benchmark classes, the shape key FlagGems' lookup lands on), the inventory command with
collection, the dismiss list refusing a manifest by its reason, the commit and clean-tree
checks, the options a cell passes being recorded, and an edited checkout file refused by run.
"""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from campaign.contract import yamlio
from campaign.planning import upstream

DATA = PROJECT_ROOT / "tests" / "data"
# the stand-in flag_gems package the stand-in benchmark modules import (as the installed one would be)
FLAG_GEMS_ENV = {**os.environ, "PYTHONPATH": str(DATA / "fake_flaggems_pkg")}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def make_checkout(tmp_path: Path, layout: str) -> tuple[Path, str]:
    """A git repository of the stand-in checkout (tests/conftest.py keeps the project's own test
    run out of tests/data)."""
    root = tmp_path / f"flaggems-{layout}"
    shutil.copytree(DATA / f"fake_flaggems_{layout}", root, ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "stand-in")
    git(root, "tag", "v5.0.2")
    return root, git(root, "rev-parse", "HEAD").strip()


def manifest(tmp_path: Path, checkout: Path, pin: str, workloads: str) -> Path:
    path = tmp_path / "upstream.yaml"
    path.write_text(f"""schema_version: 1
campaign: upstream-cpu
description: FlagGems' own benchmark items from a checkout
sources:
  triton: {{version: "3.6.0"}}
  flag_gems_checkout: {{path: {checkout.name}, {pin}}}
device: {{backend: cpu, target: "cuda:90"}}
switch:
  name: DISABLE_MMA_V3
  cells: {{baseline: {{}}, candidate: {{DISABLE_MMA_V3: "1"}}}}
timer: {{kind: event}}
defaults: {{bench_level: core, shape_mode: upstream}}
workloads:
{workloads}""")
    return path


@pytest.mark.parametrize("layout", ["502", "53"])
def test_the_items_are_read_from_the_files(layout):
    root = DATA / f"fake_flaggems_{layout}"
    items, notes = upstream.scan(root)
    assert notes == []
    table = yamlio.load(root / "benchmark" / "core_shapes.yaml")[0]
    bases = upstream.class_bases(root)
    found = {(i.file, i.function, i.mark): (i.op_name, i.bench_class, upstream.shape_key(i.op_name, i.bench_class, table, bases))
             for i in items}
    if layout == "502":
        assert upstream.layout(root) == "category"
        unary = "benchmark/test_unary_pointwise_perf.py"
        # a comprehension over a module-level list, marks from getattr(pytest.mark, name)
        assert found[(unary, "test_general_unary_pointwise", "abs")] == ("abs", "UnaryPointwiseBenchmark", "UnaryPointwiseBenchmark")
        assert found[(unary, "test_general_unary_pointwise", "neg")][2] == "neg"       # the op name's own key first
        assert found[(unary, "test_gelu_backward", "gelu")][0] == "gelu_backward"       # is_backward appends
        # a class passed as a parameter, marks as a list with a skipif beside the op mark
        assert found[("benchmark/test_blas_perf_parallel.py", "test_blas_benchmark", "mm")] == (
            "mm", "ParallelBlasBenchmark", "BlasBenchmark")
        assert ("benchmark/test_blas_perf.py", "test_blas_benchmark", "grouped_mm") in found
    else:
        assert upstream.layout(root) == "per_op"
        assert found[("benchmark/test_abs.py", "test_abs", "abs")] == ("abs", "UnaryPointwiseBenchmark", "UnaryPointwiseBenchmark")
        assert found[("benchmark/test_mm.py", "test_mm", "mm")] == ("mm", "BlasBenchmark", "BlasBenchmark")
    assert upstream.test_files_with_mark(root, "abs") == ["tests/test_abs.py"]


@pytest.mark.parametrize("layout", ["502", "53"])
def test_inventory_is_verified_by_collection(tmp_path, cli, layout):
    root, _ = make_checkout(tmp_path, layout)
    out = tmp_path / "inventory.csv"
    done = cli("inventory", root, "--out", out, "--collect", env=FLAG_GEMS_ENV)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    by_item = {(r["file"], r["function"], r["mark"]): r for r in rows}
    if layout == "502":
        broken = by_item[("benchmark/test_blas_perf.py", "test_blas_benchmark", "mm")]
        assert "UnboundLocalError" in broken["dismissed"]
        assert "no parametrize" in by_item[("benchmark/test_binary_pointwise_perf.py", "test_pow", "pow")]["dismissed"]
        assert by_item[("benchmark/test_unary_pointwise_perf.py", "test_general_unary_pointwise", "abs")]["verified"] == "yes"
    else:
        assert by_item[("benchmark/test_abs.py", "test_abs", "abs")]["verified"] == "yes"
    assert {r["verified"] for r in rows} == {"yes"}
    again = cli("inventory", root, "--out", out)
    assert again.returncode == 1 and "INVENTORY_REFUSED check=out" in again.stderr
    # where flag_gems does not import, collection verifies nothing, and each item says why
    bare = cli("inventory", root, "--collect")
    assert bare.returncode == 0, bare.stderr
    assert {r["verified"] for r in csv.DictReader(io.StringIO(bare.stdout))} == {"collection error"}
    assert "collection failed" in bare.stderr


def test_a_dismissed_item_is_refused_with_its_reason(tmp_path, cli):
    root, head = make_checkout(tmp_path, "502")
    path = manifest(tmp_path, root, f'commit: "{head}"',
                    "  - {name: pow, op: pow, provider: flaggems_upstream, "
                    "benchmark: benchmark/test_binary_pointwise_perf.py::test_pow}\n")
    done = cli("validate", path)
    assert done.returncode == 2
    assert "check=dismissed" in done.stderr and "no parametrize" in done.stderr


def test_a_mark_resolves_past_the_dismissed_item_and_records_its_options(tmp_path, cli):
    root, head = make_checkout(tmp_path, "502")
    path = manifest(tmp_path, root, "tag: v5.0.2",
                    "  - {name: mm, op: mm, provider: flaggems_upstream}\n"
                    "  - {name: abs, op: abs, provider: flaggems_upstream, dtypes: [float16]}\n")
    done = cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    run_root = Path(done.stdout.strip().splitlines()[-1])
    tasks = {t["workload"]: t for t in json.loads((run_root / "matrix.json").read_text())["tasks"]}
    mm = tasks["mm"]["targets"]
    # test_blas_perf.py's item is dismissed for mm: the parallel file is the one left
    assert mm["benchmark"] == f"{root}/benchmark/test_blas_perf_parallel.py"
    assert mm["benchmark_options"] == ["-m", "mm", "--level", "core", "--mode", "kernel", "-o", "pythonpath=", "-p", "no:logging"]
    assert mm["correctness"] == f"{root}/tests/test_mm.py" and mm["correctness_options"][:2] == ["-m", "mm"]
    assert tasks["abs"]["targets"]["benchmark_options"][6:8] == ["--dtypes", "float16"]
    harness = json.loads((run_root / "prepare.json").read_text())["harness"]
    names = {Path(name).relative_to(root).as_posix() for name in harness if name.startswith(str(root))}
    assert {"benchmark/test_blas_perf_parallel.py", "benchmark/conftest.py", "benchmark/performance_utils.py",
            "benchmark/attri_util.py", "benchmark/core_shapes.yaml", "tests/test_mm.py", "tests/conftest.py",
            "pytest.ini"} <= names


def test_an_edited_checkout_file_is_refused_by_run(tmp_path, cli):
    root, head = make_checkout(tmp_path, "53")
    path = manifest(tmp_path, root, f'commit: "{head[:12]}"', "  - {name: abs, op: abs, provider: flaggems_upstream}\n")
    done = cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    run_root = done.stdout.strip().splitlines()[-1]
    shapes = root / "benchmark" / "core_shapes.yaml"
    shapes.write_text(shapes.read_text().replace("[1024, 1024]", "[2048, 2048]"))
    refused = cli("run", run_root)
    assert refused.returncode == 1
    assert "check=harness" in refused.stderr and "core_shapes.yaml" in refused.stderr


def test_the_checkout_must_be_at_the_pin_and_clean(tmp_path, cli):
    root, head = make_checkout(tmp_path, "53")
    workloads = "  - {name: abs, op: abs, provider: flaggems_upstream}\n"
    wrong = cli("validate", manifest(tmp_path, root, "commit: " + "a" * 40, workloads))
    assert wrong.returncode == 2 and "check=checkout" in wrong.stderr and f"HEAD is {head}" in wrong.stderr
    assert cli("validate", manifest(tmp_path, root, f'commit: "{head}"', workloads)).returncode == 0
    (root / "benchmark" / "test_abs.py").write_text("# edited\n", encoding="utf-8")
    dirty = cli("validate", manifest(tmp_path, root, f'commit: "{head}"', workloads))
    assert dirty.returncode == 2 and "check=checkout" in dirty.stderr and "benchmark/test_abs.py" in dirty.stderr


def test_the_provider_needs_the_checkout_and_upstream_shapes(tmp_path, cli):
    root, head = make_checkout(tmp_path, "53")
    path = manifest(tmp_path, root, f'commit: "{head}"', "  - {name: abs, op: abs, provider: flaggems_upstream}\n")
    path.write_text(path.read_text().replace("shape_mode: upstream", "shape_mode: project"))
    done = cli("validate", path)
    assert done.returncode == 2 and "shape_mode upstream" in done.stderr


def test_a_benchmark_named_as_one_parametrization_keeps_it(tmp_path, cli):
    # the items are (file, function): `function[id]` matched none of them ("no benchmark item carries the
    # op mark") before the node-id rule; now it names its function's item and stays one node, its id checked
    root, head = make_checkout(tmp_path, "502")
    node = "benchmark/test_blas_perf_parallel.py::test_blas_benchmark[mm-mm-ParallelBlasBenchmark]"
    path = manifest(tmp_path, root, "tag: v5.0.2",
                    f'  - {{name: mm, op: mm, provider: flaggems_upstream, benchmark: "{node}", reason: one node}}\n')
    done = cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    tasks = json.loads((Path(done.stdout.strip().splitlines()[-1]) / "matrix.json").read_text())["tasks"]
    assert {t["targets"]["benchmark"] for t in tasks} == {f"{root}/{node}"}
    typo = node.replace("Parallel", "Paralel")
    done = cli("validate", manifest(tmp_path, root, "tag: v5.0.2",
                                    f'  - {{name: mm, op: mm, provider: flaggems_upstream, benchmark: "{typo}", reason: one node}}\n'))
    assert done.returncode == 2 and f"workloads -> 0 -> benchmark: {typo} is not one of its ids" in done.stderr
