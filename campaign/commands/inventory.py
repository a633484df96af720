"""`campaign inventory CHECKOUT [--out FILE] [--collect]`: a FlagGems checkout's benchmark items as a table.

Read from the files (`campaign.planning.upstream`): one row per (item, op mark) with the op
name, the Benchmark class, the key of core_shapes.yaml FlagGems' lookup lands on and its
shape count, and the reason when ops/dismiss_upstream.csv sets the item aside. With
``--collect`` (on a host where flag_gems imports) ``pytest --collect-only`` runs over the
checkout's benchmark/ in a child process and each row says whether collection found the
item with that mark (``verified``: yes / no, or ``collection error`` where its file did not
import: flag_gems missing is the usual cause); without it the column says ``not run``.
The table is CSV, or with ``--format json`` `campaign.contract.outputs.InventoryOutput`
(schemas/inventory.schema.json); written with ``--out``, never over an existing file; stdout otherwise.

``--emit-manifest OUT --from TEMPLATE`` writes instead a manifest of the whole suite: the template
(sources with this checkout, device, switch, timer, rounds, defaults, and any workloads of its own,
its comments kept) with one ``provider: flaggems_upstream`` workload per runnable item of the same
scan (`campaign.planning.suite`), the items not emitted as comments with their reasons. OUT is
written beside the template, so the relative paths it names keep their meaning, and never over a file.
``--weights-from ROOT...`` (a sealed screen root of the suite, or the roots of one sharded screen) gives
each workload they hold (the template's own and the emitted) ``weight_s``: the heavier of its IR-pass cells'
seconds there, so the next screen's IR-pass queues hand out the heavy workloads first
(`campaign.running.batching.heavier_first`) and shards weigh them; one they ran split by dtype weighs the sum
of its parts (`campaign.planning.screenweights`). With
``--split-above SECONDS`` an emitted workload heavier than that is emitted as one workload per dtype its
cells ran there (`campaign.planning.suite.split_heavy`): one IR-pass cell is one process, and the
heaviest bounds the pass however many lanes it has.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from campaign.contract import canonical, toolenv, yamlio, yamlwrite
from campaign.contract.artifacts import CODE_PATH_VARIABLES
from campaign.contract.canonical import read_json
from campaign.contract.cellenv_rules import PINNED
from campaign.contract.errors import EXIT_OK, INVENTORY_REFUSED, InputError, Refused
from campaign.contract.outputs import OUTPUT_VERSION, InventoryItem, InventoryOutput
from campaign.contract.platforms import visibility_variables
from campaign.planning import checkout, harness, inventory, screenweights, suite, upstream
from campaign.planning.upstreamtargets import NO_SRC_PATH

COLUMNS = ("file", "function", "param_index", "mark", "op_name", "bench_class", "shape_key", "shapes",
           "dismissed", "verified")
COLLECT_TIMEOUT_S = 1800
# what the collecting pytest inherits: where the installed packages and the device are found
INVENTORY_KEEPS = (*CODE_PATH_VARIABLES, "TMPDIR", "GEMS_VENDOR", "CUDA_DEVICE_ORDER", *visibility_variables())
EXAMPLE = ("examples:\n  campaign inventory ~/FlagGems --out inventory.csv\n  campaign inventory ~/FlagGems --format json\n"
           "  campaign inventory ~/FlagGems --emit-manifest s.yaml --from t.yaml")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkout", type=Path, help="a FlagGems source checkout")
    parser.add_argument("--out", type=Path, help="write the table here (refused if it exists)")
    parser.add_argument("--format", choices=("csv", "json"), default="csv",
                        help="CSV (default) or JSON (schemas/inventory.schema.json)")
    parser.add_argument("--collect", action="store_true",
                        help="verify the items with pytest --collect-only (needs flag_gems importable: a device host)")
    parser.add_argument("--emit-manifest", type=Path, metavar="OUT",
                        help="write a manifest of every runnable item instead of the table (refused if it exists)")
    parser.add_argument("--from", dest="template", type=Path, metavar="TEMPLATE",
                        help="with --emit-manifest: the manifest whose sources, device, switch, timer, rounds and "
                             "defaults (and own workloads) the emitted one keeps")
    parser.add_argument("--weights-from", type=Path, nargs="+", metavar="ROOT",
                        help="with --emit-manifest: a sealed screen root, or the roots of one sharded screen; each "
                             "workload they hold gets weight_s, the heavier of its IR-pass cells' seconds there (the IR "
                             "pass hands heavier workloads out first), one they ran split by dtype the sum of its parts")
    parser.add_argument("--split-above", type=float, metavar="SECONDS",
                        help="with --weights-from: an emitted workload heavier than this is emitted as one workload per "
                             "dtype it ran there (its IR-pass cell, one process, bounds the pass however many lanes)")


def collected(root: Path) -> tuple[dict[str, set[str]], set[str]]:
    """(node id without its [params] -> the marks pytest found on it, the files whose collection
    failed), over the checkout's benchmark/."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "collected.json"
        argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "campaign.plugins.upstream_collect",
                "--campaign-collect-out", str(out), *NO_SRC_PATH, f"--rootdir={root}", str(root / "benchmark")]
        # collected as a cell's session collects it: none of the host's installed plugins loaded, and
        # the tool environment (`campaign.contract.toolenv`) with what finds the installed packages
        with toolenv.clean(os.environ, keep=INVENTORY_KEEPS) as env:
            env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = PINNED["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
            done = subprocess.run(argv, cwd=scratch, env=env, capture_output=True, text=True,
                                  timeout=COLLECT_TIMEOUT_S, stdin=subprocess.DEVNULL)
        if not out.is_file():
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
            raise Refused(INVENTORY_REFUSED, "collect", f"{' '.join(argv)}: exit {done.returncode}, nothing written:\n{tail}")
        written = read_json(out)
        found: dict[str, set[str]] = {}
        for entry in written["items"]:
            found.setdefault(entry["node"].split("[", 1)[0], set()).update(entry["marks"])
    return found, {error.split("::", 1)[0] for error in written["errors"]}


def items(root: Path, known: inventory.Inventory, verified: dict[str, set[str]] | None,
          errors: set[str] = frozenset()) -> tuple[list[InventoryItem], list[str]]:
    """One row per (item, op mark), and the scan's notes."""
    found, notes = upstream.scan(root)
    shape_path = root / checkout.SHAPE_FILE
    shapes = yamlio.load(shape_path)[0] if shape_path.is_file() else {}
    if not isinstance(shapes, dict):
        raise InputError(f"{shape_path}: not a mapping of keys to shape sets")
    bases = upstream.class_bases(root)
    rows = []
    for item in found:
        key = upstream.shape_key(item.op_name, item.bench_class, shapes, bases)
        state = ("not run" if verified is None else "collection error" if item.file in errors else
                 "yes" if item.node in verified and (not item.mark or item.mark in verified[item.node]) else "no")
        rows.append(InventoryItem(
            file=item.file, function=item.function, param_index=item.param_index, mark=item.mark,
            op_name=item.op_name, bench_class=item.bench_class, shape_key=key,
            shapes=len(upstream.shapes_for(key, shapes)) if key != upstream.DEFAULT_SHAPES_KEY else None,
            dismissed=known.upstream_reason(item.node, item.mark) or "", verified=state))
    return rows, notes


def table(root: Path, known: inventory.Inventory, verified: dict[str, set[str]] | None,
          errors: set[str] = frozenset()) -> tuple[str, list[str]]:
    """The inventory as CSV, and the scan's notes."""
    rows, notes = items(root, known, verified, errors)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(("" if value is None else value for value in (getattr(row, name) for name in COLUMNS)))
    return buffer.getvalue(), notes


def emit(args: argparse.Namespace, root: Path, known: inventory.Inventory) -> int:
    """The template grown by a workload per runnable item, written to OUT (`campaign.planning.suite`)."""
    out, template = args.emit_manifest, args.template
    if template is None or args.out is not None or args.collect or args.format != "csv":
        raise InputError("--emit-manifest OUT takes --from TEMPLATE, and neither --out, --format nor --collect")
    weights = screenweights.read(args.weights_from) if args.weights_from is not None else None
    if out.exists():
        raise Refused(INVENTORY_REFUSED, "out", f"{out}: exists; an emitted manifest is never overwritten")
    if out.absolute().parent.resolve() != template.absolute().parent.resolve():
        raise Refused(INVENTORY_REFUSED, "out", f"{out}: not beside {template}; write it in {template.parent} "
                                                  "so the paths the template names relative to itself keep their meaning")
    data, document = yamlio.load(template)
    named = ((data.get("sources") or {}).get("flag_gems_checkout") or {}).get("path") if isinstance(data, dict) else None
    if named is None or checkout.locate(template, named) != root:
        raise Refused(INVENTORY_REFUSED, "checkout", f"{template}: sources -> flag_gems_checkout -> path is {named!r}, "
                                                       f"not {args.checkout}: name the checkout the template pins")
    found, notes = upstream.scan(root)
    planned = suite.plan(data, document, template, found, known)
    emitted, weighed_by = weighed(args, planned.workloads, document, weights)
    if not planned.workloads:
        raise Refused(INVENTORY_REFUSED, "emit", f"{root}: no item left to emit beside {template}'s own workloads "
                                                   f"({len(planned.left_out)} not emitted: {'; '.join(planned.left_out[:3])})")
    lead = [f"not emitted: {len(planned.left_out)} of the {planned.units} units (one op mark in one benchmark function "
            f"each); the {len(planned.workloads)} emitted follow", *planned.left_out] if planned.left_out else []
    head = (f"# Emitted by `campaign inventory {args.checkout} --emit-manifest {out} --from {template}`: "
            f"{planned.items} items of the checkout,\n# {planned.units} units, {len(planned.workloads)} emitted. "
            "Edit the template and emit again, not this file.\n" + weighed_by)
    text = head + yamlwrite.extended(document, "workloads", emitted, lead)
    try:
        with open(out, "x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise Refused(INVENTORY_REFUSED, "out", f"{out}: exists; an emitted manifest is never overwritten") from None
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"{out}: {len(planned.workloads)} workloads emitted for {planned.units} units ({planned.items} items) of {root}; "
          f"{planned.covered} covered by the template's own workloads, {planned.dismissed} dismissed, "
          f"{planned.refused} refused by prepare's checks (written as comments with their reasons)")
    return EXIT_OK


def weighed(args: argparse.Namespace, workloads: tuple[dict, ...], document,
            weights: Optional[screenweights.Weights]) -> tuple[list[dict], str]:
    """The emitted workloads with the roots' weights (the template's own weighed in place, comments kept),
    the heavy ones split by dtype with ``--split-above``; the header lines saying so."""
    if weights is None:
        return list(workloads), ""
    emitted, notes = [], []
    for workload in workloads:
        done, note = screenweights.weigh(workload, weights)
        emitted.append(done)
        notes += [note] if note else []
    for own in document.get("workloads") or []:
        done, note = screenweights.weigh(dict(own), weights)
        if "weight_s" in done:
            own["weight_s"] = done["weight_s"]
        notes += [note] if note else []
    header = weights.header + "".join(f"# {note}\n" for note in notes)
    if args.split_above is None:
        return emitted, header
    ran = screenweights.ran_dtypes(weights, {w["name"] for w in emitted})
    split = suite.split_heavy(tuple(emitted), args.split_above, ran, weights.parts)
    return list(split.workloads), header + ("".join(f"# {note}\n" for note in split.notes) if split.notes else
                                            f"# no emitted workload weighs more than {args.split_above:g} s: none split by dtype\n")


def main(args: argparse.Namespace) -> int:
    root = args.checkout.resolve()
    if upstream.layout(root) is None:
        raise InputError(f"{args.checkout}: no benchmark/performance_utils.py (5.0.2) or benchmark/base.py (5.3+): "
                         "not a FlagGems checkout")
    known = inventory.load(harness.PROJECT_ROOT / "ops")
    if args.split_above is not None and (args.weights_from is None or args.split_above <= 0):
        raise InputError("--split-above SECONDS (more than 0) splits what --weights-from ROOT weighs: "
                         "it goes with --emit-manifest OUT --from TEMPLATE --weights-from ROOT")
    if args.emit_manifest is not None:
        return emit(args, root, known)
    if args.weights_from is not None:
        raise InputError("--weights-from ROOT weighs an emitted manifest: it goes with --emit-manifest OUT --from TEMPLATE")
    verified, errors = collected(root) if args.collect else (None, set())
    if args.format == "json":
        rows, notes = items(root, known, verified, errors)
        text = canonical.dumps(InventoryOutput(schema_version=OUTPUT_VERSION, checkout=str(root),
                                               layout=upstream.layout(root), items=tuple(rows)).model_dump(mode="json"))
    else:
        text, notes = table(root, known, verified, errors)
    for error in sorted(errors):
        print(f"note: {error}: collection failed (its items say 'collection error')", file=sys.stderr)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.out is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        with open(args.out, "x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise Refused(INVENTORY_REFUSED, "out", f"{args.out}: exists; an inventory is never overwritten") from None
    rows = len(json.loads(text)["items"]) if args.format == "json" else text.count("\n") - 1
    print(f"{args.out}: {rows} benchmark items of {root} ({upstream.layout(root)} layout)")
    return EXIT_OK
