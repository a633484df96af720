"""A later screen's ``weight_s`` from sealed screen roots, for `campaign inventory --emit-manifest
OUT --from TEMPLATE --weights-from ROOT...`: one root, or the roots of a sharded screen read as one.

Each workload a root holds weighs the heavier of its IR-pass cells' seconds there
(`partition.ir_pass_seconds`). A shard set holds each workload once: a workload two of the roots hold
is refused by name (two screens' roots, not one screen's shards).

A screen of a weighted manifest ran its heavy workloads split by dtype (``--split-above``:
`suite.split_heavy` emits ``<name>-<dtype>`` with ``dtypes: [<dtype>]``), and the next emission
names the workload whole again. Those parts are read back: a part is a workload whose manifest
declares exactly one dtype and is named ``<name>-<that dtype>``. An emitted workload the roots do not
hold whole but hold the parts of weighs the sum of its parts' seconds (each part's process paid its
own start and imports, so the sum is an upper estimate), and, split again, each part weighs what the
root measured of it apart, not a share. Without this the re-weighed manifest would name the heaviest
workload whole and unweighed: queued last, and its one cell bounding the pass again.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from campaign.contract import canonical
from campaign.contract.errors import INVENTORY_REFUSED, Refused
from campaign.contract.fields import BASELINE
from campaign.contract.runroot import RunRoot
from campaign.judging import evidence
from campaign.planning import partition

CHECK = "weights_from"


@dataclass(frozen=True)
class Weights:
    seconds: dict[str, float]                     # workload -> its IR-pass seconds, over every root
    parts: dict[str, dict[str, float]]            # a split workload's name -> {dtype: its part's seconds}
    header: str                                   # the emitted file's comment lines naming each root
    roots: tuple[RunRoot, ...]                    # each read once: `ran_dtypes` reads their cells


def _checked(path: Path) -> RunRoot:
    root = RunRoot(path.resolve())
    if root.mode != "screen":
        raise Refused(INVENTORY_REFUSED, CHECK, f"--weights-from {path}: not a screen root (prepare.json "
                                                 "does not say mode screen): it ran no IR pass to weigh")
    if not root.sealed:
        raise Refused(INVENTORY_REFUSED, CHECK, f"--weights-from {path}: not sealed (its seconds are not final)")
    return root


def _parts(root: RunRoot, seconds: dict[str, float]) -> dict[str, tuple[str, str]]:
    """part name -> (the whole's name, its dtype), for each weighed workload the root's manifest declares
    with one dtype and names ``<whole>-<dtype>``."""
    out = {}
    for workload in root.manifest.workloads:
        dtypes = tuple(workload.dtypes or ())
        if workload.name in seconds and len(dtypes) == 1 and workload.name.endswith(f"-{dtypes[0]}"):
            out[workload.name] = (workload.name[:-len(dtypes[0]) - 1], dtypes[0])
    return out


def read(paths: Sequence[Path]) -> Weights:
    """The roots' seconds read as one; refused: a root that is no sealed screen, one without an IR pass,
    and a workload two roots hold."""
    seconds: dict[str, float] = {}
    held: dict[str, Path] = {}
    parts: dict[str, dict[str, float]] = {}
    lines, roots = [], []
    for path in paths:
        root = _checked(path)
        roots.append(root)
        rows, _bad = root.status()
        found = partition.ir_pass_seconds([(row.workload, row.round, row.elapsed_s) for row in rows])
        if not found:
            raise Refused(INVENTORY_REFUSED, CHECK, f"--weights-from {path}: no IR-pass cell with seconds "
                                                     "(a screen sealed before the IR pass): nothing to weigh")
        for name in found:
            if name in held:
                raise Refused(INVENTORY_REFUSED, CHECK, f"--weights-from: {name} is in {held[name]} and in {path}: "
                                                         "the roots of one sharded screen hold each workload once")
            held[name] = path
        seconds.update({name: round(value, 3) for name, value in found.items()})
        for part, (whole, dtype) in _parts(root, found).items():
            parts.setdefault(whole, {})[dtype] = round(found[part], 3)
        lines.append(f"{root.path.name} (receipt {canonical.sha256_file(root.receipt_file)})")
    header = (f"# weight_s: the heavier IR-pass cell's seconds of each workload in {', '.join(lines)}; "
              "the IR pass hands heavier workloads out first.\n")
    return Weights(seconds, {whole: dtypes for whole, dtypes in parts.items() if whole not in seconds}, header, tuple(roots))


def weigh(workload: dict, weights: Weights) -> tuple[dict, str]:
    """``workload`` with its weight (its own seconds, else the sum of its parts'), and a note for a summed one."""
    name = workload["name"]
    if name in weights.seconds:
        return {**workload, "weight_s": weights.seconds[name]}, ""
    parts = weights.parts.get(name)
    if not parts:
        return workload, ""
    total = round(sum(parts.values()), 3)
    return {**workload, "weight_s": total}, (f"{name} ({total:.0f} s): the sum of its parts' seconds, "
                                             f"{', '.join(f'{d} {s:.0f} s' for d, s in parts.items())}")


def ran_dtypes(weights: Weights, names: set[str]) -> dict[str, tuple[str, ...]]:
    """The dtypes each named workload's IR-pass baseline cell wrote rows for in the roots, in their first order."""
    return {task.workload: evidence.cell_dtypes(root, task) for root in weights.roots for task in root.matrix.tasks
            if task.workload in names and task.round == 0 and task.cell == BASELINE}
