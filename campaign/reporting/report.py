"""Rendering verdicts (`campaign.contract.records.Verdicts`, or the JSON form
`campaign.judging.classify.classify_root` returns, read through that model) as markdown or JSON.

Pure over the verdicts: the same verdicts give the same bytes. Ranges are printed
only where they mean something: a NO_IR_DIFF workload's range is labelled as
the noise floor unless every round moved beyond the A/A floor (then the move is
said, established or not, with the stages below the IR stage to try), and nothing
is printed where nothing reached Triton, nothing ran, or a cell timed out. A run
order's verdict reads plain faster/slower only where the workload's direction is
established; otherwise it is a leaning (each workload's row and section: `campaign.reporting.workloadtext`).
`forest_plot` is the one edge (optional matplotlib).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping, Optional, Union

from campaign.contract import canonical
from campaign.contract.errorlines import LogLine
from campaign.contract.errors import CampaignError
from campaign.contract.plans import IR_ROUND
from campaign.contract.platforms import platform
from campaign.contract.records import Verdicts
from campaign.contract.verdictnames import CLASSES
from campaign.judging.caliber import TIMING_FIELDS
from campaign.judging.evidence import TaskEvidence
from campaign.reporting import workloadtext

AnyVerdicts = Union[Verdicts, dict]     # a model, or its JSON form (validated on the way in)


def json_text(verdicts: AnyVerdicts) -> str:
    return canonical.dumps(Verdicts.read(verdicts).dump())


def does_not_prove(verdicts: AnyVerdicts) -> list[str]:
    verdicts = Verdicts.read(verdicts)
    policy = verdicts.production_default_policy
    lines = ["## What this campaign does not prove", "",
             f"- The production default is `{policy}` in the manifest; a passing campaign is not an argument for "
             "changing it — that is a separate decision with its own evidence.",
             "- Results hold for this device, these versions and this caliber (table above), at bench level and "
             "shapes recorded; other shapes, dtypes or devices are not covered.",
             "- Class C and B say no timing change was resolved beyond the A/A floor, not that none exists.",
             "- X is missing or incomparable evidence, not a verdict about the switch."]
    if not platform(verdicts.backend).executes:
        lines.append("- This is a compile-only campaign: nothing was executed or timed; IR and topology are real, "
                     "correctness and speed are not evidenced.")
    if verdicts.caliber.warnings:
        lines.append("- Absolute latencies are not quotable (shared tuner cache); relative conclusions hold.")
    return lines + [""]


def _ir_pass_caliber(timed: dict[str, str], ir_pass: dict[str, str]) -> list[str]:
    """The line saying how a screen's IR pass was held to the caliber, under the timed cells' table."""
    if not ir_pass:
        return []
    fields = ", ".join(f"{name} {ir_pass[name]}" for name in TIMING_FIELDS if name in ir_pass)
    scope = ("every other field was compared with the timed cells' (the table)" if timed
             else "nothing was timed: the table is the IR pass's")
    return ["", f"IR pass (round {IR_ROUND}, untimed): {fields}. These timing fields hold by construction in an "
            f"untimed cell and are compared among the IR pass's cells only; {scope}."]


def log_lines(tasks: Iterable[TaskEvidence]) -> dict[str, dict[str, LogLine]]:
    """Workload -> cell -> the last error line of its first task (run order) that ran no row or left no IR."""
    out: dict[str, dict[str, LogLine]] = {}
    for t in sorted(tasks, key=lambda t: t.task.order):
        if t.error_line is not None:
            out.setdefault(t.task.workload, {}).setdefault(t.task.cell, t.error_line)
    return out


def shard_lines(set_id: str, shards: list[tuple[str, str]]) -> list[str]:
    """The section naming each shard's root, under a set's one table (`campaign.flows.shardset`)."""
    return [f"## Shards (set {set_id[:12]})", "", "| shard | root |", "| --- | --- |"] + [
        f"| {label} | `{root}` |" for label, root in shards] + [""]


def markdown(verdicts: AnyVerdicts, beside: tuple[str, ...] = (), ir_pass: Optional[dict[str, str]] = None,
             logs: Optional[Mapping[str, Mapping[str, LogLine]]] = None, page: Optional[str] = None,
             shards: Optional[Mapping[str, str]] = None) -> str:
    """``beside``: sections read from the root's rows beside the verdicts (`campaign.reporting.speedup`);
    ``ir_pass``: a screen's IR-pass cells' caliber table (`campaign.judging.caliber.CaliberCheck.ir_pass`);
    ``logs``: per workload and cell, the last error line of a cell that ran nothing (`log_lines`);
    ``page``: the path of the page `campaign report --html` wrote, which each changed workload links;
    ``shards``: per workload, the shard ("k/N") whose sealed verdict it is, a first column of the table."""
    verdicts = Verdicts.read(verdicts)
    ir_pass, logs = ir_pass or {}, logs or {}
    rule, cal, env = verdicts.rule, verdicts.caliber, verdicts.environment
    out = [f"# Campaign `{verdicts.campaign}`: `{verdicts.switch}` on {verdicts.backend}", "",
           f"Cells: {', '.join(verdicts.cells)}. Launch floor {rule.measured_launch_floor}, IR stage "
           f"{rule.ir_stage}. Intervals: {rule.interval}. Timing rule: {rule.significance}."
           + (f" Smallest effect worth a claim (min_effect_pct): {rule.min_effect_pct:g}%."
              if rule.min_effect_pct is not None else ""), ""]
    if env is not None and env.switch_overrides_pin is not None:
        pin = env.switch_overrides_pin
        out += [f"The switch `{pin.name}` is a variable the harness pins (to {', '.join(pin.pinned)} in "
                "every cell that does not set it): each cell's own value is the one it ran with.", ""]
    if env is not None and env.cells_set:
        out += ["Each cell set: " + "; ".join(f"{cell}: " + (", ".join(f"`{k}={v}`" for k, v in values.items()) or "nothing")
                                              for cell, values in env.cells_set.items()) + ".", ""]
    if env is not None and env.declared:
        out += ["Declared beside the switch (`switch.also`): "
                + "; ".join(f"`{name}`: {why}" for name, why in env.declared.items()) + ".", ""]
    if env is not None and env.inherited:
        out += ["Inherited by the cells (code paths, not caliber): " + ", ".join(f"`{v}`" for v in env.inherited), ""]
    if verdicts.harness_drift:
        out += [f"**Harness changed during the run:** {', '.join(verdicts.harness_drift)}: no G or R stands.", ""]
    out += [
           "## Caliber", "", "| field | value |", "| --- | --- |"]
    out += [f"| {field} | {value} |" for field, value in (cal.fields or ir_pass).items()]
    out += _ir_pass_caliber(cal.fields, ir_pass)
    if cal.findings or cal.warnings:
        out += [""] + [f"- `{line}`" for line in cal.findings + cal.warnings]
    if cal.findings:
        out += ["", "**Caliber mismatch released by --allow-caliber-mismatch: affected workloads are X.**"
                if cal.released else "**Caliber mismatch: latencies of the affected workloads were not read.**"]
    # cycles: time x the window's SM clock, shown where the verdicts carry them (sealed after they were judged)
    with_cycles = any(w.cycles is not None for w in verdicts.workloads.values())
    out += ["", "## Classes", "", "| " + " | ".join(CLASSES) + " |", "|" + " --- |" * len(CLASSES),
            "| " + " | ".join(str(verdicts.counts[k]) for k in CLASSES) + " |", "",
            "## Workloads", "",
            ("| shard " if shards else "")
            + "| workload | class | screen | scoped | unscoped | geomean Δ |" + (" cycles Δ |" if with_cycles else "")
            + " interval | A/A floor | faster/slower/neutral/flip | markers |",
            "|" + " --- |" * ((11 if with_cycles else 10) + (1 if shards else 0))]
    out += [(f"| {shards[name]} " if shards else "") + workloadtext.table_row(name, w, with_cycles)
            for name, w in verdicts.workloads.items()]
    out.append("")
    for name, w in verdicts.workloads.items():
        out += workloadtext.details(name, w, verdicts.backend, logs.get(name, {}), page)
    out += list(beside)
    out += does_not_prove(verdicts)
    return "\n".join(out)


def forest_points(verdicts: AnyVerdicts) -> list[dict]:
    """One entry per timed workload: geomean Δ, its interval (None with a single round),
    the A/A floor and whether the range is the noise floor (IR unchanged)."""
    out = []
    for name, w in Verdicts.read(verdicts).workloads.items():
        p = workloadtext.ranged_timing(w)
        if p is None or p.point is None:
            continue
        iv = p.interval
        out.append({"workload": name, "class": w.klass, "point": p.point,
                    "low": iv.low if iv else None, "high": iv.high if iv else None,
                    "floor": p.floor, "noise_floor": w.timing.label.startswith("noise")})
    return out


def forest_plot(verdicts: AnyVerdicts, path: Path) -> Optional[str]:
    """Per timed workload: geomean Δ with its interval (a hollow point: one round, no
    interval) over the grey A/A floor; needs the optional ``plot`` extra. Returns why no
    plot was written (nothing timed), None when it was."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CampaignError("--plot needs matplotlib: install the optional extra, pip install 'campaign[plot]'") from None
    verdicts = Verdicts.read(verdicts)
    points = forest_points(verdicts)
    if not points:
        return (f"no plot written to {path}: no workload has timed rows to plot ("
                + ("a compile-only backend times nothing" if not platform(verdicts.backend).executes else
                   "nothing was timed, or nothing reached Triton") + ")")
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.45 * len(points)))
    for y, p in enumerate(reversed(points)):
        if p["floor"] is not None:
            ax.fill_betweenx([y - 0.35, y + 0.35], -p["floor"] * 100, p["floor"] * 100, color="0.85", linewidth=0)
        if p["low"] is not None:
            ax.plot([p["low"] * 100, p["high"] * 100], [y, y], color="black", linewidth=1.5)
        ax.plot([p["point"] * 100], [y], "o", color="black", markerfacecolor="black" if p["low"] is not None else "white")
    ax.axvline(0, color="0.5", linewidth=0.8)
    labels = [f"{p['workload']} ({p['class']}{', noise floor' if p['noise_floor'] else ''})" for p in reversed(points)]
    ax.set_yticks(range(len(points)), labels)
    ax.set_ylim(-0.6, len(points) - 0.4)
    ax.set_xlabel("geomean Δ % vs baseline   (grey: A/A floor; hollow: one round, no interval)", fontsize=9)
    ax.set_title(f"{verdicts.campaign}: {verdicts.switch} on {verdicts.backend}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return None
