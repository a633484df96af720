"""Is the IR the CPU screen compiles the IR the card compiles? Fingerprints of two roots, variant by variant.

    python tests/bench/fidelity.py export ROOT [--out prints.json]      # on the machine that holds ROOT
    python tests/bench/fidelity.py compare GPU CPU [--out fidelity.json] [--md fidelity.md]

``export`` reads every IR-pass cell of a root (``cells/<workload>/<round>/<cell>/ir``) at each stage
(ttir, ttgir, llir, ptx, sass) through the classifier's own reader (`campaign.judging.irevidence
.read_cell_ir`: the one normaliser, then sha256 per variant) and writes one line per variant:
workload, cell, stage, kernel, signature, digest. It is small where the root is not (a whole-suite
root is ~1 GB): the card's side travels as this file. ``compare`` takes two such files (or roots)
and writes ``fidelity.json``: one entry per (item, cell, kernel, stage) present on either side of an item
whose every cell has prints on both sides (the summary names each item left out, and the cells it lacks),
``{item, cell, kernel, stage, cpu, gpu, equal, cause}``, where ``cpu``/``gpu`` are the sorted
variant digests and ``cause`` names, mechanically, how the two sets differ:

- ``absent on cpu`` / ``absent on gpu``: the kernel was compiled on one side only (a launch path
  the other side did not take: a device-type branch, data-dependent host logic, a config);
- ``specialisation differs``: the two sides' entry signatures differ (pointer alignment or an
  integer argument's value: Triton specialises on divisibility by 16 and on 1);
- ``variant count differs``: the same signatures, more configs compiled on one side;
- ``content differs``: the same signatures and counts, different code (device properties or
  options the two sides compiled with);
- ``outcome differs (cpu ok, gpu tests_failed)``: the cell's test failed on one side and stopped
  there, so the two sides did not reach the same code; named before any of the above.

With ``--cpu-screen`` (the offline root's screen.tsv) each entry also carries ``screen``, the item's
offline verdict, and a differing entry of a ``NEEDS_CARD`` item has that verdict's reason appended to its
cause: the screen itself sent the item to the card (its offline cells read a kernel result on the host,
or FlagGems handed back to aten), so no offline claim rests on that IR. The summary then adds the share
over the items the screen answers offline, beside (never instead of) the share over all entries.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from campaign.contract.artifacts import IR_DIR
from campaign.contract.runroot import RunRoot
from campaign.contract.verdictnames import NEEDS_CARD
from campaign.judging import screentable
from campaign.judging.irevidence import read_cell_ir

STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")


def ir_cells(root: Path):
    """(workload, cell, ir folder) of every IR-pass cell (round r0) of a root."""
    for ir in sorted((root / "cells").glob(f"*/*/*/{IR_DIR}")):
        workload, round_, cell = ir.parent.relative_to(root / "cells").parts
        if ".interrupted-" in cell or round_ != "r0":
            continue
        yield workload, cell, ir


FINISHED = ("ok", "tests_failed")             # the cell ran its session to the end: its IR is all it compiled


def export(root: Path) -> list[dict]:
    """One line per variant of every finished IR-pass cell; a cell that did not finish (interrupted,
    killed, timed out) holds part of its IR and is left out, named on stderr."""
    latest = RunRoot(root).latest()
    lines = []
    for workload, cell, ir in ir_cells(root):
        row = latest.get(f"{workload}/r0/{cell}")
        if row is None or row.rc_name not in FINISHED:
            sys.stderr.write(f"left out: {workload}/r0/{cell} ({row.rc_name if row else 'no status row'})\n")
            continue
        for stage in STAGES:
            for v in read_cell_ir(ir, stage).variants:
                lines.append({"workload": workload, "cell": cell, "stage": stage, "kernel": v.kernel,
                              "signature": v.signature, "digest": v.digest, "outcome": row.rc_name})
    return lines


def _load(source: Path, status_tsv: Path | None = None) -> list[dict]:
    """A root's lines, or an exported file's; ``status_tsv`` (the root's status.tsv, brought back beside an
    export made before outcomes were written into it) gives each cell's outcome."""
    lines = export(source) if source.is_dir() else json.loads(source.read_text())
    if status_tsv is not None:
        with status_tsv.open(newline="") as handle:
            outcome = {row["task_id"]: row["rc_name"] for row in csv.DictReader(handle, delimiter="\t")}
        for line in lines:
            line["outcome"] = outcome.get(f"{line['workload']}/r0/{line['cell']}", "no status row")
    return lines


def _group(lines: list[dict]) -> tuple[dict, dict]:
    out: dict = defaultdict(list)
    outcomes: dict = {}
    for line in lines:
        out[(line["workload"], line["cell"], line["kernel"], line["stage"])].append((line["signature"] or "", line["digest"]))
        outcomes[(line["workload"], line["cell"])] = line.get("outcome", "ok")
    return out, outcomes


def cause(cpu: list, gpu: list) -> str | None:
    if Counter(cpu) == Counter(gpu):
        return None
    if not cpu:
        return "absent on cpu"
    if not gpu:
        return "absent on gpu"
    if {s for s, _ in cpu} != {s for s, _ in gpu}:
        return "specialisation differs"
    if len(cpu) != len(gpu):
        return "variant count differs"
    return "content differs"


def screen_verdicts(screen_tsv: Path) -> dict[str, tuple[str, str]]:
    """item -> (verdict, note) of an offline root's screen.tsv."""
    return {row["workload"]: (row["verdict"], row["note"]) for row in screentable.parse(screen_tsv.read_text())}


def _cells(grouped: dict) -> dict[str, set[str]]:
    """item -> the cells that have prints on this side."""
    out: dict[str, set[str]] = defaultdict(set)
    for workload, cell, _, _ in grouped:
        out[workload].add(cell)
    return out


def _compared(gpu: dict, cpu: dict) -> set[str]:
    """The items whose every cell has prints on both sides: a cell present on one side only is not compared."""
    on_gpu, on_cpu = _cells(gpu), _cells(cpu)
    return {w for w in on_gpu.keys() & on_cpu.keys() if on_gpu[w] == on_cpu[w]}


def _left_out(gpu: dict, cpu: dict) -> list[str]:
    """Each item left out of the comparison, with the cells only one side has prints of (a cell that ended
    before it compiled anything, or one the export left out as unfinished), so no item drops out unnamed."""
    on_gpu, on_cpu = _cells(gpu), _cells(cpu)
    out = []
    for item in sorted((on_gpu.keys() | on_cpu.keys()) - _compared(gpu, cpu)):
        missing = [f"{side} has no {', '.join(sorted(theirs - ours))}"
                   for side, ours, theirs in (("gpu", on_gpu[item], on_cpu[item]), ("cpu", on_cpu[item], on_gpu[item]))
                   if theirs - ours]
        out.append(f"{item} ({'; '.join(missing)})")
    return out


def _entries(gpu_sides: tuple, cpu_sides: tuple, screen: dict[str, tuple[str, str]] | None) -> list[dict]:
    (gpu, gpu_outcome), (cpu, cpu_outcome) = gpu_sides, cpu_sides
    items = _compared(gpu, cpu)
    entries = []
    for key in sorted(k for k in set(gpu) | set(cpu) if k[0] in items):
        workload, cell, kernel, stage = key
        a, b = sorted(cpu.get(key, [])), sorted(gpu.get(key, []))
        why = cause(a, b)
        outcomes = (cpu_outcome.get((workload, cell)), gpu_outcome.get((workload, cell)))
        if why is not None and outcomes[0] != outcomes[1]:
            # a test that failed on one side stopped there: what it did not reach it did not compile
            why = f"outcome differs (cpu {outcomes[0]}, gpu {outcomes[1]})"
        entry = {"item": workload, "cell": cell, "kernel": kernel, "stage": stage,
                 "cpu": [d for _, d in a], "gpu": [d for _, d in b], "equal": why is None, "cause": why}
        if screen is not None:
            verdict, note = screen.get(workload, ("not screened", ""))
            entry["screen"] = verdict
            if why is not None and verdict == NEEDS_CARD:
                entry["cause"] = f"{why}; {NEEDS_CARD} offline: {note}"
        entries.append(entry)
    return entries


def pair(gpu_lines: list[dict], cpu_lines: list[dict],
         screen: dict[str, tuple[str, str]] | None = None) -> tuple[list[dict], list[str]]:
    """The entries of the items both sides compiled every cell of, and each item left out, named: each
    side's lines grouped once."""
    gpu, cpu = _group(gpu_lines), _group(cpu_lines)
    return _entries(gpu, cpu, screen), _left_out(gpu[0], cpu[0])


def compare(gpu_lines: list[dict], cpu_lines: list[dict], screen: dict[str, tuple[str, str]] | None = None) -> list[dict]:
    return pair(gpu_lines, cpu_lines, screen)[0]


def uncompared(gpu_lines: list[dict], cpu_lines: list[dict]) -> list[str]:
    return pair(gpu_lines, cpu_lines)[1]


def _share(rows: list[dict]) -> str:
    equal = sum(e["equal"] for e in rows)
    return f"{equal} of {len(rows)} ({100 * equal / max(1, len(rows)):.1f} %)"


def _alike(entries: list[dict]) -> list[dict]:
    return [e for e in entries if not (e["cause"] or "").startswith("outcome differs")]


def summary(entries: list[dict], left_out: list[str] | None = None) -> str:
    """The shares, stage by stage and by cause; ``left_out`` (`uncompared`) names each item with prints on
    one side only."""
    items = sorted({e["item"] for e in entries})
    lines = [f"{len(items)} items, {len(entries)} (item, cell, kernel, stage) entries, {_share(entries)} equal; "
             f"where both sides' cells ended alike: {_share(_alike(entries))}"]
    if left_out:
        lines.append(f"not compared: {len(left_out)} item(s) with a cell whose prints only one side has: "
                     + "; ".join(left_out))
    if any("screen" in e for e in entries):
        offline = [e for e in entries if e.get("screen") != NEEDS_CARD]
        card = sorted({e["item"] for e in entries if e.get("screen") == NEEDS_CARD})
        lines.append(f"over the items the screen answers offline ({len({e['item'] for e in offline})}; "
                     f"{len(card)} {NEEDS_CARD}: {', '.join(card) or 'none'}): {_share(offline)} equal; "
                     f"where both sides' cells ended alike: {_share(_alike(offline))}")
    lines += ["", "| stage | entries | equal | % |", "| --- | ---: | ---: | ---: |"]
    for stage in STAGES:
        rows = [e for e in entries if e["stage"] == stage]
        if rows:
            eq = sum(e["equal"] for e in rows)
            lines.append(f"| {stage} | {len(rows)} | {eq} | {100 * eq / len(rows):.1f} |")
    causes = Counter(e["cause"] for e in entries if not e["equal"])
    lines += ["", "| cause | entries |", "| --- | ---: |"] + [f"| {c} | {n} |" for c, n in causes.most_common()]
    whole = [i for i in items if all(e["equal"] for e in entries if e["item"] == i)]
    lines += ["", f"items equal at every stage and cell: {len(whole)} of {len(items)}"]
    differ = sorted({(e["item"], e["kernel"], e["cause"]) for e in entries if not e["equal"]})
    lines += ["", "| item | kernel | cause |", "| --- | --- | --- |"] + [f"| {i} | {k} | {c} |" for i, k, c in differ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    e = sub.add_parser("export")
    e.add_argument("root", type=Path)
    e.add_argument("--out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("gpu", type=Path)
    c.add_argument("cpu", type=Path)
    c.add_argument("--out", type=Path)
    c.add_argument("--md", type=Path)
    c.add_argument("--gpu-status", type=Path, help="the card root's status.tsv, for an export without outcomes")
    c.add_argument("--cpu-status", type=Path, help="the offline root's status.tsv, likewise")
    c.add_argument("--cpu-screen", type=Path, help="the offline root's screen.tsv: each item's offline verdict")
    args = parser.parse_args(argv)
    if args.verb == "export":
        text = json.dumps(export(args.root), sort_keys=True, indent=0) + "\n"
    else:
        screen = screen_verdicts(args.cpu_screen) if args.cpu_screen else None
        gpu, cpu = _load(args.gpu, args.gpu_status), _load(args.cpu, args.cpu_status)
        entries, left_out = pair(gpu, cpu, screen)
        text = json.dumps(entries, sort_keys=True, indent=1) + "\n"
        told = summary(entries, left_out)
        if args.md:
            args.md.write_text(told)
        sys.stderr.write(told)
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
