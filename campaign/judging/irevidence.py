"""IR evidence of one cell: fingerprint and scoped convert topology over ``ir/``.

Reads what `campaign.plugins.ir_capture` writes: ``ir/<hash>-<kernel>.<stage>``
and ``ir/index.tsv`` (hash, kernel, launches, stages), called with a cell's ``ir/`` by
`campaign.judging.evidence`. The screen, the runner's adaptive rounds, the classifier
and reaccount all judge IR through this module, and "did the IR change" is one
function, `ir_change`, so the criterion cannot drift between them.

- The fingerprint names variants by kernel name and content, never by Triton's
  cache hash: the hash covers the set environment variables, so a control cell
  (``DISABLE_MMA_V3=0``) has new hashes and byte-identical code.
- Source locations and the switch's own annotations are stripped first, so the
  same code fingerprints the same in every cell and on every machine.
- No IR file at all is *no comparable IR* (``None``), never "identical".
- Differing fingerprints are judged variant by variant, paired by (kernel, signature)
  (`campaign.judging.irpairing`): a kernel that Triton specialised differently because a
  scalar's value differed between processes is no code change, and says so (``unpaired``).
- A cell that benchmarked autotune configs (round 1's recording baseline) holds a
  variant for every config it tried, not only the one its measured calls use: its
  IR set is comparable to no replaying cell (`holds_tuning_variants`). Measured on
  the H200: FlagGems mm's recording cell held 162 TTGIR variants, every replaying
  cell 2, so comparing the two called the control a leak and counted converts of
  configs no timer ever saw.
- Topology counts ``ttg.convert_layout`` only over variants launched more than
  the floor; a stage file with no row in the index is *unjoinable*: evidence
  missing, never zero.
"""
from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Optional

from campaign.contract.artifacts import INDEX_COLUMNS, INDEX_FILE
from campaign.contract.cellfiles import AutotuneFile
from campaign.contract.fields import BASELINE, CANDIDATE, CONTROL
from campaign.judging import irpairing
from campaign.judging.irnormalize import normalize  # noqa: F401 (the fingerprint's text; read here by evidence and the screen)
from campaign.judging.irpairing import CellIR, VariantDigest

CONVERT = "ttg.convert_layout"

@dataclass(frozen=True)
class Variant:
    hash: str
    kernel: str
    launches: int


@dataclass(frozen=True)
class Topology:
    scoped: int                          # converts in variants launched > floor
    unscoped: int                        # converts in every variant
    excluded: tuple[str, ...]            # files left out by the floor
    unjoinable: tuple[str, ...]          # files with no row in index.tsv
    floor: int

    @property
    def joinable(self) -> bool:
        return not self.unjoinable


@dataclass
class Index:
    variants: dict[str, Variant] = field(default_factory=dict)
    present: bool = False


def split_name(path: Path) -> tuple[str, str, str]:
    """``<hash>-<kernel>.<stage>`` -> (hash, kernel, stage)."""
    stem, _, stage = path.name.rpartition(".")
    variant_hash, _, kernel = stem.partition("-")
    return variant_hash, kernel, stage


def stage_files(ir_dir: Path, stage: str) -> list[Path]:
    if not ir_dir.is_dir():
        return []
    return sorted(p for p in ir_dir.iterdir() if p.is_file() and p.suffix == f".{stage}")


def read_cell_ir(ir_dir: Path, stage: str = "ttgir", strip_patterns: Iterable[str] = ()) -> CellIR:
    """Every variant's kernel, signature (`irpairing.signature`) and sha256 of its normalized
    content, sorted, and the fingerprint over (kernel, content): each file is read once."""
    patterns = tuple(strip_patterns)
    items = []
    for path in stage_files(Path(ir_dir), stage):
        _, kernel, _ = split_name(path)
        content = normalize(path.read_text(encoding="utf-8", errors="replace"), stage, patterns)
        items.append(VariantDigest(kernel, irpairing.signature(content, stage, kernel),
                                   hashlib.sha256(content.encode()).hexdigest()))
    variants = tuple(sorted(items, key=lambda v: (v.line, v.signature or "")))
    return CellIR(fingerprint_of(v.line for v in variants), variants)


def fingerprint_of(variants: Iterable[str]) -> Optional[str]:
    items = sorted(variants)
    return hashlib.sha256("\n".join(items).encode()).hexdigest() if items else None


def fingerprint(ir_dir: Path, stage: str = "ttgir", strip_patterns: Iterable[str] = ()) -> Optional[str]:
    """SHA-256 over (kernel name, normalized content) of every variant; None: no comparable IR."""
    return read_cell_ir(ir_dir, stage, strip_patterns).fingerprint


def read_index(ir_dir: Path) -> Index:
    path = Path(ir_dir) / INDEX_FILE
    index = Index()
    if not path.is_file():
        return index
    index.present = True
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        if tuple(reader.fieldnames or ()) != INDEX_COLUMNS:
            raise ValueError(f"{path}: columns {reader.fieldnames} are not {list(INDEX_COLUMNS)}")
        for row in reader:
            index.variants[row["hash"]] = Variant(row["hash"], row["kernel"], int(row["launches"]))
    return index


def convert_count(text: str) -> int:
    return text.count(CONVERT)


def topology(ir_dir: Path, floor: int) -> Topology:
    """Convert counts over TTGIR, scoped to variants launched more than ``floor`` times."""
    ir_dir = Path(ir_dir)
    index = read_index(ir_dir)
    scoped = unscoped = 0
    excluded, unjoinable = [], []
    for path in stage_files(ir_dir, "ttgir"):
        count = convert_count(path.read_text(encoding="utf-8", errors="replace"))
        unscoped += count
        variant = index.variants.get(split_name(path)[0])
        if variant is None:
            unjoinable.append(path.name)
        elif variant.launches > floor:
            scoped += count
        else:
            excluded.append(path.name)
    return Topology(scoped, unscoped, tuple(excluded), tuple(unjoinable), floor)


def holds_tuning_variants(autotune: Optional[AutotuneFile]) -> bool:
    """True when the cell benchmarked configs: its ir/ then holds every config's variants."""
    return autotune is not None and autotune.policy == "measured" and autotune.tuning_runs > 0


EVERY_CONFIG, SOME_CONFIGS, FIRST_CONFIG_ONLY = "every", "some", "first"


def untimed_coverage(autotune: Optional[AutotuneFile]) -> Optional[str]:
    """Which configs an untimed (first-config) cell's IR holds of each autotune key it met:
    ``every`` config, ``some`` (configs that did not compile are absent, named in autotune.json),
    or the ``first`` only -- how untimed cells were written before they compiled every config.
    None for a cell that is not first-config (or has no autotune.json), and for one that
    replayed measured winners: like a device cell, it holds the code of what was timed."""
    if autotune is None or autotune.policy != "first-config" or autotune.replayed == "measured":
        return None
    warmed = {(w.kernel, w.key) for w in autotune.warmup}
    if any((e.kernel, e.key) not in warmed for e in autotune.entries + autotune.fallbacks):
        return FIRST_CONFIG_ONLY
    return SOME_CONFIGS if any(w.cold for w in autotune.warmup) else EVERY_CONFIG


def weakest_coverage(coverages: Iterable[Optional[str]]) -> str:
    """The pair's coverage: its weaker side's (a side without a first-config record counts as every)."""
    order = (FIRST_CONFIG_ONLY, SOME_CONFIGS, EVERY_CONFIG)
    return min((c for c in coverages if c is not None), key=order.index, default=EVERY_CONFIG)


def comparable_pair(baseline_tuned: bool, cells: Iterable[str]) -> Optional[tuple[str, str]]:
    """The round-1 cells whose IR sets can be compared for "did the switch change code":
    baseline and candidate, unless the baseline benchmarked configs; then the control,
    which replays like the candidate and differs from it only by the switch. None: no
    comparable pair (a tuning baseline and no control)."""
    if not baseline_tuned:
        return (BASELINE, CANDIDATE)
    return (CONTROL, CANDIDATE) if CONTROL in cells else None


EQUAL, DIFFER, NOT_COMPARABLE = "equal", "differ", "not_comparable"
NO_PAIR, NO_IR = "no_pair", "no_ir"


@dataclass(frozen=True)
class IrChange:
    """Whether the switch changed the generated code: `ir_change`'s answer.

    ``reason`` says why a pair is not comparable: ``NO_PAIR`` (the baseline tuned and
    there is no control) or ``NO_IR`` (``missing`` cells of the pair have no stage file).
    ``unpaired``: where the fingerprints differ and the state is EQUAL, one line per kernel
    whose only differences are unpaired specialisations (`campaign.judging.irpairing`)."""

    state: str                                   # EQUAL | DIFFER | NOT_COMPARABLE
    pair: Optional[tuple[str, str]]              # the cells compared; None: no comparable pair
    reason: str = ""
    missing: tuple[str, ...] = ()
    fingerprint: Optional[str] = None            # the pair's first cell's, where comparable
    unpaired: tuple[str, ...] = ()

    @property
    def changed(self) -> Optional[bool]:
        """True: differ; False: equal; None: not comparable -- never "identical"."""
        return None if self.state == NOT_COMPARABLE else self.state == DIFFER

    @property
    def equal_text(self) -> str:
        """How an EQUAL decision reads wherever it is shown: the fingerprint, or the named exception."""
        if self.unpaired:
            return f"{irpairing.EXCEPTION}: {'; '.join(self.unpaired)}"
        return f"equal ({(self.fingerprint or '')[:12]})"


def _consistent(cell: CellIR) -> bool:
    # variants that are not what the fingerprint was taken over prove nothing about it
    return fingerprint_of(v.line for v in cell.variants) == cell.fingerprint


def ir_change(baseline_tuned: bool, cells: Iterable[str], prints: Mapping[str, Optional[CellIR]]) -> IrChange:
    """The one decision "did the IR change" for the screen, the adaptive rounds and the classifier.

    ``prints``: cell -> its IR (`read_cell_ir`; None or a None fingerprint: no IR file of the
    stage); only the pair's cells are looked at. A pair with a side without IR is not
    comparable, never equal. Equal fingerprints are equal; differing ones are equal only
    where every difference is an unpaired specialisation (`irpairing.unpaired_only`)."""
    pair = comparable_pair(baseline_tuned, cells)
    if pair is None:
        return IrChange(NOT_COMPARABLE, None, NO_PAIR)
    missing = tuple(c for c in pair if prints.get(c) is None or prints[c].fingerprint is None)
    if missing:
        return IrChange(NOT_COMPARABLE, pair, NO_IR, missing)
    first, second = (prints[c] for c in pair)
    unpaired = same_code(first, second, pair)
    if unpaired is None:
        return IrChange(DIFFER, pair, fingerprint=first.fingerprint)
    return IrChange(EQUAL, pair, fingerprint=first.fingerprint, unpaired=unpaired)


def same_code(first: CellIR, second: CellIR, names: tuple[str, str]) -> Optional[tuple[str, ...]]:
    """Whether two cells' IR is the same code: ``()`` for equal fingerprints, the named exceptions
    where every difference is an unpaired specialisation (`irpairing.unpaired_only`), None where
    the code differs. Both sides must have IR. The control-leak checks use it too, so a
    data-dependent specialisation is never a leak where it is never a change."""
    if first.fingerprint == second.fingerprint:
        return ()
    if not (_consistent(first) and _consistent(second)):
        return None
    return irpairing.unpaired_only(first, second, names) or None
