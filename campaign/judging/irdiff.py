"""What the switch did to the code: two cells' IR variants paired and diffed, stage by stage.

Pure over the variants `campaign.judging.evidence.cell_variant_texts` reads (texts normalised
as fingerprints are). Variants are paired as the one IR rule pairs them
(`campaign.judging.irpairing`): by kernel and signature. Within one (kernel, signature) --
an autotuned kernel compiles one variant per config, all of one signature -- a variant whose
content at the judged stage is on both sides is paired with its equal; the rest are matched by
the closest TTIR (the stage above the layout and MMA decisions, so one config's two sides stay
together), else by the closest text at the judged stage. What is left over on one side, and every
(kernel, signature) only one side compiled, is unpaired and listed, never diffed against a guess.
"""
from __future__ import annotations

import difflib
import hashlib
from collections import defaultdict
from dataclasses import dataclass
from itertools import zip_longest
from typing import Optional

from campaign.judging import ircounts

CONTEXT = 3                         # unchanged lines shown around each change, as `diff -u`


def digest(text: Optional[str]) -> str:
    return hashlib.sha256(text.encode()).hexdigest() if text is not None else ""


@dataclass(frozen=True)
class VariantTexts:
    hash: str                                   # Triton's cache hash: joins a variant's stage files in one cell
    kernel: str
    signature: Optional[str]                    # the entry's parameter list (`irpairing.signature`)
    digest: str                                 # sha256 of the judged stage's normalised text; "": not captured
    launches: Optional[int]                     # from index.tsv; None: no row
    texts: tuple[tuple[str, str], ...]          # (stage, normalised text)

    def text(self, stage: str) -> Optional[str]:
        return dict(self.texts).get(stage)

    @property
    def stages(self) -> tuple[str, ...]:
        return tuple(stage for stage, _ in self.texts)


@dataclass(frozen=True)
class Pair:
    kernel: str
    signature: Optional[str]
    left: Optional[VariantTexts]                # None: only the right side compiled it
    right: Optional[VariantTexts]
    why: str = ""                               # for an unpaired variant: why it has no partner

    @property
    def paired(self) -> bool:
        return self.left is not None and self.right is not None

    @property
    def equal(self) -> bool:
        return self.paired and self.left.digest == self.right.digest

    def stages(self) -> tuple[str, ...]:
        """The stages both sides captured, in capture order."""
        if not self.paired:
            return (self.left or self.right).stages
        return tuple(s for s in self.left.stages if s in self.right.stages)


@dataclass(frozen=True)
class Row:
    """One line of a side-by-side diff; ``tag`` is difflib's, or ``skip`` for unchanged lines left out."""

    tag: str
    left_no: Optional[int]
    left: str
    right_no: Optional[int]
    right: str


def _similarity(a: VariantTexts, b: VariantTexts, judged: str) -> float:
    stage = "ttir" if a.text("ttir") is not None and b.text("ttir") is not None else judged
    if a.text(stage) == b.text(stage):
        return 2.0
    return difflib.SequenceMatcher(None, (a.text(stage) or "").splitlines(), (b.text(stage) or "").splitlines()).ratio()


def _match_group(left: list[VariantTexts], right: list[VariantTexts], judged: str) -> list[tuple]:
    """(left, right) pairs of one (kernel, signature): equal content first, then the closest."""
    pairs, left, right = [], list(left), list(right)
    for a in list(left):
        b = next((b for b in right if b.digest == a.digest), None)
        if b is not None:
            pairs.append((a, b))
            left.remove(a)
            right.remove(b)
    scored = sorted(((_similarity(a, b, judged), i, j) for i, a in enumerate(left) for j, b in enumerate(right)),
                    key=lambda s: (-s[0], s[1], s[2]))
    used_l, used_r = set(), set()
    for _, i, j in scored:
        if i not in used_l and j not in used_r:
            pairs.append((left[i], right[j]))
            used_l.add(i)
            used_r.add(j)
    pairs += [(a, None) for i, a in enumerate(left) if i not in used_l]
    pairs += [(None, b) for j, b in enumerate(right) if j not in used_r]
    return pairs


def pair_variants(left: tuple[VariantTexts, ...], right: tuple[VariantTexts, ...], judged: str,
                  names: tuple[str, str]) -> tuple[Pair, ...]:
    """Every variant of both sides, paired by (kernel, signature); unpaired ones carry their reason."""
    groups: dict[tuple, tuple[list, list]] = defaultdict(lambda: ([], []))
    for side, variants in enumerate((left, right)):
        for v in variants:
            groups[(v.kernel, v.signature or "")][side].append(v)
    out = []
    for (kernel, signature), (a, b) in sorted(groups.items()):
        for x, y in _match_group(a, b, judged):
            why = ""
            if x is None or y is None:
                only, other = (names[0], names[1]) if y is None else (names[1], names[0])
                why = (f"only {only} compiled this signature" if not (a and b) else
                       f"{only} compiled more variants of this signature than {other}")
            out.append(Pair(kernel, signature or None, x, y, why))
    return tuple(out)


def side_by_side(a: str, b: str, context: int = CONTEXT) -> tuple[Row, ...]:
    """The changed lines of ``a`` -> ``b`` with ``context`` unchanged lines around each change;
    a ``skip`` row stands for the unchanged lines left out between two changes."""
    left, right = a.splitlines(), b.splitlines()
    rows: list[Row] = []
    groups = list(difflib.SequenceMatcher(None, left, right).get_grouped_opcodes(context)) if left != right else []
    for n, group in enumerate(groups):
        if n or group[0][1] > 0:
            rows.append(Row("skip", None, "", None, ""))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [Row(tag, i + 1, left[i], j + 1, right[j]) for i, j in zip(range(i1, i2), range(j1, j2))]
                continue
            for i, j in zip_longest(range(i1, i2), range(j1, j2)):
                rows.append(Row(tag, None if i is None else i + 1, "" if i is None else left[i],
                                None if j is None else j + 1, "" if j is None else right[j]))
    if groups and groups[-1][-1][2] < len(left):
        rows.append(Row("skip", None, "", None, ""))
    return tuple(rows)


def changed_lines(rows: tuple[Row, ...]) -> tuple[int, int]:
    """Lines removed from the left and added on the right."""
    return (sum(r.left_no is not None for r in rows if r.tag in ("replace", "delete")),
            sum(r.right_no is not None for r in rows if r.tag in ("replace", "insert")))


@dataclass(frozen=True)
class CountChange:
    name: str
    left: object
    right: object

    @property
    def changed(self) -> bool:
        return self.left != self.right


def count_changes(pair: Pair) -> tuple[CountChange, ...]:
    """Every count (`campaign.judging.ircounts`) of both sides of a pair, the changed ones first."""
    left = ircounts.counts(dict(pair.left.texts)) if pair.left else {}
    right = ircounts.counts(dict(pair.right.texts)) if pair.right else {}
    names = list(dict.fromkeys(list(left) + list(right)))
    rows = [CountChange(n, left.get(n, "not captured"), right.get(n, "not captured")) for n in names]
    return tuple(sorted(rows, key=lambda c: not c.changed))


def opcode_changes(pair: Pair) -> tuple[tuple[str, int, int], ...]:
    """SASS opcodes whose count differs across the pair (empty where either side has no SASS)."""
    a, b = (pair.left.text("sass") if pair.left else None), (pair.right.text("sass") if pair.right else None)
    return tuple(ircounts.mix_changes(a, b)) if a is not None and b is not None else ()
