"""Which cards a run uses and which workloads each runs: pure functions over discovered facts.

`select` turns the manifest's ``device`` (``count``, ``indices`` or ``uuids``) and
``campaign run --devices`` into the cards that run, each checked against the manifest by
`campaign.contract.devicerule` (the rule preflight applies), and the cards that failed, each
with its reason. Cards keep their slot (their place in the manifest's list) across runs, so
a resume knows which card a workload was placed on. `record` is partition.json's content;
`replace_onto` moves the unfinished workloads of cards not running now onto the cards that
are, heaviest first, each to the card with the least remaining load.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from campaign.backends.base import DeviceInfo
from campaign.contract.devicerule import device_mismatches, same_uuid
from campaign.contract.errors import InputError
from campaign.contract.manifest import Device
from campaign.contract.platforms import platform
from campaign.planning.partition import Partition, Weight

PARTITION_FILE = "partition.json"
VIRTUAL = "cpu-virtual-"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Card:
    """One card a group runs on.

    ``slot``: its place in the manifest's cards (the partition's index); ``index``: the host's
    index of it (what ``--devices`` names); ``uuid``: its identity, in every status row it
    writes; ``visible``: what the backend's visibility variable is set to in its workers --
    the parent's own visible list resolved, so a parent that selected cards 6,7 never sees its
    card 0 become physical card 0 -- None on the cpu backend.
    """

    slot: int
    index: int
    uuid: str
    name: Optional[str] = None
    visible: Optional[str] = None


def virtual_cards(device: Device) -> list[DeviceInfo]:
    """The cpu backend's declared cards: none exists, each compiles for the declared target."""
    return [DeviceInfo(index=n, name="cpu (virtual card)", uuid=f"{VIRTUAL}{n}", target=device.target)
            for n in range(device.cards)]


def _visible(index: int, parent_visible: Optional[list[str]]) -> str:
    if parent_visible:
        if index >= len(parent_visible):
            raise InputError(f"card {index}: the parent's visibility variable names only {len(parent_visible)} cards")
        return parent_visible[index]
    return str(index)


def select(device: Device, found: Sequence[DeviceInfo], narrowed: Optional[Sequence[int]],
           parent_visible: Optional[list[str]]) -> tuple[list[Card], list[tuple[Card, str]]]:
    """(cards that run, [(card, why it cannot)]) for the manifest's cards, narrowed by ``--devices``."""
    by_index = {info.index: info for info in found}
    wanted: list[tuple[int, Optional[DeviceInfo], Optional[str]]] = []   # (host index, info, expected uuid)
    if device.indices is not None:
        wanted = [(i, by_index.get(i), None) for i in device.indices]
    elif device.uuids is not None:
        for position, uuid in enumerate(device.uuids):
            info = next((d for d in found if same_uuid(d.uuid, uuid)), None)
            wanted.append((info.index if info else -1 - position, info, uuid))
    else:
        ordered = sorted(found, key=lambda d: d.index)
        wanted = [(ordered[n].index if n < len(ordered) else n, ordered[n] if n < len(ordered) else None, None)
                  for n in range(device.cards)]
    if narrowed is not None:
        unknown = sorted(set(narrowed) - {index for index, _info, _uuid in wanted})
        if unknown:
            raise InputError(f"--devices {','.join(map(str, narrowed))}: {', '.join(map(str, unknown))} "
                             f"{'is' if len(unknown) == 1 else 'are'} not among the manifest's cards "
                             f"({', '.join(str(i) for i, _info, _uuid in wanted if i >= 0)})")
    cards: list[Card] = []
    failed: list[tuple[Card, str]] = []
    for slot, (index, info, uuid) in enumerate(wanted):
        if narrowed is not None and index not in narrowed:
            continue
        if info is None:
            name = f"uuid {uuid}" if uuid else f"index {index}"
            failed.append((Card(slot, index, uuid or f"index-{index}"), f"{name} is not visible"))
            continue
        card = Card(slot, index, info.uuid or f"index-{index}", info.name,
                    _visible(index, parent_visible) if platform(device.backend).executes else None)
        expected = device.model_copy(update={"uuid": uuid}) if uuid else device
        wrong = device_mismatches(expected, info.name, info.uuid, info.target)
        if wrong:
            worded = {"uuid": f"uuid {info.uuid} is not the manifest's {uuid}",
                      "name": f"name {info.name!r} is not the manifest's {device.name!r}",
                      "target": f"target {info.target} is not the manifest's {device.target}"}
            failed.append((card, "; ".join(worded[f] for f in ("uuid", "name", "target") if f in wrong)))
        else:
            cards.append(card)
    return cards, failed


def record(partition: Partition, cards: Sequence[Card], weights_from: Optional[str]) -> dict:
    """partition.json: per card its workloads and predicted seconds, the weights and their source.
    ``partition`` has one bin per card of ``cards``, in their order: the cards the run was given
    (``--devices`` may leave some of the manifest's out; those get nothing)."""
    if len(cards) != len(partition.cards):
        raise ValueError(f"a partition over {len(partition.cards)} cards recorded for {len(cards)}")
    return {
        "schema_version": SCHEMA_VERSION,
        "cards": [{"slot": card.slot, "uuid": card.uuid, "index": card.index,
                   "workloads": list(names), "predicted_s": round(partition.load(n), 3)}
                  for n, (card, names) in enumerate(zip(cards, partition.cards))],
        "weights": {name: {"seconds": round(w.seconds, 3), "source": w.source}
                    for name, w in sorted(partition.weights.items())},
        "sources": list(partition.sources),
        "weights_from": weights_from,
        "critical_path_s": round(partition.critical_path_s, 3),
        "floor_s": round(partition.floor_s, 3),
    }


def placed(data: Mapping) -> dict[int, tuple[str, ...]]:
    """Slot -> workloads, from a partition.json's content."""
    return {int(card["slot"]): tuple(card["workloads"]) for card in data["cards"]}


def replace_onto(placement: Mapping[int, Sequence[str]], running: Sequence[int], unfinished: set[str],
                 weights: Mapping[str, Weight]) -> tuple[dict[int, tuple[str, ...]], dict[str, int]]:
    """Placement for the cards ``running`` now: each keeps its own workloads; the unfinished ones
    of every other card go, heaviest first, to the running card with the least unfinished load.
    Returns (slot -> workloads, moved workload -> slot)."""
    if not running:
        return {}, {}
    out = {slot: list(placement.get(slot, ())) for slot in running}
    load = {slot: sum(weights[n].seconds for n in out[slot] if n in unfinished) for slot in running}
    stranded = [n for slot, names in placement.items() if slot not in out for n in names if n in unfinished]
    moved: dict[str, int] = {}
    for name in sorted(stranded, key=lambda n: (-weights[n].seconds, n)):
        slot = min(running, key=lambda s: (load[s], s))
        out[slot].append(name)
        load[slot] += weights[name].seconds
        moved[name] = slot
    return {slot: tuple(names) for slot, names in out.items()}, moved
