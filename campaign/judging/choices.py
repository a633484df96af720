"""Which autotune config each side chose, per kernel and key, where the sides chose differently.

Under ``defaults.tuning: per_side`` every timed cell tunes for itself (`campaign.planning.matrix`),
so a switch that changes which config is fastest changes what each side runs: part of the effect a
user sees end to end, and exactly what pinned replay holds fixed. The IR rule judges every config
each side compiled while tuning (`campaign.judging.evidence.apart`), so a different winner is never
a code change; this module says which winners differed, from each cell's autotune.json as
`campaign.judging.evidence` read it (`TaskEvidence.chosen`). Pure.

A key is listed where the configs baseline chose over its rounds are not the configs the candidate
chose; the control's choices are shown beside them (its own re-tuning, the A/A side's). Each config
is named with the rounds that chose it, so a side whose winner changed from round to round (tuning
noise) reads as such.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping

from campaign.contract.cellfiles import TunedConfig
from campaign.contract.fields import BASELINE, CANDIDATE
from campaign.contract.records import ChosenConfigs
from campaign.contract.verdictnames import INCONCLUSIVE

if TYPE_CHECKING:                                  # evidence reads its cells through this module's neighbours
    from campaign.judging.evidence import TaskEvidence


def config_text(config: TunedConfig) -> str:
    """``BLOCK_M=128 BLOCK_N=64 num_warps=4 num_stages=3``: the kwargs sorted, then the launch options set."""
    kwargs = " ".join(f"{k}={v}" for k, v in sorted(config.kwargs.items()))
    extra = " ".join(f"{k}={v}" for k, v in (("num_warps", config.num_warps), ("num_stages", config.num_stages),
                                                ("num_ctas", config.num_ctas), ("maxnreg", config.maxnreg))
                     if v is not None)
    return f"{kwargs} {extra}".strip()


def _by_key(tasks: Iterable[TaskEvidence]) -> dict[tuple[str, str], dict[str, list[int]]]:
    """(kernel, key) -> config text -> the rounds that chose it, over one cell's tasks."""
    out: dict[tuple[str, str], dict[str, list[int]]] = {}
    for t in tasks:
        for entry in t.chosen:
            rounds = out.setdefault((entry.kernel, entry.key), {}).setdefault(config_text(entry.config), [])
            rounds.append(t.task.round)
    return out


def _shown(configs: Mapping[str, list[int]]) -> tuple[str, ...]:
    return tuple(f"{text} (r{', r'.join(map(str, sorted(rounds)))})"
                 for text, rounds in sorted(configs.items(), key=lambda item: (min(item[1]), item[0])))


def differing(by_cell: Mapping[str, list[TaskEvidence]]) -> tuple[ChosenConfigs, ...]:
    """The keys whose chosen configs differ between baseline and candidate, each cell's choices named
    (``by_cell``: cell -> its finished timed tasks' evidence); () where the sides chose alike."""
    chosen = {cell: _by_key(tasks) for cell, tasks in by_cell.items()}
    base, cand = chosen.get(BASELINE, {}), chosen.get(CANDIDATE, {})
    out = []
    for ident in sorted(set(base) | set(cand)):
        if set(base.get(ident, {})) == set(cand.get(ident, {})):
            continue
        cells = {cell: _shown(found.get(ident, {})) for cell, found in chosen.items()}
        out.append(ChosenConfigs(kernel=ident[0], key=ident[1], cells=cells))
    return tuple(out)


def note(chosen: tuple[ChosenConfigs, ...], ir_changed: bool | None, klass: str) -> str:
    """What a reason adds where the sides chose differently: that they did, and where the IR is equal
    but the timing moved (X), that a different winner may have moved identical code."""
    if not chosen:
        return ""
    said = (f"; each side tuned for itself and chose differently for {len(chosen)} key(s) "
            f"(first: {chosen[0].kernel} {chosen[0].key})")
    if ir_changed is False and klass == INCONCLUSIVE:
        said += (": every config compiled alike on both sides, so a different winner, not the switch's code, "
                 "may have moved the timing")
    return said
