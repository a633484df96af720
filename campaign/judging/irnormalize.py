"""The text an IR fingerprint is taken over: one stage's file with what differs between equal code removed.

Source locations (``#loc`` definitions and inline ``loc(...)`` in TTIR/TTGIR, debug metadata in
LLIR, ``.loc``/``.file`` and debug sections in PTX, section offsets in SASS) and the switch's own
annotations (the manifest's ``strip_annotations``, applied under a time limit) are removed, so the
same code normalises the same in every cell and on every machine (`campaign.judging.irevidence`
fingerprints it, `campaign.judging.irdiff` diffs it).
"""
from __future__ import annotations

import re
from typing import Iterable

from campaign.contract import stripregex
from campaign.contract.sasstext import sass_code

_LOC_DEF = re.compile(r"^#loc[\w.]*\s*=\s*loc\(.*$")
_LLIR_DEBUG_LINE = re.compile(r"^(!\d+ = (distinct )?!DI|!llvm\.dbg\.|!llvm\.module\.flags|source_filename|; ModuleID)")
_LLIR_DBG_REF = re.compile(r",\s*!dbg !\d+")
_PTX_DEBUG_LINE = re.compile(r"^\s*\.(loc|file)\s")
# An offset within its section (/*01c0*/): equal for equal code, shifted by any insertion.
# Instruction encodings (/* 0x000fe20000000800 */) are kept: they carry the scheduling bits.
_SASS_OFFSET = re.compile(r"/\*[0-9a-f]{4,}\*/")


def _strip_locs(text: str) -> str:
    """Remove ``loc(...)`` attributes (balanced, quote-aware) and ``#loc`` definitions."""
    out_lines = []
    for line in text.splitlines():
        if _LOC_DEF.match(line):
            continue
        out_lines.append(_strip_inline_locs(line))
    return "\n".join(out_lines)


def _strip_inline_locs(line: str) -> str:  # noqa: C901 (a character scanner over one IR line)
    result, i = [], 0
    while True:
        j = line.find("loc(", i)
        if j < 0 or (j > 0 and (line[j - 1].isalnum() or line[j - 1] in "_#.")):
            if j < 0:
                result.append(line[i:])
                return "".join(result).rstrip()
            result.append(line[i:j + 4])
            i = j + 4
            continue
        result.append(line[i:j])
        depth, k, quoted = 0, j + 3, False
        while k < len(line):
            ch = line[k]
            if quoted:
                if ch == "\\":
                    k += 1
                elif ch == '"':
                    quoted = False
            elif ch == '"':
                quoted = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1


def normalize(text: str, stage: str, strip_patterns: Iterable[str] = ()) -> str:
    """The text a fingerprint is taken over: locations and the switch's annotations removed."""
    if stage in ("ttir", "ttgir"):
        text = _strip_locs(text)
    elif stage == "llir":
        text = "\n".join(_LLIR_DBG_REF.sub("", line) for line in text.splitlines()
                         if not _LLIR_DEBUG_LINE.match(line))
    elif stage == "ptx":
        kept = []
        for line in text.splitlines():
            if line.strip().startswith(".section") and ".debug" in line:
                break  # debug sections close a PTX module; nothing after them is code
            if not _PTX_DEBUG_LINE.match(line):
                kept.append(line)
        text = "\n".join(kept)
    elif stage == "sass":
        text = _SASS_OFFSET.sub("", sass_code(text))
    text = stripregex.strip(text, strip_patterns)  # under a time limit: a backtracking pattern is an error, not a hang
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip()) + "\n"
