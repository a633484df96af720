"""The targets of a ``provider: pytest`` workload whose file is the user's own, outside the project.

Every target is made absolute (relative ones are read from the manifest's folder), checked
against the file with pytest's rootdir for it as the root (`campaign.planning.ownfile.rootdir`),
and the files a cell of it reads are checked against what such a file must not do
(`campaign.planning.ownrules`). Correctness node ids are the file's own tests: they name the same
file or another under the same rootdir, written as the benchmark is (absolute, ``./`` or ``../``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from campaign.contract import regular
from campaign.contract.plans import Targets
from campaign.contract.workloads import Workload, own_path
from campaign.planning import ownfile, ownrules, targets

NOT_DIGESTED = ("imports not digested (installed packages, or code prepare cannot see; torch's and triton's "
                "versions are in each cell's run identity)")


# The kernel's views of the machine: a file there is the reader's own state (/proc/self/environ is
# the cell's environment) or a device, never the same bytes at prepare and in each cell.
PSEUDO = ("/proc", "/sys", "/dev")


def file_problem(path: Path) -> Optional[str]:
    """Why ``path`` cannot be a file a cell reads (no such file, a loop of links, a FIFO, under /proc), or None."""
    why = regular.not_regular(path)
    if why is not None:
        return why
    for seen in (str(path), os.path.realpath(path)):
        top = next((top for top in PSEUDO if seen == top or seen.startswith(top + "/")), None)
        if top is not None:
            return f"is under {top}: the kernel's view of a process or device, not a file a digest can hold"
    return None


@dataclass
class Own:
    """What resolving one workload found: its targets, or the problems as (check, key path, detail)."""

    targets: Optional[Targets] = None
    notes: list[str] = field(default_factory=list)
    problems: list[tuple[str, tuple, str]] = field(default_factory=list)


def _node(manifest_path: Path, rootdir: Path, node: str, own: Own, check: str, loc: tuple) -> Optional[str]:
    """The absolute node id when it resolves under ``rootdir``; otherwise a problem is added."""
    if not own_path(node):
        own.problems.append((check, loc, f"{node}: a file of your own is named from the manifest's folder "
                                         f"(./file.py::test_x) or absolutely, like the benchmark"))
        return None
    node = ownfile.absolute(manifest_path, node)
    file = Path(node.partition("::")[0])
    if (why := file_problem(file)) is not None:
        own.problems.append((check, loc, f"{file}: {why}"))
        return None
    if ownfile.rootdir(file) != rootdir:
        own.problems.append((check, loc, f"{file}: pytest's rootdir for it is {ownfile.rootdir(file)}, not the "
                                         f"benchmark's {rootdir}; one workload's tests run in one pytest tree"))
        return None
    missing, note = targets.node_problem(rootdir, ownfile.relative(rootdir, node))
    if missing:
        own.problems.append((check, loc, f"{rootdir}/{missing}"))
        return None
    if note:
        own.notes.append(f"{rootdir}/{note}")
    return node


def resolve(workload: Workload, manifest_path: Path, compile_only: bool) -> Own:
    """The workload's absolute targets, rootdir and data files, or why not (each problem located)."""
    own = Own()
    file = ownfile.locate(manifest_path, workload.benchmark.partition("::")[0])
    if (why := file_problem(file)) is not None:
        own.problems.append(("benchmark_target", ("benchmark",), f"{file}: {why} (a path starting with ./ "
                                                                 f"or ../ is read from the manifest's folder)"))
        return own
    root = ownfile.rootdir(file)
    benchmark = _node(manifest_path, root, workload.benchmark, own, "benchmark_target", ("benchmark",))
    node_ids = workload.correctness.node_ids if workload.correctness else None
    nodes = tuple(_node(manifest_path, root, node, own, "correctness_target", ("correctness", "node_ids", n))
                  for n, node in enumerate(node_ids or ()))
    data = []
    for n, name in enumerate(workload.data or ()):
        path = ownfile.locate(manifest_path, name)
        if (why := file_problem(path)) is not None:
            own.problems.append(("data", ("data", n), f"{path}: {why} (data paths are read from the "
                                                      f"manifest's folder unless absolute)"))
        data.append(str(path))
    if benchmark is None or None in nodes:
        return own
    k = workload.correctness.k if workload.correctness else None
    correctness = nodes[0].partition("::")[0] if nodes else (benchmark.partition("::")[0] if k else benchmark)
    if k is not None:
        refused, note = targets.keyword_problem(root, ownfile.relative(root, correctness), k)
        own.problems += [("correctness_target", ("correctness", "k"), f"{root}/{refused}")] if refused else []
        own.notes += [f"{root}/{note}"] if note else []
        if refused:
            return own
    found = Targets(benchmark=benchmark, correctness=correctness, correctness_node_ids=nodes or None,
                    correctness_k=k, rootdir=str(root), data=tuple(data))
    read = ownfile.reads(root, (benchmark, correctness, *nodes))
    for path in sorted(p for p in read if p.suffix == ".py" and p.is_file()):
        own.problems += [("own_file", ("benchmark",), line)
                         for line in ownrules.broken(path, path.read_text(encoding="utf-8", errors="replace"), compile_only)]
    missing = ownfile.unresolved(root, read)
    if missing:
        own.notes.append(f"{file}: {NOT_DIGESTED}: {', '.join(missing)}")
    own.targets = found
    return own
