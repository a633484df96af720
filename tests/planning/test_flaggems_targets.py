"""The FlagGems workloads of ops/, read statically (flag_gems needs a device to import): every
target exists and follows the bench protocol, the families cover the brief, the H200 manifest validates."""
from __future__ import annotations

from conftest import PROJECT_ROOT

from campaign.plugins import timing


def _flaggems_entries():
    from campaign.planning import inventory
    entries = [e for e in inventory.load(PROJECT_ROOT / "ops").entries.values() if e.provider == "flaggems"]
    assert len(entries) >= 20
    return entries


def test_every_flaggems_target_exists_and_follows_the_protocol():  # noqa: C901 (one walk over every target, each protocol rule an assertion)
    import ast

    from campaign.planning import shapes as shape_sets
    from campaign.planning import targets

    tables = {level: shape_sets.load_shapes(shape_sets.shape_file(PROJECT_ROOT, "flaggems", level))
              for level in ("core", "comprehensive")}
    problems = []
    for entry in _flaggems_entries():
        for target in (entry.benchmark, entry.correctness):
            missing = targets.problem(PROJECT_ROOT, target)
            if missing:
                problems.append(f"{entry.op}: {missing}")
        bench_file, function = targets.split(entry.benchmark)
        if function != f"test_bench_{entry.op}":
            problems.append(f"{entry.op}: benchmark function {function} is not test_bench_{entry.op}")
        tree = ast.parse((PROJECT_ROOT / bench_file).read_text())
        body = next((node for node in tree.body if getattr(node, "name", None) == function), None)
        calls = {ast.unparse(node.func) for node in ast.walk(body)
                 if isinstance(node, ast.Call)} if body is not None else set()
        if not {"bench.cases", "bench.measure", "gems"} <= calls:
            problems.append(f"{entry.op}: {function} does not draw bench.cases, call bench.measure under gems()")
        for level, table in tables.items():
            if entry.op not in table:
                problems.append(f"{entry.op}: no shapes in ops/shapes/flaggems/{level}.yaml")
        if not set(tables["core"].get(entry.op, ())) <= set(tables["comprehensive"].get(entry.op, ())):
            problems.append(f"{entry.op}: comprehensive does not contain every core shape")
        for name in entry.dtypes:
            try:
                timing.torch_dtype(name)
            except ValueError as exc:
                problems.append(f"{entry.op}: {exc}")
    assert problems == []


def test_flaggems_families_cover_the_brief():
    families = {}
    for entry in _flaggems_entries():
        families.setdefault(entry.family, set()).add(entry.op)
    assert {"pointwise", "reduction", "norm", "softmax", "blas", "sort", "rng", "index"} <= set(families)
    assert {"mm", "bmm", "addmm"} <= families["blas"] and {"dropout", "rand"} <= families["rng"]


def test_the_h200_manifest_validates_against_the_tree(cli):
    result = cli("validate", "manifests/h200-disable-mma-v3.yaml")
    assert result.returncode == 0, result.stderr
    assert "ok (14 workloads" in result.stdout
