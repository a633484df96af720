"""How a comparison of sealed roots reads in a PR (`campaign compare --format md`).

Pure over `campaign.contract.comparison.Comparison`, like `campaign.reporting.report`: the roots
and what differs between them first (the caliber is what a number means), then every workload
side by side, then, with two roots or more, a history table in the style of rustc-perf's: one
row per workload, one column per root, each later column's change against the first root or
the previous one.
"""
from __future__ import annotations

from typing import Optional

from campaign.contract.comparison import NO_INTERVAL, OVERLAP, Change, Comparison, Entry
from campaign.contract.verdictnames import RESULT
from campaign.reporting.workloadtext import pct

FIRST, PREVIOUS = "first", "previous"
ABSENT = "—"


def _cell(value: Optional[str]) -> str:
    """A value inside a table cell: a caliber's "a | b" would end the cell."""
    return "not recorded" if value is None else value.replace("|", "\\|")


def _legend(c: Comparison) -> list[str]:
    out = ["| # | root | campaign | mode | sealed | backend | switch | differs from #1 |",
           "|" + " --- |" * 8]
    for r in c.roots:
        differs = ", ".join(r.differs_from_first) if r.index > 1 else ABSENT
        out.append(f"| {r.index} | `{r.root}` | {r.campaign} | {r.mode} | {r.sealed_utc} | {r.backend} "
                   f"| `{r.switch}` | {differs or 'nothing compared'} |")
    out += [f"- #{r.index} is a shard set read as one root: " + "; ".join(
        f"shard {k} of {len(r.shards)} `{one.root}` (receipt {one.receipt_sha256[:12]})" for k, one in enumerate(r.shards, 1))
        for r in c.roots if r.shards]
    out += [f"- #{r.index} holds {r.caliber_findings} caliber finding(s) among its own cells: its affected "
            "workloads are X as sealed" for r in c.roots if r.caliber_findings]
    return out + [""]


def _differences(c: Comparison) -> list[str]:
    out = ["## What differs between the roots", ""]
    if not c.differences:
        out.append("Nothing compared differs (only when and where each was sealed).")
    else:
        out += ["| field | " + " | ".join(f"#{r.index}" for r in c.roots) + " |", "|" + " --- |" * (len(c.roots) + 1)]
        out += [f"| {d.field} | " + " | ".join(_cell(v) for v in d.values) + " |"
                for d in c.differences]
    if c.same:
        out += ["", f"<details><summary>The same in every root ({len(c.same)} fields)</summary>", "",
                "| field | value |", "| --- | --- |"]
        out += [f"| {name} | {_cell(value)} |" for name, value in c.same.items()]
        out += ["", "</details>"]
    return out + [""]


def _geomean(e: Entry) -> str:
    if e.point is None:
        return f"no range ({e.screen})"
    return pct(e.point) + (f", {e.label}" if e.label and e.label != RESULT else "")


def _interval(e: Entry) -> str:
    if e.point is None:
        return ABSENT
    if e.low is None or e.high is None:
        return "no interval (single round)"
    return f"{pct(e.low)} … {pct(e.high)}"


def _side_by_side(c: Comparison) -> list[str]:
    head = "| workload | " + " | ".join(f"#{r.index} class | #{r.index} geomean Δ | #{r.index} interval"
                                       for r in c.roots) + " |"
    out = ["## Workloads side by side", "",
           "Each root's sealed class, and the candidate-vs-baseline geomean with its interval where its report "
           "prints one.", "", head, "|" + " --- |" * (1 + 3 * len(c.roots))]
    for row in c.workloads:
        cells = [f"{e.klass} | {_geomean(e)} | {_interval(e)}" if e is not None
                 else f"{ABSENT} | not in #{k + 1} | {ABSENT}" for k, e in enumerate(row.entries)]
        out.append(f"| {row.workload} | " + " | ".join(cells) + " |")
    return out + [""]


def _change(ch: Optional[Change]) -> str:
    if ch is None:
        return ""
    parts = [f"{ch.points:+.2f} pp" if ch.points is not None else "no geomean to compare"]
    if ch.points is not None:
        parts.append({OVERLAP: "intervals overlap", NO_INTERVAL: "no interval"}.get(ch.intervals, "intervals apart"))
    if ch.class_moved:
        parts.append(ch.class_moved)
    return f" ({', '.join(parts)} vs #{ch.against})"


def _history(c: Comparison, against: str) -> list[str]:
    if len(c.roots) < 2:
        return ["## History", "", "One root: nothing to take a change against.", ""]
    out = [f"## History: each root against the {against} one", "",
           "Change in percentage points of the geomean Δ; \"intervals overlap\": the sealed intervals do not "
           "separate the two roots.", "",
           "| workload | " + " | ".join(f"#{r.index}" for r in c.roots) + " |", "|" + " --- |" * (len(c.roots) + 1)]
    for row in c.workloads:
        changes = row.vs_first if against == FIRST else row.vs_previous
        cells = [ABSENT if e is None else f"{e.klass} {pct(e.point) if e.point is not None else e.screen}"
                 + _change(ch) for e, ch in zip(row.entries, changes)]
        out.append(f"| {row.workload} | " + " | ".join(cells) + " |")
    return out + [""]


def _partial(c: Comparison) -> list[str]:
    if not c.not_in_every_root:
        return []
    out = ["## Not in every root", ""]
    out += [f"- `{name}`: only in " + ", ".join(f"#{k}" for k in held) for name, held in c.not_in_every_root.items()]
    return out + [""]


def markdown(c: Comparison, against: str = PREVIOUS) -> str:
    out = [f"# {len(c.roots)} sealed root(s) compared", "",
           "Classes and ranges are each root's own, as sealed in its receipt.json; nothing is re-judged.", ""]
    out += _legend(c) + _differences(c) + _side_by_side(c) + _history(c, against) + _partial(c)
    return "\n".join(out)
