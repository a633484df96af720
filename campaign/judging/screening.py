"""The screen's verdict and its table: pure functions over one pinned pair per workload.

A screen runs an untimed IR pass (round 0: baseline and candidate, each compiling
every autotune config and running the first), then round 1 -- the baseline records the autotune
configs, every other cell replays them -- for the workloads whose IR pass found
the IR changed (all of them with ``--time-unchanged``), and decides what
deserves rounds from round 1's pair where it ran, else from the IR pass's pair
(``Facts.ir_pass_only``: its fingerprints, no range, `IR_PASS_NOTE`):

- ``TIMEOUT``    a cell ended by its timeout (rc 124/137): a cost problem, not a verdict.
- ``KILLED``     a cell died by a signal from outside the runner, its retry too (the host's out-of-memory
                 killer, a person's kill): a resource problem, not a verdict; never read as a timeout.
- ``NEEDS_CARD`` an offline cell (FlagGems on the compile-only backend) proved its own IR untrustworthy
  (its offline.json, `campaign.contract.cellfiles.OfflineTrust`): host logic read a skipped launch's
  output, or FlagGems handed an op back to torch. Whatever its fingerprints say, it is emitted for
  the card, which compiles it with real data. Error sides: a false NEEDS_CARD costs one workload's card
  time (its IR checked and timed there though the offline verdict was right); a missed one is a wrong
  offline verdict -- NO_IR_DIFF skips a workload whose card code the switch changed, or IR_CHANGED
  times one for a difference the garbage data made -- so the rule flags on any proof, in any cell.
- ``NO_ROWS``    no cell produced a row: a refusal, a kernel not compiled, a skip (pytest's reason), or the dtype.
- ``NO_TRITON``  rows but no IR file in any cell: aten or a vendor library ran.
- ``NO_COMPARABLE_IR`` no pair of cells can be compared: one side has no IR, or the
  baseline benchmarked autotune configs (its IR set holds every config's variants,
  `campaign.judging.irevidence`) and there is no control to compare the candidate with.
- ``IR_CHANGED`` the compared fingerprints differ: measure it; a failed side's reach is named (`irpairing.reach`).
- ``NO_IR_DIFF`` they are equal: skip it; its timing range is the noise floor.
  The last three are `campaign.judging.irevidence.ir_change`'s answer, the one the
  runner's adaptive rounds and the classifier give too.

Only IR_CHANGED and NO_IR_DIFF print a range: `campaign.judging.screenrange`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from campaign.contract import errorlines, status
from campaign.contract.fields import BASELINE, CONTROL
from campaign.contract.verdictnames import IR_CHANGED, KILLED, NEEDS_CARD, NO_COMPARABLE_IR, NO_IR_DIFF, NO_ROWS, NO_TRITON, TIMEOUT
from campaign.judging import irevidence, irpairing
from campaign.judging.stats import Sample

TIMEOUT_RCS = (124, 137)
TIMEOUT_NAMES = ("timed_out", "killed")
# What the IR pass's evidence holds (`irevidence.untimed_coverage` of its weaker side), said in every note
# that rests on it: a root written before untimed cells compiled every config says "first config only".
COVERAGE = {
    irevidence.EVERY_CONFIG: "every autotune config of each key compiled, untimed",
    irevidence.SOME_CONFIGS: "every autotune config of each key that compiled, untimed; autotune.json names the others",
    irevidence.FIRST_CONFIG_ONLY: ("each autotune key's first config only, untimed: configs past the first are not "
                                   "in its evidence"),
}


def ir_pass_note(coverage: str) -> str:
    return f"not timed: IR unchanged (IR pass: {COVERAGE[coverage]})"


def compiles_only_note(backend: str, coverage: str) -> str:
    return f"not timed: {backend} compiles only, round 1 not run; judged on the IR pass ({COVERAGE[coverage]})"


def ir_pass_skipped(coverage: str) -> str:
    return f"not timed: round 1 skipped, the IR pass found no comparable IR (IR pass: {COVERAGE[coverage]})"


IR_PASS_NOTE = ir_pass_note(irevidence.EVERY_CONFIG)
IR_PASS_SKIPPED = ir_pass_skipped(irevidence.EVERY_CONFIG)


@dataclass(frozen=True)
class Side:
    """One cell of the pair, as read back from its folder."""

    cell: str
    rc: Optional[int] = None
    rc_name: str = ""                    # status.tsv's name of the rc; "" when the cell has no row
    elapsed_s: Optional[float] = None
    rows: Optional[int] = None           # rows that ran (timed or compiled); None: no result.json
    fingerprint: Optional[str] = None    # None: no IR file of the stage
    variants: tuple[irevidence.VariantDigest, ...] = ()   # with signatures: irevidence.ir_change pairs them
    ir_files: int = 0
    scoped: Optional[int] = None
    unscoped: Optional[int] = None
    unjoinable: int = 0
    tuning_variants: bool = False        # benchmarked configs: holds every config's variants
    timed: bool = False
    samples: Mapping[tuple, Sample] = field(default_factory=dict)
    error_line: Optional[errorlines.LogLine] = None   # where it ran no row or left no IR: its logs' (`evidence.log_error`)
    needs_card: tuple[str, ...] = ()     # an offline cell's proofs that its IR needs the card (`OfflineTrust.reasons`)
    compile_errors: tuple[str, ...] = () # an offline cell's kernels that did not compile for the target
    refused: Optional[str] = None        # ``check=<name>: <detail>`` where its preflight refused it

    @property
    def timed_out(self) -> bool:
        """Ended by the runner at its timeout; a death by a signal it did not send (rc 137 too) is `killed`."""
        return self.rc_name in TIMEOUT_NAMES or (self.rc in TIMEOUT_RCS and not self.killed)

    @property
    def killed(self) -> bool:
        return status.signal_of(self.rc_name) is not None


@dataclass(frozen=True)
class Facts:
    workload: str
    op: str
    backend: str
    ir_stage: str
    dtypes: tuple[str, ...]
    dtypes_own: bool                     # the op's own set (the manifest did not name dtypes)
    sides: Mapping[str, Side]            # the manifest's cells only
    caliber: Mapping[str, str]           # field -> value, "a | b" where the cells differ
    caliber_findings: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()       # artifacts present but unreadable
    provider: str = "builtin"            # pytest: the test's own do_bench calls are its rows
    ir_pass_only: bool = False           # round 1 was skipped: the sides are the IR pass's, untimed
    ir_pass_change: Optional[str] = None   # the IR pass's `irevidence.ir_change` state, where round 1 ran
    ir_pass_coverage: Optional[str] = None  # `irevidence.weakest_coverage` of the IR pass's pair; None: no IR pass


@dataclass(frozen=True)
class Verdict:
    name: str
    note: str
    compared: Optional[tuple[str, str]] = None


def _rc(side: Side) -> str:
    return f"rc {side.rc if side.rc is not None else '-'} {side.rc_name}".rstrip()


def needs_card(sides: Mapping[str, Side]) -> str:
    """The NEEDS_CARD rule: every cell's proof that its offline IR is untrustworthy, named once with the
    cells that hold it; "" where no cell holds one."""
    grouped: dict[str, list[str]] = {}
    for cell, side in sides.items():
        for reason in side.needs_card:
            grouped.setdefault(reason, []).append(cell)
    return "; ".join(f"{reason} ({', '.join(cells)})" for reason, cells in grouped.items())


def _nothing_ran(f: Facts) -> str:
    """Why no row ran where a cell says (a preflight refusal, a kernel not compiled, pytest's skip), else the dtype."""
    named = [f"{c} refused at preflight ({s.refused})" for c, s in f.sides.items() if s.refused] + [
        f"{c}: a kernel did not compile offline ({'; '.join(s.compile_errors)})" for c, s in f.sides.items() if s.compile_errors]
    if named:
        return "; ".join(named)
    own = "the op's own set" if f.dtypes_own else "named by the manifest"
    return ("nothing ran: the benchmark skipped the cases it selected (pytest's reason below)"
            if all(errorlines.is_skip(s.error_line) for s in f.sides.values()) else
            f"nothing ran, usually the dtype ({','.join(f.dtypes)}: {own})" if f.provider != "pytest" else
            "the test times nothing: no call of triton.testing.do_bench (or do_bench_cudagraph) ran in it")


def _before_ir(f: Facts) -> Optional[Verdict]:
    """The verdicts no IR comparison is made for: TIMEOUT, KILLED, NEEDS_CARD, NO_ROWS; None: compare the IR."""
    sides = f.sides
    late = [s for s in sides.values() if s.timed_out]
    if late:
        return Verdict(TIMEOUT, "; ".join(f"{s.cell} ended by its timeout ({_rc(s)}, {s.elapsed_s}s)" for s in late)
                       + ": a cost problem, not a verdict about the switch")
    dead = [s for s in sides.values() if s.killed]
    if dead:
        return Verdict(KILLED, "; ".join(f"{s.cell} died by {status.signal_of(s.rc_name)} from outside the runner, not by its "
                                         f"timeout ({_rc(s)}, {s.elapsed_s}s)" for s in dead)
                       + ": the host's out-of-memory killer or a person's kill, a resource problem, not a verdict about the "
                         "switch (its rows in status.tsv name each attempt); screen it with fewer lanes or more memory")
    card = needs_card(sides)
    if card:
        return Verdict(NEEDS_CARD, f"the offline IR is not evidence, check and time it on the card: {card}")
    if not any(s.rows for s in sides.values()):
        return Verdict(NO_ROWS, f"no cell produced a row ({', '.join(f'{c} {_rc(s)}' for c, s in sides.items())}): "
                       + _nothing_ran(f))
    return None


def verdict(f: Facts) -> Verdict:
    early = _before_ir(f)
    if early is not None:
        return early
    sides = f.sides
    ran = {cell: s.rows or 0 for cell, s in sides.items()}
    notes = [f"{c} ran nothing ({_rc(sides[c])}) where {max(ran, key=ran.get)} produced {max(ran.values())} rows: "
             "not a dtype problem, the switch may break the operator" for c in sides if not ran[c]]
    if all(s.ir_files == 0 for s in sides.values()):
        return Verdict(NO_TRITON, "; ".join(notes + [
            f"rows but no *.{f.ir_stage} in any cell: nothing reached the Triton compiler (the operator ran through "
            "aten or a vendor library); not a warm cache, each cell had its own TRITON_CACHE_DIR"]))
    base = sides[BASELINE]
    change = irevidence.ir_change(base.tuning_variants, sides, {c: irevidence.CellIR(s.fingerprint, s.variants) for c, s in sides.items()})
    pair = change.pair
    if pair is None:
        return Verdict(NO_COMPARABLE_IR, "; ".join(notes + [
            "baseline benchmarked autotune configs, so its IR holds every config's variants and is comparable to no "
            "replaying cell, and there is no control: add a control cell to the manifest and screen again"]))
    if base.tuning_variants:
        notes.append("baseline benchmarked autotune configs: the candidate is compared with the control")
    elif CONTROL in sides and sides[CONTROL].fingerprint is not None and base.fingerprint and irevidence.same_code(
            irevidence.CellIR(base.fingerprint, base.variants),
            irevidence.CellIR(sides[CONTROL].fingerprint, sides[CONTROL].variants), (BASELINE, CONTROL)) is None:
        notes.append("control IR differs from baseline: the switch leaks into its off state")
    if change.missing:
        return Verdict(NO_COMPARABLE_IR, "; ".join(notes + [
            f"{' and '.join(change.missing)} has no *.{f.ir_stage}: no comparable IR (this does not mean the switch "
            "is inert)"]), pair)
    first, second = (sides[c] for c in pair)
    topo = f"scoped converts {first.scoped} -> {second.scoped} (unscoped {first.unscoped} -> {second.unscoped})"
    if any(sides[c].unjoinable for c in pair):
        topo += "; a stage file has no launch count: topology is not evidence"
    if change.state == irevidence.EQUAL:
        return Verdict(NO_IR_DIFF, "; ".join(notes + [
            f"{pair[0]} and {pair[1]} {f.ir_stage} {change.equal_text}: the switch changed no "
            f"generated code, skip it; {topo}"]), pair)
    ended = [f"{s.cell} ended {_rc(s)} after {s.rows or 0} row(s)" for s in (first, second) if s.rc not in (None, 0)]
    return Verdict(IR_CHANGED, "; ".join(notes + [f"{pair[0]} and {pair[1]} {f.ir_stage} differ: measure it; {topo}"]
                                         + irpairing.reach(first.variants, second.variants, pair, ended)), pair)
