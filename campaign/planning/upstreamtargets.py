"""The targets of a ``provider: flaggems_upstream`` workload: FlagGems' own items in a checkout.

The workload's ``op`` is FlagGems' op mark. Its benchmark is the one file of the checkout's
``benchmark/`` whose items carry the mark (``benchmark:`` names the file or function when
several do), run with ``-m <mark>`` from FlagGems' own conftest, with ``--level`` (the
campaign's ``bench_level``) and ``--mode kernel`` passed and recorded in the targets; its
correctness is FlagGems' ``tests/`` files carrying the mark, run with ``-m <mark>`` (and
``--quick`` where the checkout source asks for it). Both sessions override the checkout's
``pythonpath = src``: the flag_gems that runs is the installed one ``sources.flag_gems`` pins.

An item on ops/dismiss_upstream.csv is left out with its reason; a workload whose every
item is dismissed is refused with the reason unless it gives a reason of its own. A campaign's
``defaults.shape_file`` is passed as FlagGems' ``--shape_file`` in place of core_shapes.yaml,
once prepare has found a key of it for every item the workload runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from campaign.contract import nodeids, regular, yamlio
from campaign.contract.devicerule import version_matches
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest
from campaign.contract.plans import Targets
from campaign.contract.suggest import did_you_mean
from campaign.contract.workloads import Workload
from campaign.planning import checkout, upstream
from campaign.planning.inventory import Inventory
from campaign.planning.targets import node_problem

MODE = "kernel"     # do_bench around each call: the only mode whose timed call this project's timer replaces
# FlagGems 5.0.2's --dtypes choices (benchmark/conftest.py): any other dtype is an error there
BENCH_DTYPES = ("float16", "float32", "bfloat16", "int16", "int32", "bool", "complex64")
NO_SRC_PATH = ("-o", "pythonpath=")
# pytest >= 8.4 (9.x on the GPU host) attaches its live-logging null handler to every
# non-propagating logger, FlagGems 5.0.2's recordLogger among them, and the benchmark conftest's
# emit_record_logger then calls that handler's missing `_open`: every item fails after its rows
# are timed (AttributeError, benchmark/conftest.py:36; seen on the H200). The benchmark session
# needs no pytest log capture, so its logging plugin is not loaded.
NO_LOG_CAPTURE = ("-p", "no:logging")


@dataclass(frozen=True)
class Found:
    targets: Targets
    family: str
    notes: tuple[str, ...] = ()


@dataclass
class Problems:
    found: list[tuple[str, tuple, str]] = field(default_factory=list)   # (check, loc, detail)

    def add(self, check: str, loc: tuple, detail: str) -> None:
        self.found.append((check, loc, detail))


@dataclass
class Checkouts:
    """Per-manifest memo: a checkout is checked and scanned once, however many workloads use it."""

    manifest_path: Path
    state: dict[Path, tuple[Optional[str], list[upstream.Item]]] = field(default_factory=dict)
    test_marks: dict[Path, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    def correctness_files(self, checkout_dir: Path, mark: str) -> tuple[str, ...]:
        """The checkout's tests/ files carrying ``mark`` (`upstream.test_marks`, read once per checkout)."""
        if checkout_dir not in self.test_marks:
            self.test_marks[checkout_dir] = upstream.test_marks(checkout_dir)
        return self.test_marks[checkout_dir].get(mark, ())

    def open(self, manifest: Manifest, problems: Problems) -> Optional[tuple[Path, list[upstream.Item]]]:
        source = manifest.sources.flag_gems_checkout
        root = checkout.locate(self.manifest_path, source.path)
        if root not in self.state:
            where = ("sources", "flag_gems_checkout", "path")
            try:
                head = checkout.check(root, source.commit, source.tag, source.digest)
            except checkout.CheckoutProblem as exc:
                problems.add("checkout", where, str(exc))
                self.state[root] = (None, [])
                return None
            _pinned_package(root, head, source.digest is not None, manifest, problems)
            if upstream.layout(root) is None:
                problems.add("checkout", where, f"{root}: neither benchmark/{upstream.LAYOUTS['category']} (5.0.2) "
                                                f"nor benchmark/{upstream.LAYOUTS['per_op']} (5.3+): not a FlagGems checkout")
                self.state[root] = (None, [])
                return None
            items, _ = upstream.scan(root)
            self.state[root] = (head, items)
        head, items = self.state[root]
        return (root, items) if head is not None else None


def _pinned_package(checkout_dir: Path, head: str, plain: bool, manifest: Manifest, problems: Problems) -> None:
    """The checkout against ``sources.flag_gems``: the commit it pins, and the version (the
    checkout's own, `checkout.own_version`), so its benchmark files never time another release."""
    pin = manifest.sources.flag_gems
    if pin is None:
        return
    if pin.commit is not None and (plain or not head.startswith(pin.commit)):
        at = "a plain tree, at no commit" if plain else f"at {head}"
        problems.add("checkout", ("sources", "flag_gems", "commit"),
                     f"the checkout is {at}, the installed flag_gems is pinned at {pin.commit}: "
                     "its benchmark files would time another commit's package")
    own = checkout.own_version(checkout_dir)
    if pin.version is not None and own is not None and not version_matches(pin.version, own[0]):
        problems.add("checkout", ("sources", "flag_gems", "version"),
                     f"the checkout {checkout_dir} is FlagGems {own[0]} ({own[1]}), sources.flag_gems pins {pin.version}: "
                     f"its benchmark files would time another release's package; check out FlagGems {pin.version} "
                     f"there, or pin sources.flag_gems to {own[0]} (and install that)")


def _benchmark(checkout_dir: Path, items: list[upstream.Item], workload: Workload, inventory: Inventory,
               loc: tuple, problems: Problems) -> Optional[tuple[str, list[str]]]:
    """(target relative to the checkout, notes) of the workload's benchmark items."""
    mark = workload.op
    marked = [item for item in items if item.mark == mark]
    if workload.benchmark is not None:
        # a file names its items, a function its own, a node id (test_x[4096]) the function's item
        marked = [i for i in marked if nodeids.belongs(i.node, [workload.benchmark])]
    if not marked:
        known = sorted({item.mark for item in items if item.mark})
        hint = did_you_mean(mark, known)
        where = f" in {workload.benchmark}" if workload.benchmark else ""
        problems.add("benchmark_target", loc + (("benchmark",) if workload.benchmark else ("op",)),
                     f"no benchmark item of {checkout_dir}{where} carries the op mark {mark!r}{hint}")
        return None
    reasons = {item.node: inventory.upstream_reason(item.node, mark) for item in marked}
    kept = marked if workload.reason is not None else [i for i in marked if reasons[i.node] is None]
    notes = [f"{node} left out for {mark}: dismissed ({why})" for node, why in sorted(reasons.items())
             if why is not None and workload.reason is None]
    if not kept:
        detail = "; ".join(f"{node}: {why}" for node, why in sorted(reasons.items()))
        problems.add("dismissed", loc + ("op",), f"every benchmark item of {mark} is on ops/dismiss_upstream.csv "
                                                 f"({detail}); give a reason to run it anyway")
        return None
    files = sorted({item.file for item in kept})
    if len(files) > 1:
        problems.add("benchmark_target", loc + ("op",), f"{mark} is benchmarked by {len(files)} files "
                     f"({', '.join(files)}): name one as benchmark:")
        return None
    every = sorted({item.function for item in marked if item.file == files[0]})
    chosen = sorted({item.function for item in kept})
    if chosen == every and not (workload.benchmark and "::" in workload.benchmark):
        return files[0], notes
    if len(chosen) == 1:
        given = nodeids.parse(workload.benchmark) if workload.benchmark else None
        if given is not None and given.params is not None:      # one parametrization of it, as named
            missing, note = node_problem(checkout_dir, workload.benchmark)
            if missing:
                problems.add("benchmark_target", loc + ("benchmark",), missing)
                return None
            return workload.benchmark, notes + ([note] if note else [])
        return f"{files[0]}::{chosen[0]}", notes
    problems.add("benchmark_target", loc + ("op",), f"{mark} in {files[0]}: functions {', '.join(chosen)} "
                 "remain after dismissals; name one as benchmark: file.py::function")
    return None


def _correctness(checkout_dir: Path, workload: Workload, checkouts: Checkouts, loc: tuple,
                 problems: Problems) -> Optional[tuple[str, ...]]:
    """Absolute correctness targets: the manifest's node ids (relative to the checkout) or the
    tests/ files that carry the mark."""
    given = workload.correctness.node_ids if workload.correctness else None
    if given:
        out = []
        for n, node in enumerate(given):
            file_part = node.partition("::")[0]
            if Path(file_part).is_absolute() or ".." in Path(file_part).parts or not (checkout_dir / file_part).is_file():
                problems.add("correctness_target", loc + ("correctness", "node_ids", n),
                             f"{file_part}: no such file in the checkout {checkout_dir} (node ids are relative to it)")
            out.append(f"{checkout_dir}/{node}")
        return tuple(out)
    files = checkouts.correctness_files(checkout_dir, workload.op)
    if not files:
        problems.add("correctness_target", loc + ("op",), f"no file of {checkout_dir}/tests carries the mark {workload.op!r}; "
                                                          "give correctness node_ids (relative to the checkout)")
        return None
    return tuple(f"{checkout_dir}/{name}" for name in files)


def _shape_file(checkout_dir: Path, items: list[upstream.Item], target: str, mark: str, path: Path,
                problems: Problems) -> bool:
    """Whether the campaign's shape file gives every item of the target its own shapes in
    FlagGems' lookup (op name, then the Benchmark class chain): a key it lacks sends FlagGems
    to its DEFAULT_SHAPES (up to 2**30 elements), which are not the user's trace."""
    where = ("defaults", "shape_file")
    try:
        table = yamlio.load(path)[0]
    except InputError as exc:
        problems.add("shape_file", where, str(exc))
        return False
    if not isinstance(table, dict):
        problems.add("shape_file", where, f"{path}: not a mapping of op or Benchmark class -> {{shapes: [...]}}")
        return False
    bases = upstream.class_bases(checkout_dir)
    ok = True
    for item in items:
        if item.mark != mark or not nodeids.belongs(item.node, [target]):
            continue
        key = upstream.shape_key(item.op_name, item.bench_class, table, bases)
        if key == upstream.DEFAULT_SHAPES_KEY:
            chain = " -> ".join(upstream.class_chain(item.bench_class, bases)) or "no class shown"
            problems.add("shape_file", where, f"{path} has no key for {item.node} ({mark}): neither its op name "
                         f"{item.op_name or '(not shown)'} nor its Benchmark classes ({chain}); FlagGems would run "
                         "its DEFAULT_SHAPES")
            ok = False
        elif not upstream.shapes_for(key, table):
            problems.add("shape_file", where, f"{path}: {key}: FlagGems reads {{shapes: [[...], ...]}} there")
            ok = False
    return ok


def resolve_workload(manifest: Manifest, workload: Workload, index: int, inventory: Inventory,
                     checkouts: Checkouts, problems: Problems) -> Optional[Found]:
    loc = ("workloads", index)
    opened = checkouts.open(manifest, problems)
    if opened is None:
        return None
    root, items = opened
    if workload.shapes is not None:
        problems.add("shapes", loc + ("shapes",), "FlagGems' Benchmark reads its shapes from the shape file "
                                                  "(shape_mode upstream); a subset cannot narrow them")
    bad = [d for d in workload.dtypes or () if d not in BENCH_DTYPES]
    if bad:
        problems.add("dtypes", loc + ("dtypes",), f"{', '.join(bad)}: not among FlagGems' --dtypes choices "
                                                  f"({', '.join(BENCH_DTYPES)})")
    benchmark = _benchmark(root, items, workload, inventory, loc, problems)
    correctness = _correctness(root, workload, checkouts, loc, problems)
    if benchmark is None or correctness is None:
        return None
    target, notes = benchmark
    mark = workload.op
    level = manifest.defaults.bench_level
    shape_file = (str(checkout.locate(checkouts.manifest_path, manifest.defaults.shape_file))
                  if manifest.defaults.shape_file else None)
    if shape_file is not None:
        why = regular.not_regular(Path(shape_file))
        if why is not None:
            problems.add("shape_file", ("defaults", "shape_file"), f"{shape_file}: {why}")
            return None
        if not _shape_file(root, items, target, mark, Path(shape_file), problems):
            return None
    shape_args = ("--shape_file", shape_file) if shape_file else ()
    dtypes = tuple(arg for d in workload.dtypes or () for arg in ("--dtypes", d))
    quick = ("--quick",) if manifest.sources.flag_gems_checkout.quick else ()
    k = workload.correctness.k if workload.correctness else None
    targets = Targets(
        benchmark=f"{root}/{target}",
        correctness=correctness[0],
        correctness_node_ids=correctness if len(correctness) > 1 or (workload.correctness and workload.correctness.node_ids) else None,
        correctness_k=k,
        checkout=str(root),
        benchmark_options=("-m", mark, "--level", level, "--mode", MODE, *dtypes, *shape_args, *NO_SRC_PATH,
                           *NO_LOG_CAPTURE),
        correctness_options=("-m", mark, *quick, *NO_SRC_PATH),
        shape_file=shape_file,
    )
    family = Path(target.partition("::")[0]).stem.removeprefix("test_").removesuffix("_perf")
    return Found(targets=targets, family=family, notes=tuple(notes))
