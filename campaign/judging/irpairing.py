"""Pairing two cells' IR variants by (kernel, signature): what `campaign.judging.irevidence.ir_change`
asks when two fingerprints differ.

Triton specialises an int argument by its value (``i32`` or ``i64``, divisible by 16 or not),
and the value can differ from process to process: FlagGems 5.0.2's ``fill_scalar_kernel``, a
kernel its benchmarks launch in setup, compiled ``%value_scalar: i64 {tt.divisibility = 16 : i32}``
in the candidate and a plain ``i64`` in baseline and control of one H200 campaign, every other
variant (its ``i32`` one included) byte-identical. Compared as whole sets, that data-dependent variant read as "the switch
changed the code". So a variant is named by its kernel and its signature -- the entry's parameter
list as the stage prints it, locations stripped -- and a difference made only of variants whose
signature the other side never compiled is not a code change, provided each such kernel also
has a variant of one signature whose content is equal on both sides: the switch met that kernel
and left its code alone. Anything else stays a difference: a paired variant whose content
differs, a kernel whose variants are all unpaired (the switch may change specialisation itself),
a kernel on one side only, and any stage whose text names no parameter types (sass). Where a compared
cell failed, `reach` says how the two sets overlap; it decides nothing.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Optional

EXCEPTION = "equal up to unpaired specialisations"


@dataclass(frozen=True)
class VariantDigest:
    kernel: str
    signature: Optional[str]         # None: the stage prints no parameter list (sass), or none was found
    digest: str                      # sha256 of the normalized content

    @property
    def line(self) -> str:
        """What the fingerprint is taken over: kernel and content, never the signature."""
        return f"{self.kernel}\t{self.digest}"


@dataclass(frozen=True)
class CellIR:
    """One cell's IR at the manifest's stage, read once: its fingerprint and its variants."""

    fingerprint: Optional[str]       # None: no IR file of the stage
    variants: tuple[VariantDigest, ...] = ()


def _entry(stage: str, kernel: str) -> Optional[re.Pattern[str]]:
    name = re.escape(kernel)
    if stage in ("ttir", "ttgir"):
        return re.compile(rf"tt\.func\s+public\s+@{name}\(")
    if stage == "llir":
        return re.compile(rf"^define\b[^\n]*@{name}\(", re.MULTILINE)
    if stage == "ptx":
        return re.compile(rf"\.entry\s+{name}\s*\(")
    return None


def signature(text: str, stage: str, kernel: str) -> Optional[str]:
    """The entry's parameter list in ``text`` (normalized, so without locations), whitespace
    collapsed; None where the stage has none or the entry is not found or not closed."""
    pattern = _entry(stage, kernel)
    found = pattern.search(text) if pattern else None
    if found is None:
        return None
    start = found.end() - 1
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return " ".join(text[start:i + 1].split())
    return None


def _count(n: int) -> str:
    return f"{n} variant{'' if n == 1 else 's'}"


def unpaired_only(first: CellIR, second: CellIR, names: tuple[str, str]) -> Optional[tuple[str, ...]]:
    """One line per kernel when every differing variant is unpaired and each of those kernels
    has a paired variant equal on both sides; None when the two sets differ in code."""
    a, b = Counter(first.variants), Counter(second.variants)
    only = (a - b, b - a)
    differing = list(only[0]) + list(only[1])
    if any(v.signature is None for v in differing):
        return None
    keys = ({(v.kernel, v.signature) for v in a}, {(v.kernel, v.signature) for v in b})
    # a differing variant whose (kernel, signature) the other side also compiled: content differs
    if any((v.kernel, v.signature) in keys[1] for v in only[0]) or any((v.kernel, v.signature) in keys[0]
                                                                          for v in only[1]):
        return None
    equal = a & b
    lines = []
    for kernel in sorted({v.kernel for v in differing}):
        if not any(v.kernel == kernel for v in equal):
            return None
        counts = [sum(n for v, n in side.items() if v.kernel == kernel) for side in only]
        lines.append(f"{kernel}: {_count(counts[0])} only in {names[0]}, {_count(counts[1])} only in {names[1]} "
                     "(signature differs: data-dependent specialisation)")
    return tuple(lines)


def reach(first: tuple[VariantDigest, ...], second: tuple[VariantDigest, ...], names: tuple[str, str],
          ended: list[str]) -> list[str]:
    """Where a compared cell failed (``ended``: how each failed side ended), what the difference is made of:
    a failed cell's IR is what it compiled before it ended, so the two sets may differ only in how far each
    got (masked_select offline, 2026-12-07: 3 and 6 rows, an IR_CHANGED the switch had no part in). Said,
    never decided: the verdict stands, and the card the workload is emitted to settles it."""
    if not ended:
        return []
    a, b = set(first), set(second)
    return [f"{', '.join(ended)}: a failed cell's IR is what it compiled before it ended; {len(a & b)} variant(s) "
            f"in both, {len(a - b)} only in {names[0]}, {len(b - a)} only in {names[1]}"]
