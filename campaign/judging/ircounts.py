"""What kind of change it was: counts read from one kernel variant's IR stages.

Pure over the texts (normalised as fingerprints are, `campaign.judging.irevidence.normalize`):
each count names the stage it is read from, and a count whose stage was not captured is
absent, never zero. Read by `campaign.judging.irdiff` for both sides of a pair.

- ttgir: ``ttg.convert_layout`` ops; the MMA form of every dot (``ttng.warp_group_dot``:
  wgmma; ``tt.dot`` into an ``nvidia_mma`` v2 layout: mma v2, into an ``amd_mfma`` one:
  mfma, into a blocked layout: FMA); ``num-warps``; the bytes of ``ttg.local_alloc``
  buffers (shared memory the kernel allocates itself, pipelining stages included; scratch
  for layout conversions and reductions is assigned later and not in the TTGIR).
- ptx: global loads and stores by width in bits (vector length x element bits) and
  ``cp.async`` copies by bytes.
- sass: registers (EIATTR_REGCOUNT), the frame size (EIATTR_FRAME_SIZE: local memory per
  thread, which spills need), LDL/STL instructions (local loads and stores: spills or local
  arrays) and the instruction mix by opcode (FFMA vs FMUL + FADD, HGMMA vs HMMA, ...).
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Mapping

CONVERT = "ttg.convert_layout"
WGMMA, MMA_V2, MFMA, FMA = "wgmma", "mma v2", "mfma", "FMA"

_ALIAS = re.compile(r"^#(\w+)\s*=\s*#(\w+)\.(\w+)<\{?(.*)$", re.MULTILINE)
_DOT = re.compile(r"\btt\.dot\b[^\n]*->\s*tensor<[^\n]*?,\s*#(\w+)[^\n]*$", re.MULTILINE)
_WARP_GROUP_DOT = re.compile(r"\bttng\.warp_group_dot\b(?!_wait)")
_NUM_WARPS = re.compile(r'"ttg\.num-warps"\s*=\s*(\d+)')
_LOCAL_ALLOC = re.compile(r"ttg\.local_alloc\b[^\n]*?!ttg\.memdesc<([0-9x]+)x([a-z]+)(\d+)")
_PTX_GLOBAL = re.compile(r"\b(ld|st)\.global((?:\.[a-z_]+)*?)(?:\.v(\d))?\.[bfus](\d+)\b")
_CP_ASYNC = re.compile(r"\bcp\.async\.c[ag]\.shared\.global(?:\.[a-z0-9_:]+)*\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-f]+|\d+)")
# the value word of an nv.info attribute: ".word index@(kernel)" then ".word 0x...."
_ATTR = r"EIATTR_{}\b(?:(?!EIATTR_).)*?\.word\s+index@\([^)]*\)\s*(?:/\*[0-9a-f]+\*/)?\s*\.word\s+0x([0-9a-f]+)"
_REGCOUNT = re.compile(_ATTR.format("REGCOUNT"), re.DOTALL)
_FRAME = re.compile(_ATTR.format("FRAME_SIZE"), re.DOTALL)
# an instruction line: optional offset, optional predicate, the opcode, operands, ';'
_SASS_OP = re.compile(r"^\s*(?:/\*[0-9a-f]+\*/)?\s*(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]+)?\b[^;\n]*;",
                      re.MULTILINE)
# the opcodes a reviewer of a compiler switch asks about first; the whole mix is kept too
NAMED_OPCODES = ("FFMA", "FMUL", "FADD", "HFMA2", "HMUL2", "HADD2", "HMMA", "HGMMA", "IMMA", "LDL", "STL")
_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64,
         "f8E4M3FN": 8, "f8E5M2": 8}


def dot_forms(ttgir: str) -> Counter[str]:
    """The MMA form of every dot of a TTGIR text."""
    layouts = {m.group(1): (m.group(3), m.group(4)) for m in _ALIAS.finditer(ttgir)}
    forms: Counter[str] = Counter()
    forms[WGMMA] += len(_WARP_GROUP_DOT.findall(ttgir))
    for m in _DOT.finditer(ttgir):
        kind, body = layouts.get(m.group(1), ("", ""))
        if kind == "nvidia_mma":
            major = re.search(r"versionMajor\s*=\s*(\d+)", body)
            forms[WGMMA if major and major.group(1) == "3" else MMA_V2] += 1
        elif kind.startswith("amd_mfma") or kind.startswith("amd_wmma"):
            forms[MFMA] += 1
        else:
            forms[FMA] += 1
    return +forms


def local_alloc_bytes(ttgir: str) -> int:
    total = 0
    for dims, kind, bits in _LOCAL_ALLOC.findall(ttgir):
        elements = 1
        for d in dims.split("x"):
            elements *= int(d)
        total += elements * _BITS.get(f"{kind}{bits}", int(bits)) // 8
    return total


def ttgir_counts(text: str) -> dict[str, object]:
    warps = _NUM_WARPS.search(text)
    forms = dot_forms(text)
    return {"convert_layout": text.count(CONVERT),
            "MMA form": ", ".join(f"{form} x{n}" for form, n in sorted(forms.items())) or "no dot",
            "num_warps": int(warps.group(1)) if warps else "not in the IR",
            "shared memory (local_alloc bytes)": local_alloc_bytes(text)}


def ptx_counts(text: str) -> dict[str, object]:
    widths: Counter[str] = Counter()
    for op, _, vec, bits in _PTX_GLOBAL.findall(text):
        widths[f"{op}.global {int(vec or 1) * int(bits)}-bit"] += 1
    for size in _CP_ASYNC.findall(text):
        widths[f"cp.async {int(size, 0)} B"] += 1
    return {"global loads/stores by width": ", ".join(f"{k} x{n}" for k, n in sorted(widths.items())) or "none"}


def opcode_mix(sass: str) -> Counter[str]:
    return Counter(_SASS_OP.findall(sass))


def sass_counts(text: str) -> dict[str, object]:
    regs, frame = _REGCOUNT.search(text), _FRAME.search(text)
    mix = opcode_mix(text)
    out: dict[str, object] = {"registers": int(regs.group(1), 16) if regs else "not in the SASS",
                              "frame size (local bytes per thread)": int(frame.group(1), 16) if frame else "not in the SASS",
                              "LDL/STL (local: spills or arrays)": mix["LDL"] + mix["STL"]}
    out.update({f"SASS {op}": mix[op] for op in NAMED_OPCODES if op not in ("LDL", "STL")})
    out["SASS instructions"] = sum(mix.values())
    return out


READERS = {"ttgir": ttgir_counts, "ptx": ptx_counts, "sass": sass_counts}


def counts(texts: Mapping[str, str]) -> dict[str, object]:
    """Every count of one variant, from the stages it has (``texts``: stage -> normalised text)."""
    out: dict[str, object] = {}
    for stage, read in READERS.items():
        if stage in texts:
            out.update({f"{name} [{stage}]": value for name, value in read(texts[stage]).items()})
    return out


def mix_changes(left: str, right: str) -> list[tuple[str, int, int]]:
    """Every SASS opcode whose count differs between two texts: (opcode, left, right)."""
    a, b = opcode_mix(left), opcode_mix(right)
    return [(op, a[op], b[op]) for op in sorted(set(a) | set(b)) if a[op] != b[op]]
