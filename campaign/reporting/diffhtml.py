"""One changed workload's IR diff as HTML (`campaign.judging.irdiffroot.WorkloadDiff`): the pairs
side by side, one table per captured stage (the judged stage shown, the others one click away
through the stage buttons), each pair's counts and SASS opcode changes, the unpaired variants,
and the autotune configs each side ran. Pure: the same diff gives the same bytes.

A workload's tables hold at most `WORKLOAD_ROWS` rows, the judged stage of every pair served first,
then the other stages pair by pair; a diff left out is named with its size, never silently cut, so a
page over a large root keeps its size bound (the bench note under tests/bench/).
"""
from __future__ import annotations

import re
from html import escape
from typing import Optional

from campaign.judging import irdiff
from campaign.judging.irdiffroot import WorkloadDiff

WORKLOAD_ROWS = 8000
_SPACES = re.compile(r" {3,}")
_TAGS = {"equal": "e", "replace": "r", "delete": "d", "insert": "i"}


def _line(text: str) -> str:
    # runs of padding (nvdisasm aligns its encodings) shown as two spaces: the page, not the text, is shortened
    return escape(_SPACES.sub("  ", text), quote=False)


def _budget(d: WorkloadDiff) -> dict[tuple[int, str], Optional[tuple]]:
    """(pair number, stage) -> its rows, or None where the workload's row budget is spent."""
    rows = {(n, s): irdiff.side_by_side(p.left.text(s), p.right.text(s))
            for n, p in enumerate(d.changed) for s in p.stages()}
    order = sorted(rows, key=lambda key: (key[1] != d.stage, key[0]))
    left, out = WORKLOAD_ROWS, {}
    for key in order:
        fits = len(rows[key]) <= left
        out[key] = rows[key] if fits else None
        left -= len(rows[key]) if fits else 0
    return out


def diff_table(pair: irdiff.Pair, stage: str, names: tuple[str, str], hidden: bool, rows: Optional[tuple]) -> str:
    attrs = f' data-stage="{stage}"' + (" hidden" if hidden else "")
    if pair.left.text(stage) == pair.right.text(stage):
        return f"<p class=same{attrs}>{stage}: identical on both sides (normalised as fingerprints are).</p>"
    if rows is None:
        return (f"<p class=cut{attrs}>{stage}: this diff is not on the page (a workload's diffs hold at most "
                f"{WORKLOAD_ROWS} rows, the judged stage of every pair first); the files are the cells' ir/ folders.</p>")
    removed, added = irdiff.changed_lines(rows)
    out = [f"<div class=stage{attrs}><p class=sum>{stage}: {removed} line(s) only in {names[0]}, "
           f"{added} only in {names[1]}</p><table class=diff><colgroup><col class=n><col><col class=n><col></colgroup>"
           f"<thead><tr><th><th>{escape(names[0])} <code>{pair.left.hash[:12]}</code>"
           f"<th><th>{escape(names[1])} <code>{pair.right.hash[:12]}</code></thead><tbody>"]
    for row in rows:
        if row.tag == "skip":
            out.append("<tr class=s><td colspan=4>⋯")
            continue
        out.append(f"<tr class={_TAGS[row.tag]}><td>{row.left_no or ''}<td>{_line(row.left)}"
                   f"<td>{row.right_no or ''}<td>{_line(row.right)}")
    out.append("</tbody></table></div>")
    return "".join(out)


def _counts(pair: irdiff.Pair, names: tuple[str, str]) -> str:
    out = [f"<table class=counts><thead><tr><th>count [stage]<th>{escape(names[0])}<th>{escape(names[1])}</thead><tbody>"]
    for c in irdiff.count_changes(pair):
        out.append(f"<tr{' class=moved' if c.changed else ''}><td>{escape(c.name)}"
                   f"<td>{escape(str(c.left))}<td>{escape(str(c.right))}")
    out.append("</tbody></table>")
    ops = irdiff.opcode_changes(pair)
    if ops:
        out.append("<p class=ops>SASS opcodes whose count moved: "
                   + ", ".join(f"<code>{escape(op)}</code> {x} → {y}" for op, x, y in ops) + "</p>")
    return "".join(out)


def _variant(v: irdiff.VariantTexts) -> str:
    launches = "launches unknown (no index row)" if v.launches is None else f"{v.launches} launch(es)"
    return f"<code>{v.hash[:12]}</code> ({launches})"


def _pair(pair: irdiff.Pair, d: WorkloadDiff, number: int, budget: dict) -> str:
    stages = pair.stages()
    head = (f"<details class=pair open><summary>pair {number}: <code>{escape(pair.kernel)}</code> "
            f"{_variant(pair.left)} → {_variant(pair.right)}</summary>"
            f"<p class=sig>signature: <code>{escape(pair.signature or 'none printed at this stage')}</code></p>")
    tables = "".join(diff_table(pair, s, d.names, s != d.stage, budget.get((number - 1, s))) for s in stages)
    return head + _counts(pair, d.names) + tables + "</details>"


def _unpaired(d: WorkloadDiff) -> str:
    if not d.unpaired:
        return "<p>Unpaired variants: none (every variant has a partner of its kernel and signature).</p>"
    items = []
    for p in d.unpaired:
        v, side = (p.left, d.names[0]) if p.left is not None else (p.right, d.names[1])
        items.append(f"<li><code>{escape(p.kernel)}</code> in {escape(side)} only, {_variant(v)}: {escape(p.why)}; "
                     f"signature <code>{escape(p.signature or 'none')}</code>")
    return "<p>Unpaired variants (not diffed against a guess):</p><ul>" + "".join(items) + "</ul>"


def _configs(d: WorkloadDiff) -> str:
    cols = "".join(f"<div><h4>{escape(name)} (<code>{escape(task)}</code>)</h4><pre>{escape(chr(10).join(lines))}</pre></div>"
                   for name, task, lines in zip(d.names, d.tasks, d.configs))
    return f"<h4>Autotune configs each side ran</h4><div class=configs>{cols}</div>"


def section(d: WorkloadDiff) -> str:
    """The workload's diff section, anchored ``diff-<workload>``."""
    stages = d.stages()
    buttons = "".join(f'<button type=button data-show="{s}"{" class=on" if s == d.stage else ""}>{s}</button>'
                      for s in stages)
    summary = (f"{len(d.changed)} pair(s) changed, {len(d.equal)} equal, {len(d.unpaired)} unpaired; "
               f"{escape(d.names[0])} <code>{escape(d.tasks[0])}</code> vs {escape(d.names[1])} "
               f"<code>{escape(d.tasks[1])}</code>; judged and paired at {d.stage}")
    budget = _budget(d)
    pairs = "".join(_pair(p, d, n, budget) for n, p in enumerate(d.changed, 1))
    return (f'<section class=diff id="diff-{escape(d.workload)}" data-judged="{d.stage}">'
            f"<h3>{escape(d.workload)}: IR diff</h3><p>{summary}</p>"
            f"<p class=switch>stage: {buttons}</p>{pairs}{_unpaired(d)}{_configs(d)}</section>")


def missing_section(name: str) -> str:
    """An anchor for a workload the sealed verdicts call changed where the rule applied now does not."""
    return (f'<section class=diff id="diff-{escape(name)}"><h3>{escape(name)}: no IR diff</h3><p>The sealed '
            "verdict calls its IR changed; the IR rule applied to the root's files now does not, so no pair is "
            "diffed (see the classes-moved note of the markdown report).</p></section>")
