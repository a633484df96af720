"""Two sealed roots of one manifest, cell by cell: is their generated code the same, and did their
tuners pick the same configs? The check behind "the same verdicts" across runs (one card against
two, batch bound 1 against 4): the classes come from each root's report; this compares the IR.

    python tests/bench/crossroot.py ROOT_A ROOT_B [--stage ttgir --stage sass] > crossroot.md

Each cell present in both roots (same workload, round and cell) is compared per stage with the
IR rule the classifier uses (`campaign.judging.irevidence.same_code`): ``equal``, ``equal up to
unpaired specialisations`` (named), or ``differ``. Then, for the round-1 baseline of each
workload, the config run per (kernel, key) in each root (chosen where it recorded, injected where
it replayed a pinned recording): a replaying cell's code differs between roots where these do.
Reads the roots only.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from campaign.contract import canonical
from campaign.contract.artifacts import AUTOTUNE_CORRECTNESS_FILE, AUTOTUNE_FILE, IR_DIR
from campaign.contract.cellfiles import AutotuneFile
from campaign.judging.irevidence import read_cell_ir, same_code


def cells(root: Path) -> list[tuple[str, str, str]]:
    """(workload, round, cell) of every cell with an ir/ folder; a set-aside interrupted attempt is not a cell."""
    found = sorted(p.parent.relative_to(root / "cells").parts for p in (root / "cells").glob(f"*/*/*/{IR_DIR}"))
    return [tuple(parts) for parts in found if ".interrupted-" not in parts[2]]


def compare_ir(a: Path, b: Path, stages: list[str]) -> list[str]:
    lines = ["| workload | round | cell | stage | variants A / B | code |", "| --- | --- | --- | --- | --- | --- |"]
    shared = sorted(set(cells(a)) & set(cells(b)))
    for workload, round_, cell in shared:
        for stage in stages:
            first = read_cell_ir(a / "cells" / workload / round_ / cell / IR_DIR, stage)
            second = read_cell_ir(b / "cells" / workload / round_ / cell / IR_DIR, stage)
            if first.fingerprint is None or second.fingerprint is None:
                verdict = "no IR of this stage on a side"
            else:
                rule = same_code(first, second, ("A", "B"))
                verdict = "differ" if rule is None else ("equal" if rule == () else "equal up to " + "; ".join(rule))
            lines.append(f"| {workload} | {round_} | {cell} | {stage} | {len(first.variants)} / {len(second.variants)} "
                         f"| {verdict} |")
    only = sorted(set(cells(a)) ^ set(cells(b)))
    if only:
        lines.append("")
        lines.append("Cells in one root only: " + ", ".join("/".join(c) for c in only))
    return lines


def winners(folder: Path, name: str) -> dict:
    """The config run per (kernel, key): what a recording cell chose, what a replaying one injected."""
    path = folder / name
    if not path.is_file():
        return {}
    data = AutotuneFile.model_validate(canonical.read_json(path))
    return {(e.kernel, e.key): e.config for e in data.entries + data.fallbacks}


def compare_winners(a: Path, b: Path) -> list[str]:
    lines = ["| workload | cell | session | keys | same winner | differing keys |", "| --- | --- | --- | --- | --- | --- |"]
    for workload, round_, cell in sorted(set(cells(a)) & set(cells(b))):
        if (round_, cell) != ("r1", "baseline"):
            continue
        for name, session in ((AUTOTUNE_FILE, "benchmark"), (AUTOTUNE_CORRECTNESS_FILE, "correctness")):
            first = winners(a / "cells" / workload / round_ / cell, name)
            second = winners(b / "cells" / workload / round_ / cell, name)
            if not first and not second:
                continue
            keys = sorted(set(first) | set(second))
            same = [k for k in keys if first.get(k) == second.get(k)]
            differing = ", ".join(f"`{k[1]}`" for k in keys if k not in same) or "none"
            lines.append(f"| {workload} | {round_}/{cell} | {session} | {len(keys)} | {len(same)} | {differing} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--stage", action="append", dest="stages")
    args = parser.parse_args()
    stages = args.stages or ["ttgir"]
    print(f"# Cross-root comparison\n\nA: `{args.a.name}`\nB: `{args.b.name}`\n")
    print("## Generated code per cell\n")
    print("\n".join(compare_ir(args.a, args.b, stages)))
    print("\n## Configs run by each round-1 baseline (recorded or replayed)\n")
    print("\n".join(compare_winners(args.a, args.b)))


if __name__ == "__main__":
    main()
