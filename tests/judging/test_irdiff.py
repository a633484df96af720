"""The IR diff's pure core: counts read from known IR text, variants paired by kernel and signature
as the IR rule pairs them, and the side-by-side rows."""
from __future__ import annotations

from conftest import FIXTURES

from campaign.judging import ircounts, irdiff
from campaign.judging.irevidence import normalize

MMA = {3: '#mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [8, 1], instrShape = [16, 128, 16]}>',
       2: '#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 4], instrShape = [16, 8]}>'}
BLOCKED = '#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]}>'


def ttgir(converts: int, dot: str, warps: int = 8, kernel: str = "mm_kernel", ptr: str = "f16") -> str:
    """A TTGIR module: ``dot`` is "wgmma", "v2" or "fma"; locations on every line, as Triton prints them."""
    lines = [BLOCKED, MMA[3] if dot == "wgmma" else MMA[2],
             f'module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = {warps} : i32, ttg.target = "cuda:90"}} {{',
             f'  tt.func public @{kernel}(%a: !tt.ptr<{ptr}> {{tt.divisibility = 16 : i32}} loc("a"(#loc))) {{',
             '    %buf = ttg.local_alloc : () -> !ttg.memdesc<3x128x64xf16, #shared, #smem, mutable> loc(#loc1)']
    lines += [f'    %c{i} = ttg.convert_layout %x : tensor<128x64xf16, #blocked> -> tensor<128x64xf16, #mma> loc(#loc2)'
              for i in range(converts)]
    if dot == "wgmma":
        lines.append('    %d = ttng.warp_group_dot %a0, %b0, %acc : !ttg.memdesc<128x64xf16, #shared, #smem> * '
                     '!ttg.memdesc<64x128xf16, #shared1, #smem> -> tensor<128x128xf32, #mma> loc(#loc3)')
        lines.append('    %w = ttng.warp_group_dot_wait %d {pendings = 0 : i32} : tensor<128x128xf32, #mma> loc(#loc3)')
    else:
        out = "#mma" if dot == "v2" else "#blocked"
        lines.append(f'    %d = tt.dot %a0, %b0, %acc : tensor<128x64xf16, #ttg.dot_op<{{opIdx = 0, parent = {out}}}>> * '
                     f'tensor<64x128xf16, #ttg.dot_op<{{opIdx = 1, parent = {out}}}>> -> tensor<128x128xf32, {out}> loc(#loc3)')
    lines += ["    tt.return loc(#loc4)", "  } loc(#loc)", "} loc(#loc)", '#loc = loc("/tmp/k.py":1:0)']
    return "\n".join(lines) + "\n"


PTX = """\t@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];
\tld.global.b32 %r5, [ %rd2 + 0 ];
\tld.global.nc.v2.b32 { %r6, %r7 }, [ %rd3 + 0 ];
\tst.global.v4.b32 [ %rd4 + 0 ], { %r1, %r2, %r3, %r4 };
\tcp.async.cg.shared.global [ %r33 + 0 ], [ %rd27 + 0 ], 0x10, %r34;
\tcp.async.cg.shared.global [ %r35 + 0 ], [ %rd28 + 0 ], 0x10, %r36;
"""


def sass(body: list[str], regs: int = 24, frame: int = 0) -> str:
    """nvdisasm's layout: the nv.info attributes, then the text section, one encoding line under each instruction."""
    head = ["\t//----- nvinfo : EIATTR_REGCOUNT", "\t.align\t\t4", "        /*0000*/ \t.byte\t0x04, 0x2f",
            "        /*0002*/ \t.short\t(.L_1 - .L_0)", ".L_0:", "        /*0004*/ \t.word\tindex@(k)",
            f"        /*0008*/ \t.word\t0x{regs:08x}", "", "\t//----- nvinfo : EIATTR_FRAME_SIZE", ".L_1:",
            "        /*000c*/ \t.byte\t0x04, 0x11", "        /*0010*/ \t.word\tindex@(k)",
            f"        /*0014*/ \t.word\t0x{frame:08x}", "",
            "//--------------------- .text.k       --------------------------", "k:"]
    lines = []
    for n, instruction in enumerate(body):
        lines.append(f"        /*{n * 16:04x}*/                   {instruction} ;        /* 0x000fe200078e00ff */")
        lines.append("                                                      /* 0x000fe20000000800 */")
    return "\n".join(head + lines) + "\n"


FUSED = ["FFMA R0, R2, R3, R4"] * 8 + ["EXIT"]
UNFUSED = ["FMUL R0, R2, R3"] * 8 + ["FADD R0, R0, R4"] * 8 + ["@!P0 EXIT"]


def test_convert_layout_mma_form_warps_and_shared_memory_from_ttgir():
    wgmma = ircounts.ttgir_counts(normalize(ttgir(5, "wgmma"), "ttgir"))
    assert wgmma == {"convert_layout": 5, "MMA form": "wgmma x1", "num_warps": 8,
                     "shared memory (local_alloc bytes)": 3 * 128 * 64 * 2}
    assert ircounts.ttgir_counts(ttgir(2, "v2", warps=4))["MMA form"] == "mma v2 x1"
    assert ircounts.ttgir_counts(ttgir(0, "fma"))["MMA form"] == "FMA x1"
    assert ircounts.ttgir_counts(ttgir(0, "v2"))["convert_layout"] == 0


def test_global_load_and_store_widths_from_ptx():
    assert ircounts.ptx_counts(PTX) == {"global loads/stores by width":
                                        "cp.async 16 B x2, ld.global 128-bit x1, ld.global 32-bit x1, "
                                        "ld.global 64-bit x1, st.global 128-bit x1"}


def test_ffma_against_fmul_and_fadd_registers_and_spills_from_sass():
    fused, unfused = ircounts.sass_counts(sass(FUSED, regs=24)), ircounts.sass_counts(sass(UNFUSED, regs=30, frame=16))
    assert (fused["SASS FFMA"], fused["SASS FMUL"], fused["SASS FADD"]) == (8, 0, 0)
    assert (unfused["SASS FFMA"], unfused["SASS FMUL"], unfused["SASS FADD"]) == (0, 8, 8)
    assert (fused["registers"], unfused["registers"]) == (24, 30)
    assert (fused["frame size (local bytes per thread)"], unfused["frame size (local bytes per thread)"]) == (0, 16)
    assert ircounts.sass_counts(sass(["STL [R1], R2", "LDL R2, [R1]", "EXIT"]))["LDL/STL (local: spills or arrays)"] == 2
    assert ircounts.mix_changes(sass(FUSED), sass(UNFUSED)) == [("FADD", 0, 8), ("FFMA", 8, 0), ("FMUL", 0, 8)]
    mma = ircounts.sass_counts(sass(["HGMMA.64x128x16.F32 R24, gdesc[UR8].tnspB, R24"] * 4))
    assert (mma["SASS HGMMA"], mma["SASS HMMA"]) == (4, 0)
    assert ircounts.sass_counts(sass(["HMMA.16816.F32 R4, R8, R12, R4"] * 3))["SASS HMMA"] == 3


def test_registers_of_recorded_nvdisasm_output_and_a_stage_not_captured_is_absent():
    recorded = normalize((FIXTURES / "sass" / "add_fp16-fusion1-cell-a.nvdisasm").read_text(), "sass")
    counts = ircounts.counts({"sass": recorded})
    assert isinstance(counts["registers [sass]"], int) and counts["registers [sass]"] > 0
    assert counts["SASS HFMA2 [sass]"] == 1            # the recorded fp16 add: HFMA2.MMA x, 1, y
    assert not any(name.endswith("[ttgir]") or name.endswith("[ptx]") for name in counts)


def _variant(kernel: str, text: str, hash_: str, ptr: str = "f16", sass_text: str = "") -> irdiff.VariantTexts:
    from campaign.judging.irpairing import signature
    texts = {"ttgir": normalize(text, "ttgir")}
    if sass_text:
        texts["sass"] = normalize(sass_text, "sass")
    return irdiff.VariantTexts(hash_, kernel, signature(texts["ttgir"], "ttgir", kernel),
                               irdiff.digest(texts["ttgir"]), 10, tuple(texts.items()))


def test_variants_pair_by_kernel_and_signature_and_the_rest_is_listed_unpaired():
    left = (_variant("mm_kernel", ttgir(4, "wgmma"), "a1"), _variant("mm_kernel", ttgir(4, "wgmma", ptr="f32"), "a2"),
            _variant("fill_kernel", ttgir(0, "fma", kernel="fill_kernel"), "a3"))
    right = (_variant("mm_kernel", ttgir(1, "v2"), "b1"), _variant("mm_kernel", ttgir(1, "v2", ptr="f32"), "b2"),
             _variant("fill_kernel", ttgir(0, "fma", kernel="fill_kernel"), "b3"),
             _variant("fill_kernel", ttgir(0, "fma", kernel="fill_kernel", ptr="i64"), "b4"))
    pairs = irdiff.pair_variants(left, right, "ttgir", ("baseline", "candidate"))
    by = {(p.left.hash if p.left else None, p.right.hash if p.right else None): p for p in pairs}
    assert set(by) == {("a1", "b1"), ("a2", "b2"), ("a3", "b3"), (None, "b4")}
    assert by[("a3", "b3")].equal and not by[("a1", "b1")].equal
    assert by[(None, "b4")].why == "only candidate compiled this signature"
    changes = {c.name: (c.left, c.right) for c in irdiff.count_changes(by[("a1", "b1")]) if c.changed}
    assert changes == {"convert_layout [ttgir]": (4, 1), "MMA form [ttgir]": ("wgmma x1", "mma v2 x1")}


def test_within_one_signature_variants_pair_with_their_closest_and_a_surplus_is_unpaired():
    left = (_variant("mm_kernel", ttgir(4, "wgmma", warps=8), "a8"), _variant("mm_kernel", ttgir(4, "wgmma", warps=4), "a4"))
    right = (_variant("mm_kernel", ttgir(1, "v2", warps=4), "b4"), _variant("mm_kernel", ttgir(1, "v2", warps=8), "b8"),
             _variant("mm_kernel", ttgir(9, "v2", warps=2), "b2"))
    pairs = irdiff.pair_variants(left, right, "ttgir", ("baseline", "candidate"))
    assert {(p.left.hash if p.left else None, p.right.hash) for p in pairs} == {("a8", "b8"), ("a4", "b4"), (None, "b2")}
    assert next(p for p in pairs if not p.paired).why == "candidate compiled more variants of this signature than baseline"


def test_side_by_side_rows_keep_context_and_mark_the_change():
    a = "\n".join(f"line {i}" for i in range(20))
    b = a.replace("line 10", "line ten")
    rows = irdiff.side_by_side(a, b)
    assert rows[0].tag == "skip" and [r.tag for r in rows[1:]] == ["equal"] * 3 + ["replace"] + ["equal"] * 3 + ["skip"]
    changed = rows[4]
    assert (changed.left_no, changed.left, changed.right_no, changed.right) == (11, "line 10", 11, "line ten")
    assert irdiff.changed_lines(rows) == (1, 1)
    assert irdiff.side_by_side(a, a) == ()
