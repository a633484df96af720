"""`campaign inventory CHECKOUT --emit-manifest OUT --from TEMPLATE`: a checkout's whole suite as a manifest.

Against the stand-in checkout tests/data/fake_flaggems_502 (made a git repository in tmp_path by
`make_checkout`), grown by one file that benchmarks neg in two more functions, so one mark is
found in three places. What is checked: every runnable (mark, file, function) becomes one
workload with a unique, readable name and the ``benchmark:`` that picks it; the template's own
workload, comments and ``defaults`` stay as written; the dismissed unit and the ones prepare
would refuse are comments naming why; the result passes `campaign validate`; OUT is never
overwritten, and a template that does not pin this checkout is refused.
"""
from __future__ import annotations

from pathlib import Path

import rootbuilder
from test_flaggems_checkout import git, make_checkout

from campaign.contract import canonical, yamlio
from campaign.contract.runroot import RunRoot
from campaign.planning import suite, upstream
from campaign.planning.inventory import Inventory

TWO_MORE_NEGS = '''import pytest
import torch

from benchmark.performance_utils import Benchmark


@pytest.mark.neg
def test_perf_neg_plain():
    Benchmark(op_name="neg", torch_op=torch.neg).run()


@pytest.mark.neg
def test_perf_neg_strided():
    Benchmark(op_name="neg", torch_op=torch.neg).run()
'''


def checkout_with_three_negs(tmp_path: Path) -> tuple[Path, str]:
    root, _ = make_checkout(tmp_path, "502")
    (root / "benchmark" / "test_reduction_perf.py").write_text(TWO_MORE_NEGS)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "two more negs")
    return root, git(root, "rev-parse", "HEAD").strip()


def template(tmp_path: Path, checkout: str, pin: str, timer: str = "event") -> Path:
    path = tmp_path / "suite-template.yaml"
    path.write_text(f"""# the suite's template: this comment stays
schema_version: 1
campaign: suite-cpu
description: every item of the stand-in checkout
sources:
  triton: {{version: "3.6.0"}}
  flag_gems_checkout: {{path: {checkout}, commit: "{pin}"}}   # pinned
device: {{backend: cpu, target: "cuda:90"}}
switch:
  name: DISABLE_MMA_V3
  cells: {{baseline: {{}}, candidate: {{DISABLE_MMA_V3: "1"}}}}
timer: {{kind: {timer}}}
defaults:
  bench_level: core
  shape_mode: upstream
  ir_pass_lanes: 3   # three at once
workloads:
  # abs by hand, in float16 only
  - {{name: abs, op: abs, provider: flaggems_upstream, dtypes: [float16]}}
""")
    return path


def test_every_runnable_unit_is_one_workload_and_the_rest_say_why(tmp_path, cli):
    root, head = checkout_with_three_negs(tmp_path)
    source = template(tmp_path, root.name, head)
    out = tmp_path / "suite.yaml"
    done = cli("inventory", root, "--emit-manifest", out, "--from", source)
    assert done.returncode == 0, done.stderr
    assert "4 workloads emitted for 10 units (10 items)" in done.stdout
    assert "1 covered by the template's own workloads, 2 dismissed, 3 refused" in done.stdout
    text = out.read_text()
    assert text.splitlines()[2:len(source.read_text().splitlines()) + 2] == source.read_text().splitlines()
    data = yamlio.load(out)[0]
    assert data["defaults"]["ir_pass_lanes"] == 3
    got = {w["name"]: (w["op"], w.get("benchmark"), w.get("dtypes")) for w in data["workloads"]}
    assert got == {
        "abs": ("abs", None, ["float16"]),                               # the template's, as written
        # neg in three places: the file where it is in one function, file::function where in two
        "neg-unary_pointwise": ("neg", "benchmark/test_unary_pointwise_perf.py", None),
        "neg-plain": ("neg", "benchmark/test_reduction_perf.py::test_perf_neg_plain", None),
        "neg-strided": ("neg", "benchmark/test_reduction_perf.py::test_perf_neg_strided", None),
        # mm in two files, one of them dismissed: the one left keeps the mark's name and names its file
        "mm": ("mm", "benchmark/test_blas_perf_parallel.py", None),
    }
    comments = [line.strip() for line in text.splitlines() if line.startswith("  # ")]
    assert any(c.startswith("# dismissed: pow in benchmark/test_binary_pointwise_perf.py::test_pow "
                            "(ops/dismiss_upstream.csv)") and "no parametrize" in c for c in comments)
    assert any(c.startswith("# dismissed: mm in benchmark/test_blas_perf.py::test_blas_benchmark") for c in comments)
    # gelu has no tests/ file carrying its mark: prepare would refuse it, and the comment says so
    assert any(c.startswith("# not emitted: gelu in benchmark/test_unary_pointwise_perf.py::test_gelu_backward "
                            "(check=correctness_target: no file of ") for c in comments)
    assert not [c for c in comments if str(root) in c]      # the checkout is named as the template names it
    checked = cli("validate", out)
    assert checked.returncode == 0, checked.stderr
    assert "ok (5 workloads" in checked.stdout
    again = cli("inventory", root, "--emit-manifest", out, "--from", source)
    assert again.returncode == 1 and "INVENTORY_REFUSED check=out" in again.stderr and "never overwritten" in again.stderr


def test_weights_from_a_sealed_screen_give_its_ir_pass_seconds_to_the_workloads_it_holds(tmp_path, cli):
    """``--weights-from ROOT``: each workload the sealed screen root holds (the template's own, weighed in place,
    and the emitted) gets ``weight_s``, the heavier
    of its two IR-pass cells' seconds there (what the next screen's queues hand out first by); the others
    none; the header names the root and its receipt. A campaign root, or a screen without an IR pass, is refused."""
    root, head = checkout_with_three_negs(tmp_path)
    source = template(tmp_path, root.name, head)
    screened = rootbuilder.screen_root(tmp_path / "roots", [rootbuilder.mm("mm"), rootbuilder.pointwise("neg-plain", "neg"),
                                                             rootbuilder.pointwise("abs", "abs")],
                                       rootbuilder.Options(ir_pass=True, backend="cpu"))
    rows, _ = RunRoot(screened).status()
    heavier = {name: max(r.elapsed_s for r in rows if r.workload == name and r.round == 0) for name in ("mm", "neg-plain", "abs")}
    out = tmp_path / "weighed.yaml"
    done = cli("inventory", root, "--emit-manifest", out, "--from", source, "--weights-from", screened)
    assert done.returncode == 0, done.stderr
    data = yamlio.load(out)[0]
    got = {w["name"]: w.get("weight_s") for w in data["workloads"]}
    assert got == {"abs": round(heavier["abs"], 3), "neg-unary_pointwise": None, "neg-plain": round(heavier["neg-plain"], 3),
                   "neg-strided": None, "mm": round(heavier["mm"], 3)}
    assert all(v > 0 for v in heavier.values())
    assert (f"# weight_s: the heavier IR-pass cell's seconds of each workload in {screened.name} (receipt "
            f"{canonical.sha256_file(screened / 'receipt.json')})") in out.read_text()
    assert cli("validate", out).returncode == 0
    campaign_root = rootbuilder.sealed(tmp_path / "campaign")
    refused = cli("inventory", root, "--emit-manifest", tmp_path / "c.yaml", "--from", source, "--weights-from", campaign_root)
    assert refused.returncode == 1 and "check=weights_from" in refused.stderr and "not a screen root" in refused.stderr
    old = rootbuilder.screen_root(tmp_path / "old", [rootbuilder.mm("mm")])
    refused = cli("inventory", root, "--emit-manifest", tmp_path / "d.yaml", "--from", source, "--weights-from", old)
    assert refused.returncode == 1 and "no IR-pass cell" in refused.stderr
    assert not (tmp_path / "c.yaml").exists() and not (tmp_path / "d.yaml").exists()
    alone = cli("inventory", root, "--weights-from", screened)
    assert alone.returncode != 0 and "goes with --emit-manifest" in alone.stderr


def test_a_template_that_does_not_fit_is_refused_naming_the_fix(tmp_path, cli):
    root, head = checkout_with_three_negs(tmp_path)
    elsewhere = template(tmp_path, "../other-checkout", head)
    done = cli("inventory", root, "--emit-manifest", tmp_path / "a.yaml", "--from", elsewhere)
    assert done.returncode == 1 and "check=checkout" in done.stderr and "flag_gems_checkout -> path" in done.stderr
    (tmp_path / "sub").mkdir()
    beside = cli("inventory", root, "--emit-manifest", tmp_path / "sub" / "a.yaml", "--from", template(tmp_path, root.name, head))
    assert beside.returncode == 1 and "check=out" in beside.stderr and "not beside" in beside.stderr
    broken = template(tmp_path, root.name, head, timer="stopwatch")
    invalid = cli("inventory", root, "--emit-manifest", tmp_path / "b.yaml", "--from", broken)
    assert invalid.returncode == 2 and "suite-template.yaml:12:" in invalid.stderr and "timer -> kind" in invalid.stderr
    assert not (tmp_path / "a.yaml").exists() and not (tmp_path / "b.yaml").exists()


def test_names_stay_unique_and_valid_whatever_the_functions_are_called():
    rows = [upstream.Item("benchmark/test_x_perf.py", function, 1, "add", "add", "", None, False)
            for function in ("test_add_benchmark", "test_perf_add", "test_Add_Ünusual")]
    rows.append(upstream.Item("benchmark/test_y_perf.py", "test_add", 1, "add", "add", "", None, False))
    made, left_out, covered, dismissed = suite.candidates(
        suite.units(rows), [{"name": "add-y", "op": "add", "provider": "x"}], Inventory({}, {}, {}))
    names = [workload["name"] for _, workload in made]
    # the template's add-y (another provider) covers nothing but keeps its name
    assert names == ["add-add_benchmark", "add-perf_add", "add-add__nusual", "add-y-2"]
    assert [workload.get("benchmark") for _, workload in made][::3] == ["benchmark/test_x_perf.py::test_add_benchmark",
                                                                         "benchmark/test_y_perf.py"]
    assert (left_out, covered, dismissed) == ([], 0, 0)


def test_split_above_emits_a_heavy_workload_as_one_per_dtype_it_ran(tmp_path, cli):
    """``--split-above SECONDS``: an emitted workload the root weighs heavier than that is emitted as one
    workload per dtype its IR-pass cell wrote rows for, ``<name>-<dtype>``, each weighing its share (an
    estimate); the template's own workloads stay as written, and one that ran a single dtype stays whole;
    the header says which and why."""
    root, head = checkout_with_three_negs(tmp_path)
    source = template(tmp_path, root.name, head)
    screened = rootbuilder.screen_root(tmp_path / "roots", [rootbuilder.pointwise("neg-plain", "neg"),
                                                             rootbuilder.pointwise("abs", "abs")],
                                       rootbuilder.Options(ir_pass=True, backend="cpu"))
    rows, _ = RunRoot(screened).status()
    heavier = {name: round(max(r.elapsed_s for r in rows if r.workload == name and r.round == 0), 3) for name in ("neg-plain", "abs")}
    ran = tuple(dict.fromkeys(r["dtype"] for r in canonical.read_json(
        screened / "cells" / "neg-plain" / "r0" / "baseline" / "rows.json")["rows"]))
    assert len(ran) >= 2, ran
    out = tmp_path / "split.yaml"
    done = cli("inventory", root, "--emit-manifest", out, "--from", source, "--weights-from", screened,
               "--split-above", str(heavier["neg-plain"] / 2))
    assert done.returncode == 0, done.stderr
    got = {w["name"]: (w.get("dtypes"), w.get("weight_s")) for w in yamlio.load(out)[0]["workloads"]}
    share = round(heavier["neg-plain"] / len(ran), 3)
    assert {name: got.get(name) for name in (f"neg-plain-{d}" for d in ran)} == {f"neg-plain-{d}": ([d], share) for d in ran}
    assert "neg-plain" not in got and got["abs"] == (["float16"], heavier["abs"]), "the template's own: as written"
    assert got["neg-strided"] == (None, None), "weighed by nothing: whole"
    assert f"# neg-plain ({heavier['neg-plain']:.0f} s) split by dtype: {', '.join(ran)}" in out.read_text()
    assert cli("validate", out).returncode == 0
    # one dtype: nothing to split it by, said
    assert suite.split_heavy(({"name": "x", "weight_s": 9.0, "dtypes": ["float16"]},), 1.0, {}).notes == (
        "x (9 s) left whole: it ran 1 dtype(s)",)
    alone = cli("inventory", root, "--emit-manifest", tmp_path / "e.yaml", "--from", source, "--split-above", "5")
    assert alone.returncode != 0 and "goes with --emit-manifest OUT --from TEMPLATE --weights-from ROOT" in alone.stderr


def test_a_sharded_screens_roots_weigh_as_one_and_its_split_parts_come_back_whole_or_split_as_measured(tmp_path, cli):
    """``--weights-from`` the roots of one sharded screen of a weighted manifest: the roots read as one (the header
    names each); a workload the screen ran split by dtype (``<name>-<dtype>``, ``dtypes: [<dtype>]``) comes back whole
    weighing the sum of its parts, and split again with ``--split-above`` each part weighs what the root measured
    of it, not a share; a workload two of the roots hold is refused by name."""
    root, head = checkout_with_three_negs(tmp_path)
    source = template(tmp_path, root.name, head)
    cpu = rootbuilder.Options(ir_pass=True, backend="cpu")
    one = rootbuilder.screen_root(tmp_path / "a", [rootbuilder.pointwise("neg-plain-float16", "neg", dtypes=("float16",)),
                                                   rootbuilder.pointwise("neg-plain-float32", "neg", dtypes=("float32",))],
                                  cpu, name="shard1")
    two = rootbuilder.screen_root(tmp_path / "b", [rootbuilder.pointwise("neg-strided", "neg")],
                                  rootbuilder.Options(ir_pass=True, backend="cpu"), name="shard2")
    rows = [r for shard in (one, two) for r in RunRoot(shard).status()[0] if r.round == 0]
    heavier = {name: round(max(r.elapsed_s for r in rows if r.workload == name), 3)
               for name in ("neg-plain-float16", "neg-plain-float32", "neg-strided")}
    whole = round(heavier["neg-plain-float16"] + heavier["neg-plain-float32"], 3)

    out = tmp_path / "weighed.yaml"
    done = cli("inventory", root, "--emit-manifest", out, "--from", source, "--weights-from", one, two)
    assert done.returncode == 0, done.stderr
    got = {w["name"]: (w.get("dtypes"), w.get("weight_s")) for w in yamlio.load(out)[0]["workloads"]}
    assert got["neg-plain"] == (None, whole) and got["neg-strided"] == (None, heavier["neg-strided"])
    assert got["neg-unary_pointwise"] == (None, None) and "neg-plain-float16" not in got
    text = out.read_text()
    assert (f"of each workload in shard1 (receipt {canonical.sha256_file(one / 'receipt.json')}), "
            f"shard2 (receipt {canonical.sha256_file(two / 'receipt.json')})") in text
    assert (f"# neg-plain ({whole:.0f} s): the sum of its parts' seconds, float16 {heavier['neg-plain-float16']:.0f} s, "
            f"float32 {heavier['neg-plain-float32']:.0f} s") in text
    assert cli("validate", out).returncode == 0

    split = tmp_path / "split.yaml"
    done = cli("inventory", root, "--emit-manifest", split, "--from", source, "--weights-from", one, two,
               "--split-above", str(whole - 1))
    assert done.returncode == 0, done.stderr
    got = {w["name"]: (w.get("dtypes"), w.get("weight_s")) for w in yamlio.load(split)[0]["workloads"]}
    assert {name: got.get(name) for name in ("neg-plain-float16", "neg-plain-float32")} == {
        "neg-plain-float16": (["float16"], heavier["neg-plain-float16"]),
        "neg-plain-float32": (["float32"], heavier["neg-plain-float32"])}, "measured apart, not a share"
    assert "neg-plain" not in got and "split by dtype as the root ran it: float16 " in split.read_text()
    assert cli("validate", split).returncode == 0

    again = rootbuilder.screen_root(tmp_path / "c", [rootbuilder.pointwise("neg-strided", "neg")], cpu, name="other")
    refused = cli("inventory", root, "--emit-manifest", tmp_path / "r.yaml", "--from", source, "--weights-from", two, again)
    assert refused.returncode == 1 and "check=weights_from" in refused.stderr
    assert f"neg-strided is in {two} and in {again}" in refused.stderr and not (tmp_path / "r.yaml").exists()
