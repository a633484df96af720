"""Pairing IR variants by (kernel, signature) before "did the IR change" is decided.

On Triton's own TTGIR of FlagGems' ``fill_scalar_kernel`` (tests/data/irpairing, copied from an
H200 campaign's cells: ``%value_scalar: i32 {tt.divisibility = 16 : i32}`` and ``i64``), written
into cells in tmp_path and read as the evidence reads them: a difference made only of unpaired
specialisations of a kernel that also has an equal paired variant is EQUAL with the exception
named; a same-signature body that differs, a kernel whose variants are all unpaired, a kernel
on one side only, a stage without parameter types, and variants that are not what the
fingerprint was taken over all stay DIFFER. Fingerprints keep their bytes.
"""
from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from conftest import PROJECT_ROOT

from campaign.judging import irevidence, irpairing, screening, screentable
from campaign.judging.screening import Facts, Side

DATA = PROJECT_ROOT / "tests" / "data" / "irpairing"
I32 = (DATA / "fill_scalar_kernel-i32.ttgir").read_text(encoding="utf-8")
I64 = (DATA / "fill_scalar_kernel-i64.ttgir").read_text(encoding="utf-8")
# the candidate's variant on the H200: i64, and the value happened to be divisible by 16
I64_DIV16 = I64.replace('%value_scalar: i64 loc(', '%value_scalar: i64 {tt.divisibility = 16 : i32} loc(')
# an mm-like kernel: one signature, and the switch turns its wgmma into mma v2
MM = """#mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}>
module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {
  tt.func public @mm_kernel(%a_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("a_ptr"(#loc)), %M: i32 loc("M"(#loc))) attributes {noinline = false} {
    %acc = ttng.warp_group_dot %a, %b, %c : tensor<64x16xf16, #mma> loc(#loc3)
    tt.return loc(#loc4)
  } loc(#loc)
} loc(#loc)
"""
MM_V2 = MM.replace("versionMajor = 3", "versionMajor = 2").replace("ttng.warp_group_dot", "tt.dot")
PAIR = ("baseline", "candidate")
FILL = "fill_scalar_kernel"
EXCEPTION_LINE = ("fill_scalar_kernel: 1 variant only in baseline, 1 variant only in candidate "
                  "(signature differs: data-dependent specialisation)")


def _cell(root: Path, name: str, variants: list[tuple[str, str]]) -> Path:
    """A cell's ir/ as ir_capture writes it: ``<hash>-<kernel>.ttgir`` per variant."""
    ir = root / name / "ir"
    ir.mkdir(parents=True)
    for kernel, text in variants:
        (ir / f"{hashlib.sha256(text.encode()).hexdigest()}-{kernel}.ttgir").write_text(text, encoding="utf-8")
    return ir


def _change(tmp_path: Path, baseline: list, candidate: list) -> irevidence.IrChange:
    irs = {name: irevidence.read_cell_ir(_cell(tmp_path, name, variants))
           for name, variants in zip(PAIR, (baseline, candidate))}
    return irevidence.ir_change(False, PAIR, irs)


def test_signature_is_the_entry_parameter_list_at_each_stage_and_none_for_sass():
    assert irpairing.signature(irevidence.normalize(I32, "ttgir"), "ttgir", "fill_scalar_kernel") == (
        "(%out_ptr: !tt.ptr<i64> {tt.divisibility = 16 : i32} , %value_scalar: i32 {tt.divisibility = 16 : i32} )")
    assert irpairing.signature(irevidence.normalize(I64, "ttgir"), "ttgir", "fill_scalar_kernel").endswith(
        "%value_scalar: i64 )")
    llir = ("define ptx_kernel void @fill_scalar_kernel(ptr addrspace(1) %0, i64 %1, ptr addrspace(1) readnone "
            "captures(none) %2) local_unnamed_addr #0 !dbg !4 {\n  ret void, !dbg !9\n}\n")
    assert irpairing.signature(irevidence.normalize(llir, "llir"), "llir", "fill_scalar_kernel") == (
        "(ptr addrspace(1) %0, i64 %1, ptr addrspace(1) readnone captures(none) %2)")
    ptx = (".visible .entry fill_scalar_kernel(\n\t.param .u64 .ptr .global .align 1 fill_scalar_kernel_param_0,\n"
           "\t.param .u32 fill_scalar_kernel_param_1\n)\n.reqntid 128\n{\n\tret;\n}\n")
    assert irpairing.signature(irevidence.normalize(ptx, "ptx"), "ptx", "fill_scalar_kernel") == (
        "( .param .u64 .ptr .global .align 1 fill_scalar_kernel_param_0, .param .u32 fill_scalar_kernel_param_1 )")
    assert irpairing.signature(ptx, "sass", "fill_scalar_kernel") is None
    assert irpairing.signature(I32, "ttgir", "other_kernel") is None


def test_fingerprints_keep_their_bytes(tmp_path: Path):
    ir = _cell(tmp_path, "baseline", [(FILL, I32), ("mm_kernel", MM)])
    lines = sorted(f"{kernel}\t{hashlib.sha256(irevidence.normalize(text, 'ttgir').encode()).hexdigest()}"
                   for kernel, text in (("fill_scalar_kernel", I32), ("mm_kernel", MM)))
    assert irevidence.fingerprint(ir) == hashlib.sha256("\n".join(lines).encode()).hexdigest()
    assert irevidence.read_cell_ir(ir).fingerprint == irevidence.fingerprint(ir)


def test_unpaired_specialisations_beside_an_equal_paired_variant_are_equal_with_the_exception_named(tmp_path: Path):
    # as on the H200: baseline {i32/16, i64}, candidate {i32/16, i64/16}; the i32 variant is byte-identical
    change = _change(tmp_path, [(FILL, I32), (FILL, I64), ("mm_kernel", MM)],
                     [(FILL, I32), (FILL, I64_DIV16), ("mm_kernel", MM)])
    assert (change.state, change.changed, change.unpaired) == (irevidence.EQUAL, False, (EXCEPTION_LINE,))
    assert change.equal_text == f"equal up to unpaired specialisations: {EXCEPTION_LINE}"


def test_identical_fingerprints_are_equal_as_before(tmp_path: Path):
    change = _change(tmp_path, [(FILL, I32)], [(FILL, I32)])
    assert (change.state, change.unpaired) == (irevidence.EQUAL, ())
    assert change.equal_text == f"equal ({change.fingerprint[:12]})"


def test_a_paired_variant_whose_body_differs_is_a_change_even_beside_an_unpaired_one(tmp_path: Path):
    change = _change(tmp_path, [(FILL, I32), (FILL, I64), ("mm_kernel", MM)],
                     [(FILL, I32), (FILL, I64_DIV16), ("mm_kernel", MM_V2)])
    assert (change.state, change.unpaired) == (irevidence.DIFFER, ())


def test_a_paired_variant_that_differs_is_a_change_even_where_the_kernel_has_an_equal_variant(tmp_path: Path):
    # two configs of one signature (constexprs are not in it): one equal, one the switch changed
    other = MM.replace("instrShape = [16, 64, 16]", "instrShape = [16, 128, 16]")
    change = _change(tmp_path, [("mm_kernel", MM), ("mm_kernel", other)],
                     [("mm_kernel", MM), ("mm_kernel", other.replace("ttng.warp_group_dot", "tt.dot"))])
    assert change.state == irevidence.DIFFER


def test_variants_that_are_not_what_the_fingerprint_was_taken_over_prove_nothing(tmp_path: Path):
    base = irevidence.read_cell_ir(_cell(tmp_path, "baseline", [(FILL, I32), (FILL, I64)]))
    cand = irevidence.read_cell_ir(_cell(tmp_path, "candidate", [(FILL, I32), (FILL, I64_DIV16)]))
    stale = dataclasses.replace(base, fingerprint=irevidence.fingerprint_of(["mm_kernel\t0"]))
    assert irevidence.ir_change(False, PAIR, {"baseline": base, "candidate": cand}).state == irevidence.EQUAL
    assert irevidence.ir_change(False, PAIR, {"baseline": stale, "candidate": cand}).state == irevidence.DIFFER


def test_a_kernel_whose_variants_are_all_unpaired_is_a_change(tmp_path: Path):
    # the switch may change specialisation itself: with no equal variant to vouch for the kernel, it differs
    change = _change(tmp_path, [(FILL, I32), ("mm_kernel", MM)],
                     [(FILL, I64), ("mm_kernel", MM)])
    assert change.state == irevidence.DIFFER


def test_a_kernel_on_one_side_only_is_a_change(tmp_path: Path):
    change = _change(tmp_path, [(FILL, I32)], [(FILL, I32), ("mm_kernel", MM)])
    assert change.state == irevidence.DIFFER


def test_variants_without_a_signature_are_never_paired(tmp_path: Path):
    # sass prints no parameter types: today's rule, any difference differs
    irs = {name: irevidence.read_cell_ir(_cell(tmp_path, name, variants)) for name, variants in zip(PAIR, (
        [(FILL, I32), (FILL, I64)], [(FILL, I32), (FILL, I64_DIV16)]))}
    assert irevidence.ir_change(False, PAIR, irs).state == irevidence.EQUAL
    unsigned = {c: dataclasses.replace(ir, variants=tuple(dataclasses.replace(v, signature=None) for v in ir.variants))
                for c, ir in irs.items()}
    assert irevidence.ir_change(False, PAIR, unsigned).state == irevidence.DIFFER
    # one side's entry not found (no signature) is no unpaired specialisation either
    shared = set(irs["candidate"].variants)
    one = {**irs, "baseline": dataclasses.replace(irs["baseline"], variants=tuple(
        v if v in shared else dataclasses.replace(v, signature=None) for v in irs["baseline"].variants))}
    assert irevidence.ir_change(False, PAIR, one).state == irevidence.DIFFER


def _side(cell: str, ir: irevidence.CellIR, variants: bool = True) -> Side:
    return Side(cell=cell, rc=0, rc_name="ok", elapsed_s=1.0, rows=1, fingerprint=ir.fingerprint,
                variants=ir.variants if variants else (), ir_files=len(ir.variants), scoped=0, unscoped=0)


def test_the_screen_says_no_ir_diff_with_the_exception_and_never_equal_on_variants_it_was_not_given(tmp_path: Path):
    irs = {name: irevidence.read_cell_ir(_cell(tmp_path, name, variants)) for name, variants in zip(PAIR, (
        [(FILL, I32), (FILL, I64)], [(FILL, I32), (FILL, I64_DIV16)]))}
    for given, verdict in ((True, screening.NO_IR_DIFF), (False, screening.IR_CHANGED)):
        facts = Facts(workload="w", op="fill", backend="cpu", ir_stage="ttgir", dtypes=("int64",), dtypes_own=True,
                      sides={c: _side(c, ir, given) for c, ir in irs.items()}, caliber={})
        row = screentable.row(facts)
        assert row["verdict"] == verdict, row
    assert f"baseline and candidate ttgir equal up to unpaired specialisations: {EXCEPTION_LINE}" not in row["note"]
    facts = dataclasses.replace(facts, sides={c: _side(c, ir) for c, ir in irs.items()})
    assert (f"baseline and candidate ttgir equal up to unpaired specialisations: {EXCEPTION_LINE}: the switch "
            "changed no generated code") in screentable.row(facts)["note"]


def test_a_control_that_differs_only_by_unpaired_specialisations_is_no_leak(tmp_path: Path):
    # the control-leak checks (screen note, classifier's F) use the switch's own rule: a
    # data-dependent specialisation is never a leak where it is never a change
    cells = {"baseline": [(FILL, I32), (FILL, I64), ("mm_kernel", MM)],
             "control": [(FILL, I32), (FILL, I64_DIV16), ("mm_kernel", MM)],
             "candidate": [(FILL, I32), (FILL, I64), ("mm_kernel", MM_V2)]}
    irs = {name: irevidence.read_cell_ir(_cell(tmp_path, name, variants)) for name, variants in cells.items()}
    assert irevidence.same_code(irs["baseline"], irs["control"], ("baseline", "control")) == (
        EXCEPTION_LINE.replace("only in candidate", "only in control"),)
    assert irevidence.same_code(irs["baseline"], irs["candidate"], ("baseline", "candidate")) is None
    assert irevidence.same_code(irs["baseline"], irs["baseline"], ("baseline", "baseline")) == ()
    facts = Facts(workload="w", op="mm", backend="cpu", ir_stage="ttgir", dtypes=("float16",), dtypes_own=True,
                  sides={c: _side(c, ir) for c, ir in irs.items()}, caliber={})
    row = screentable.row(facts)
    assert row["verdict"] == screening.IR_CHANGED and "leaks" not in row["note"], row
    leaking = {**irs, "control": irevidence.read_cell_ir(_cell(tmp_path / "leak", "control",
                                                                [(FILL, I32), (FILL, I64), ("mm_kernel", MM_V2)]))}
    facts = dataclasses.replace(facts, sides={c: _side(c, ir) for c, ir in leaking.items()})
    assert "control IR differs from baseline: the switch leaks into its off state" in screentable.row(facts)["note"]


def test_a_difference_between_failed_cells_says_how_far_each_got_and_stays_ir_changed(tmp_path: Path):
    # masked_select offline (2026-12-07): both cells failed, the candidate after more rows; every variant both
    # compiled is equal, the rest is the candidate's reach
    irs = {name: irevidence.read_cell_ir(_cell(tmp_path, name, variants)) for name, variants in zip(PAIR, (
        [(FILL, I32)], [(FILL, I32), ("mm_kernel", MM)]))}
    sides = {c: dataclasses.replace(_side(c, ir), rc=1, rc_name="tests_failed", rows=rows)
             for (c, ir), rows in zip(irs.items(), (3, 6))}
    facts = Facts(workload="w", op="masked_select", backend="cpu", ir_stage="ttgir", dtypes=("float16",),
                  dtypes_own=True, sides=sides, caliber={})
    row = screentable.row(facts)
    assert row["verdict"] == screening.IR_CHANGED, "said, not decided: the card settles it"
    assert ("baseline ended rc 1 tests_failed after 3 row(s), candidate ended rc 1 tests_failed after 6 row(s): a "
            "failed cell's IR is what it compiled before it ended; 1 variant(s) in both, 0 only in baseline, 1 only "
            "in candidate") in row["note"], row["note"]
    whole = dataclasses.replace(facts, sides={c: _side(c, ir) for c, ir in irs.items()})
    assert "failed cell" not in screentable.row(whole)["note"], "cells that ended ok say nothing of reach"
