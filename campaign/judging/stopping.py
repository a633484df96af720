"""Adaptive rounds: whether a workload needs another pair of rounds, and the level each look may spend.

Pure, no IO: the runner (`campaign.running.rounds`) calls `decide` between round pairs with the
workload's timing so far (`campaign.judging.workload.WorkloadFacts.timing`); the classifier calls it
once more on the final timing to say why the workload stopped.

**Looks.** A workload under ``rounds.stop: decided`` (the matrix's `Stopping`) takes ``min`` rounds
(at least two in each run order, what a direction needs), then one pair at a time (one round in each
order) while it is undecided, up to ``max``: looks at min, min + 2, ..., max rounds. It is *decided*
when its timing (the primary regime's aggregate) either claims a direction by the full rule of
`campaign.judging.significance` at this look's level, or has an interval wholly inside the A/A band
[1/(1 + floor) - 1, floor] (any effect is within noise: more rounds would measure noise), the floor
being `campaign.judging.direction.aa_floor` of the rounds so far (past 4 rounds the 80th-percentile
|A/A|, which does not climb from look to look as the largest did). An interval
that straddles the band's edge is undecided. A workload with nothing to decide from (no timing, no
A/A floor: no control, or a control missing in a round) stops: more rounds cannot supply it.

**Validity under optional stopping: alpha spending.** A test repeated at every look and stopped at
the first claim would claim more often than its level. The per-workload level WORKLOAD_ALPHA is
therefore spent over the looks with the Lan-DeMets spending function of Pocock type,
f(t) = alpha * ln(1 + (e - 1) t), t = rounds / max (K. K. G. Lan and D. L. DeMets, "Discrete
sequential boundaries for clinical trials", Biometrika 70(3):659-663, 1983): the look at n rounds
may spend alpha * share(n), share(n) = (f(t_n) - f(t_prev)) / alpha, and the shares of all looks add
up to 1. The pooled t-test's p at that look is read as p / share(n) (`adjusted_p`), which is what
the direction rule and Holm's step-down over the campaign compare with their levels. Under no
effect, P(any look claims) <= sum over looks of P(p_n < alpha * share(n)) <= alpha (Bonferroni over
the looks: true whatever the correlation between looks, so no boundary recursion is needed, and
conservative because it ignores that correlation). Pocock-type spending spends early (44 % of
alpha at 4 of 12 rounds), where a large effect is decided. Stopping for a decided neutral can only
lower the claim rate. `tests/bench/simulate_stopping.py` measures both with this code.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from campaign.contract.plans import Stopping
from campaign.contract.records import Timing
from campaign.judging.direction import FASTER, SLOWER, floor_note, pct

DECIDED = "DECIDED"              # a skipped round's marker: the answer was known before it
UNDECIDABLE = "UNDECIDABLE"      # nothing to decide from: more rounds cannot supply it
UNDECIDED = "UNDECIDED"          # at the maximum, still undecided (never a skip: there is no round after)


@dataclass(frozen=True)
class Decision:
    more: bool                   # run the next pair of rounds
    state: str                   # DECIDED | UNDECIDABLE | UNDECIDED, or "" while more rounds run
    why: str


def looks(stopping: Stopping) -> tuple[int, ...]:
    """The round counts at which a workload may stop: min, min + 2, ..., max."""
    return tuple(range(stopping.min, stopping.max + 1, 2))


def _spent(rounds: int, stopping: Stopping) -> float:
    """f(t) / alpha at t = rounds / max: the share of the level spent through that look."""
    return math.log(1 + (math.e - 1) * min(rounds, stopping.max) / stopping.max)


def share(rounds: int, stopping: Optional[Stopping]) -> float:
    """The share of WORKLOAD_ALPHA the look after ``rounds`` rounds may spend; 1 for fixed rounds.
    A count between looks (a round missing) takes the next look's share, the smaller one."""
    if stopping is None:
        return 1.0
    at = min((n for n in looks(stopping) if n >= rounds), default=stopping.max)
    before = max((n for n in looks(stopping) if n < at), default=0)
    return _spent(at, stopping) - _spent(before, stopping)


def adjusted_p(p: Optional[float], part: float) -> Optional[float]:
    """The pooled t-test's p as the look's spent level reads it (`share`): p / share, at most 1."""
    return None if p is None else min(1.0, p / part)


def decide(timing: Optional[Timing], through: int, stopping: Stopping) -> Decision:
    """After rounds 1..``through`` of a workload, whether its next pair of rounds is worth timing."""
    primary = timing.primary if timing is not None else None
    if primary is None or primary.floor is None or primary.interval is None:
        why = "no paired timing" if primary is None else primary.reason
        return Decision(False, UNDECIDABLE, f"undecidable at round {through}: {why}; more rounds cannot decide")
    if primary.verdict in (FASTER, SLOWER):
        return Decision(False, DECIDED, f"decided at round {through}: {primary.verdict} ({primary.reason})")
    iv, floor = primary.interval, primary.floor
    if iv.low > 1 / (1 + floor) - 1 and iv.high < floor:
        # a known floor has an A/A in every round taken against the baseline (`direction.aa_floor`)
        note = floor_note(sum(str(r) not in timing.references for r, _, _ in primary.rounds))
        return Decision(False, DECIDED, f"decided at round {through}: neutral ({iv.method} "
                                        f"{pct(iv.low, True)}..{pct(iv.high, True)} within the ±{pct(floor)} A/A floor{note})")
    if through >= stopping.max:
        return Decision(False, UNDECIDED, f"undecided at the maximum, round {stopping.max}: {primary.reason}")
    return Decision(True, "", f"undecided at round {through}: {primary.reason}")


def pair_start(round_number: int, stopping: Stopping) -> int:
    """The first round of the pair ``round_number`` belongs to (rounds after ``min`` come in pairs)."""
    return stopping.min + 1 + 2 * ((round_number - stopping.min - 1) // 2)
