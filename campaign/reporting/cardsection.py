"""The report's partition section for a root run over several cards (`campaign.running.cards`).

Per card: its workloads, the seconds the partition predicted (partition.json, written before
anything ran) and the seconds its status rows took (every attempt, as the device spent them);
then the critical path -- the busiest card's actual seconds -- against the floor no placement
beats, max(heaviest workload, total / cards), both from the root's own cell times. A root run
on one card has no partition.json and no section. `table` is pure; `section` reads the root
(status rows through `campaign.judging.evidence`).
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from campaign.contract import canonical
from campaign.contract.runroot import RunRoot
from campaign.contract.status import StatusRow
from campaign.planning.cardplan import PARTITION_FILE


def _s(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(data: Mapping, rows: Sequence[StatusRow], moved: Mapping[str, Mapping] = {}) -> list[str]:
    """Markdown lines: the per-card table and the critical path against its floor."""
    per_device: dict[str, float] = {}
    per_workload: dict[str, float] = {}
    for row in rows:
        seconds = row.elapsed_s or 0.0
        per_workload[row.workload] = per_workload.get(row.workload, 0.0) + seconds
        if row.device:
            per_device[row.device] = per_device.get(row.device, 0.0) + seconds
    cards = data["cards"]
    sources = ", ".join(data["sources"]) + (f" (from {data['weights_from']})" if data.get("weights_from") else "")
    lines = ["## Partition over cards", "",
             f"{len(cards)} cards, workloads placed longest first by weight ({sources}); a workload's cells "
             "all run on one card. Actual: the seconds of the card's status rows, every attempt.", "",
             "| card | uuid | workloads | predicted s | actual s |", "| --- | --- | --- | --- | --- |"]
    for card in cards:
        uuid = card.get("uuid")
        lines.append(f"| {card['index'] if card.get('index') is not None else card['slot']} | {uuid or '-'} | "
                     f"{', '.join(card['workloads'])} | {_s(card['predicted_s'])} | "
                     f"{_s(per_device.get(uuid)) if uuid else '-'} |")
    other = sorted(set(per_device) - {card.get("uuid") for card in cards})
    for uuid in other:   # a card a resume moved workloads onto that the partition did not name
        lines.append(f"| - | {uuid} | (resumed here) | - | {_s(per_device[uuid])} |")
    lines.append("")
    if moved:
        lines += [f"- {name} moved on resume to {where.get('uuid')}" for name, where in sorted(moved.items())] + [""]
    critical = max(per_device.values(), default=0.0)
    total = sum(per_workload.values())
    floor = max(max(per_workload.values(), default=0.0), total / max(len(cards), 1))
    over = f" ({(critical / floor - 1) * 100:+.1f} %)" if floor > 0 else ""
    lines += [f"Critical path {_s(critical)} s against max(heaviest workload, total / {len(cards)}) = "
              f"{_s(floor)} s{over}; predicted {_s(data['critical_path_s'])} s against {_s(data['floor_s'])} s.", ""]
    return lines


def section(root: RunRoot) -> list[str]:
    path = root.file(PARTITION_FILE)
    if not path.is_file():
        return []
    data = canonical.read_json(path)
    moved: dict[str, Mapping] = {}
    for resume in sorted(root.path.glob("partition.resume-*.json")):
        moved.update(canonical.read_json(resume)["moved"])
    rows, _bad = root.status()
    return table(data, rows, moved)
