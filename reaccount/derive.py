"""Re-derive a sealed root's verdicts under another launch floor, outside the root.

Nothing is run and nothing inside the sealed root is written. Every cell's IR
and index are re-read, scoped topology is recomputed at the new floor and the
classifier is re-run against the sealed correctness and timing evidence. The
result may only demote a sealed claim:

- a workload keeps its class, becomes X, or moves down the ladder toward B
  (G -> C, G -> B, C -> B, R -> B);
- anything else becomes X: a reduction appearing first under the new rule was
  never given its reversed-order test in the sealed run ("no reversed-order
  evidence"), and no other new claim is promoted from old evidence;
- a floor that excludes every launched variant of the baseline or the candidate
  leaves no topology to judge: the classifier's X, never B (a sealed R at 4 -> 9
  converts would otherwise read "0 -> 0: not reduced" at a high enough floor);
- a sealed R moves to B only with evidence beside the floor: the new floor still
  scopes variants on both sides and the sealed timing does not say slower (not
  overall, not in one order, not one shape); otherwise X.

The derived receipt names the rule, the sealed receipt's digest, every class
change (before -> after, why), the files the floor excludes and the unscoped
totals. At the sealed floor it reproduces the sealed verdicts exactly, unless that
floor itself excluded every launched variant of a side (then X, as above).
"""
from __future__ import annotations

from pathlib import Path
from typing import Collection, Optional, Union

from campaign.contract import canonical
from campaign.contract.artifacts import MATRIX_FILE, RECEIPT_FILE, SCHEMA_VERSION
from campaign.contract.errors import EXIT_INPUT, REACCOUNT_REFUSED, InputError, Refused
from campaign.contract.receiptmodel import Receipt, ReceiptV1
from campaign.contract.records import Verdicts
from campaign.contract.runroot import RunRoot
from campaign.contract.verdictnames import CLASSES, CLEAN_REDUCTION, GAIN, INCONCLUSIVE, NO_CHANGE, REGRESSION
from campaign.judging import direction
from campaign.judging.classify import classify
from campaign.judging.evidence import load_root
from campaign.reporting import report
from campaign.sealing import receipt, verification

PREFIX = REACCOUNT_REFUSED
DEMOTIONS = {(GAIN, CLEAN_REDUCTION), (GAIN, NO_CHANGE), (CLEAN_REDUCTION, NO_CHANGE), (REGRESSION, NO_CHANGE)}
REPORT_FILE = "report.md"


def newest_sealed(runs: Path) -> Path:
    """The sealed root under ``runs`` with the latest seal time (name breaks ties)."""
    found = []
    for path in sorted(Path(runs).iterdir()) if Path(runs).is_dir() else []:
        if (path / RECEIPT_FILE).is_file():
            try:
                data = canonical.read_json(path / RECEIPT_FILE)
            except (OSError, ValueError):
                data = None
            sealed = str(data.get("sealed_utc") or "") if isinstance(data, dict) else ""
            found.append((sealed, path.name, path))
    if not found:
        raise InputError(f"{runs}: no sealed root (a folder holding {RECEIPT_FILE}); name one")
    return max(found)[2]


def default_out(root: RunRoot, floor: int) -> Path:
    return root.path.parent / f"{root.name}.reaccount-floor{floor}"


def _kind(path: Path) -> Optional[str]:
    """The receipt's ``kind``; None where it cannot be read (verify then names why)."""
    try:
        data = canonical.read_json(path)
    except (OSError, ValueError):
        return None
    return data.get("kind") if isinstance(data, dict) else None


def check(root: RunRoot, out: Path, allow_schema: Collection[int] = ()) -> Union[Receipt, ReceiptV1]:
    """Refuse, naming the check; return the sealed receipt, as verify read it."""
    root, out = RunRoot(root.path.resolve()), Path(out).resolve()     # the refusals name the root resolved
    verification.require_sealed(root, PREFIX)
    # a derived receipt is no campaign receipt: said so before verify calls it malformed
    if _kind(root.receipt_file) == "derived":
        raise Refused(PREFIX, "receipt", f"{root}: holds a derived receipt, not a campaign receipt", EXIT_INPUT)
    sealed = receipt.require_verified(root, PREFIX, allow_schema).receipt
    if out == root.path or root.path in out.parents:
        raise Refused(PREFIX, "out_inside_root", f"{out} is inside the sealed root {root}")
    if (out / RECEIPT_FILE).exists():
        raise Refused(PREFIX, "out_has_receipt", f"{out} already holds a derived receipt")
    if sealed.verdicts is None:
        raise Refused(PREFIX, "verdicts", f"{root}: the receipt holds no verdicts ({sealed.verdicts_note})")
    return sealed


def says_slower(timing: Optional[dict]) -> Optional[str]:
    """Why a verdict's timing cannot carry R -> B (it says slower, or there is none); None when it can."""
    primary = (timing or {}).get("primary")
    if primary is None:
        return "no timed evidence"
    said = ["slower overall"] if primary["verdict"] == direction.SLOWER else []
    # the interval above the floor, even where orders or the test held the claim back
    said += ["an interval above the A/A floor"] if primary.get("leaning") == direction.SLOWER and not said else []
    said += [f"slower {order}" for order, v in sorted(primary["order_verdicts"].items()) if v == direction.SLOWER]
    shapes = primary["counts"].get(direction.SLOWER, 0)
    said += [f"{shapes} shape(s) slower"] if shapes else []
    return f"the timing says {', '.join(said)}" if said else None


def demote(before: dict, after: dict, floor: int) -> tuple[dict, list[dict]]:
    """Apply the demote-only rule per workload; return the final workloads and every change.
    (A floor that excludes every launched variant of a side is the classifier's own X.)"""
    final, changes = {}, []
    for name, new in after.items():
        old_class = before[name]["class"] if name in before else INCONCLUSIVE
        klass, reason = new["class"], new["reason"]
        if old_class == REGRESSION and klass == NO_CHANGE and says_slower(new.get("timing")):
            klass, reason = INCONCLUSIVE, (f"sealed R needs evidence, not only a floor, to become B: "
                                           f"{says_slower(new.get('timing'))} ({reason})")
        if klass != old_class and klass != INCONCLUSIVE and (old_class, klass) not in DEMOTIONS:
            if klass in (GAIN, CLEAN_REDUCTION):
                reason = (f"no reversed-order evidence: the reduction appears first at launch floor {floor} "
                          f"({reason})")
            else:
                reason = f"{klass} at launch floor {floor} would not demote sealed {old_class}: {reason}"
            klass = INCONCLUSIVE
        final[name] = {**new, "class": klass, "reason": reason}
        if klass != old_class:
            changes.append({"workload": name, "before": old_class, "after": klass, "why": reason})
    return final, changes


def derive(root: RunRoot, floor: int, sealed: Union[Receipt, ReceiptV1], sealed_digest: str) -> dict:
    sealed_verdicts = sealed.verdicts
    evidence = load_root(root, floor)
    fresh = classify(evidence).dump()
    # the demote rule reads the JSON form (`classify`'s output), as the sealed verdicts were written
    workloads, changes = demote(sealed_verdicts.dump()["workloads"], fresh["workloads"], floor)
    verdicts = Verdicts.read({**fresh, "workloads": workloads,
                              "counts": {k: sum(1 for w in workloads.values() if w["class"] == k) for k in CLASSES}})
    cells = {n: w.topology.cells for n, w in verdicts.workloads.items()}
    return {
        "schema_version": SCHEMA_VERSION, "kind": "derived", "campaign": sealed_verdicts.campaign,
        "rule": {"name": "measured_launch_floor", "sealed": sealed_verdicts.rule.measured_launch_floor,
                 "derived": floor, "demote_only": True},
        "sealed_root": str(root.path.resolve()), "sealed_receipt_sha256": sealed_digest,
        "changes": changes,
        "excluded": {task_id: list(t.topology.excluded) for task_id, t in sorted(evidence.tasks.items())
                     if t.topology and t.topology.excluded},
        "unscoped": {n: {c: t.unscoped for c, t in cs.items() if t} for n, cs in cells.items()},
        "scoped": {n: {c: t.scoped for c, t in cs.items() if t} for n, cs in cells.items()},
        "verdicts": verdicts.dump(),
    }


def derived_report(derived: dict) -> str:
    lines = [f"> Derived, not sealed: re-accounted from `{derived['sealed_root']}` (receipt sha256 "
             f"{derived['sealed_receipt_sha256'][:16]}) at launch floor {derived['rule']['derived']} "
             f"(sealed at {derived['rule']['sealed']}); demote-only.", ">"]
    if derived["changes"]:
        lines += [f"> - {c['workload']}: {c['before']} → {c['after']}: {c['why']}" for c in derived["changes"]]
    else:
        lines.append("> - no class changed")
    return "\n".join(lines) + "\n\n" + report.markdown(derived["verdicts"])


def reaccount(root: RunRoot, floor: int, out: Optional[Path] = None, allow_schema: Collection[int] = ()
              ) -> tuple[Path, dict]:
    out = Path(out) if out is not None else default_out(root, floor)
    sealed = check(root, out, allow_schema)
    derived = derive(root, floor, sealed, canonical.sha256_file(root.receipt_file))
    out.mkdir(parents=True, exist_ok=True)
    canonical.write_new(out / MATRIX_FILE, root.matrix_file.read_text(encoding="utf-8"))
    canonical.write_new(out / REPORT_FILE, derived_report(derived))
    derived["files"] = {name: canonical.sha256_file(out / name) for name in (MATRIX_FILE, REPORT_FILE)}
    canonical.write_json_new(out / RECEIPT_FILE, derived)
    return out, derived
