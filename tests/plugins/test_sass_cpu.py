"""SASS without a GPU: the compile-only backend's cubin (ptxas runs as part of every
compile) disassembled by the nvdisasm Triton's wheel ships, fingerprinted so that the
same code in two cells is equal and a switch that changes code is not."""
from __future__ import annotations

import difflib
import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from cellrun import DEMO_DIR, manifest_data, plan_cell, read_index, run_cell
from conftest import FIXTURES, PROJECT_ROOT, run_cli

from campaign.judging import screentable
from campaign.judging.irevidence import fingerprint, normalize
from campaign.plugins import disassembly

RECORDED = FIXTURES / "sass"
CELL_A = (RECORDED / "add_fp16-fusion1-cell-a.nvdisasm").read_text()
CELL_B = (RECORDED / "add_fp16-fusion0-cell-b.nvdisasm").read_text()
SASS_STAGES = "ttir,ttgir,llir,ptx,sass"


def _instructions(text: str) -> list[str]:
    """Every instruction line of nvdisasm -hex output (with or without its offset), spacing folded."""
    out = []
    for line in text.splitlines():
        found = re.match(r"^\s*(?:/\*[0-9a-f]{4}\*/)?\s*([^;/]+;)\s*/\* 0x[0-9a-f]{16} \*/\s*$", line)
        if found:
            out.append(" ".join(found.group(1).split()))
    return out


# -- the normaliser, on recorded nvdisasm output ----------------------------------------

def test_recorded_cells_differ_only_outside_the_code_and_normalise_equal():
    changed = [line for line in difflib.unified_diff(CELL_A.splitlines(), CELL_B.splitlines(), n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    # the source folder (.debug_line) and the embedded PTX (.nv_debug_ptx_txt), as byte dumps
    assert changed and all(".byte" in line for line in changed)
    assert normalize(CELL_A, "sass") == normalize(CELL_B, "sass")


def test_debug_sections_and_offsets_go_every_instruction_stays():
    text = normalize(CELL_A, "sass")
    for gone in (".debug_line", ".nv_debug_ptx_txt", ".nv_debug_line_sass", ".debug_frame", "/*0000*/"):
        assert gone not in text
    assert "cell-a" not in bytes.fromhex(
        "".join(re.findall(r"0x([0-9a-f]{2})\b", text))).decode("latin-1"), "the source folder is gone"
    assert len(_instructions(CELL_A)) == 48, "the recorded add kernel: 48 instructions, NOP padding included"
    assert _instructions(text) == _instructions(CELL_A)
    # Encodings carry the scheduling bits: a changed stall count must change the fingerprint.
    assert "/* 0x000e220000000800 */" in text
    for kept in (".text.add_kernel", "EIATTR_REGCOUNT", "HFMA2.MMA R0, R0, 1, 1, R13 ;", "EXIT ;"):
        assert kept in text


def test_a_changed_instruction_changes_the_normalised_text_and_nothing_else():
    edited = CELL_A.replace("HFMA2.MMA R0, R0, 1, 1, R13 ;", "HADD2 R0, R0, R13 ;      ")
    assert edited != CELL_A
    assert normalize(edited, "sass") != normalize(CELL_A, "sass")
    # One instruction inserted: every later offset shifts, the normalised diff is that instruction.
    lines = CELL_A.splitlines()
    at = next(i for i, x in enumerate(lines) if "HFMA2.MMA" in x)
    nop = next(i for i, x in enumerate(lines) if "NOP;" in x)
    end = next(i for i in range(at, len(lines)) if lines[i].startswith("//"))

    def offset(line: str) -> int:
        return int(re.search(r"/\*([0-9a-f]{4})\*/", line).group(1), 16)

    def shifted(line: str, by: int) -> str:
        return re.sub(r"/\*([0-9a-f]{4})\*/", lambda m: f"/*{int(m.group(1), 16) + by:04x}*/", line)

    moved_nop = [shifted(lines[nop], offset(lines[at]) - offset(lines[nop])), lines[nop + 1]]
    inserted = lines[:at] + moved_nop + [shifted(x, 0x10) for x in lines[at:end]] + lines[end:]
    assert sum(a != b for a, b in zip(CELL_A.splitlines()[at:end], inserted[at + 2:end + 2])) > 10
    diff = [x for x in difflib.unified_diff(normalize(CELL_A, "sass").splitlines(),
                                            normalize("\n".join(inserted), "sass").splitlines(), n=0)
            if x[:1] in "+-" and not x.startswith(("+++", "---"))]
    assert diff and all(x.startswith("+") for x in diff) and len(diff) <= 2 and "NOP" in diff[0]


def test_a_failing_disassembly_names_its_argv(tmp_path):
    junk = tmp_path / "junk.cubin"
    junk.write_bytes(b"not an ELF file")
    with pytest.raises(RuntimeError, match=r"argv \[.*nvdisasm.*junk\.cubin'\] returned [1-9]"):
        disassembly.disassemble(junk)


# -- real cells: compile-only for cuda:90, ir_stage sass --------------------------------

CALLS = """
    import sys
    sys.path.insert(0, {kernels!r})
    import torch
    from demo_kernels import add, matmul


    def test_cell():
        add(torch.randn(1000).half(), torch.randn(1000).half())
        if {matmul}:
            a = torch.randn(128, 128, dtype=torch.float16)
            matmul(a, a)
"""


def _calls(kernels: Path, matmul: bool = True) -> str:
    """The cell's test: add, and the autotuned matmul (three configs compiled to SASS) where a claim reads it."""
    return textwrap.dedent(CALLS.format(kernels=str(kernels), matmul=matmul))


def _sass_manifest() -> dict:
    data = manifest_data()
    data["switch"]["ir_stage"] = "sass"
    return data


@pytest.fixture(scope="module")
def cells(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("sass")
    # The A/A partner compiles the same kernels from another folder: its debug sections
    # name another source path, as a FlagGems kernel generated in each cell's cache does.
    elsewhere = base / "elsewhere"
    shutil.copytree(DEMO_DIR, elsewhere)
    out = {}
    # no_fusion's claims read its add alone: the matmul's three configs are not compiled there
    for name, env, kernels, matmul in (("baseline", {}, DEMO_DIR, True), ("again", {}, elsewhere, True),
                                       ("mma_v2", {"DISABLE_MMA_V3": "1"}, DEMO_DIR, True),
                                       ("no_fusion", {"TRITON_DEFAULT_FP_FUSION": "0"}, DEMO_DIR, False)):
        plan = plan_cell(base, name, env=env, manifest=_sass_manifest())
        run_cell(plan, _calls(kernels, matmul))
        out[name] = Path(plan.cell_dir) / "ir"
    return out


def _by_kernel(ir: Path, stage: str) -> dict[str, str]:
    """Each kernel's launched variant (the matmul's other configs are compiled, never launched)."""
    launched = {row["hash"] for row in read_index(ir.parent) if int(row["launches"]) > 0}
    return {path.name.split("-", 1)[1]: normalize(path.read_text(), stage) for path in ir.glob(f"*.{stage}")
            if path.name.split("-", 1)[0] in launched}


def test_sass_is_written_for_every_variant_without_debug_sections(cells):
    rows = read_index(cells["baseline"].parent)
    # the autotuned matmul: all three configs compiled (first-config), one launched
    assert sorted(row["kernel"] for row in rows) == ["add_kernel"] + ["matmul_kernel"] * 3
    for row in rows:
        assert row["stages"] == SASS_STAGES
        text = (cells["baseline"] / f"{row['hash']}-{row['kernel']}.sass").read_text()
        assert f".text.{row['kernel']}" in text and "EIATTR_REGCOUNT" in text and "EXIT" in text
        assert ".nv_debug_ptx_txt" not in text and ".debug_line" not in text
        assert re.search(r"/\* 0x[0-9a-f]{16} \*/", text), "instruction encodings: the scheduling bits"


def test_same_code_in_two_cells_fingerprints_equal(cells):
    # Two processes, two source folders: the PTX names each folder, the cubin's debug sections too.
    ptx = [next(cells[c].glob("*-add_kernel.ptx")).read_text() for c in ("baseline", "again")]
    assert str(DEMO_DIR) in ptx[0] and "elsewhere" in ptx[1] and "elsewhere" not in ptx[0]
    assert fingerprint(cells["baseline"], "sass") == fingerprint(cells["again"], "sass") is not None


def test_disable_mma_v3_changes_the_matmul_sass(cells):
    assert fingerprint(cells["mma_v2"], "sass") != fingerprint(cells["baseline"], "sass")
    base, cand = _by_kernel(cells["baseline"], "sass"), _by_kernel(cells["mma_v2"], "sass")
    assert base["add_kernel.sass"] == cand["add_kernel.sass"], "no tl.dot: nothing for the switch to change"
    assert "HGMMA" in base["matmul_kernel.sass"], "sm_90 wgmma"
    assert "HGMMA" not in cand["matmul_kernel.sass"] and "HMMA" in cand["matmul_kernel.sass"]


def test_fp_fusion_off_changes_the_add_ptx_but_not_its_machine_code(cells):
    # Measured: ptxas lowers add.f16 and add.rn.f16 to the same instructions (HFMA2.MMA: x*1+y).
    base, cand = _by_kernel(cells["baseline"], "ptx"), _by_kernel(cells["no_fusion"], "ptx")
    assert "add.f16 " in base["add_kernel.ptx"] and "add.rn.f16 " in cand["add_kernel.ptx"]
    assert base["add_kernel.ptx"].replace("add.f16", "add.rn.f16") == cand["add_kernel.ptx"]
    base, cand = _by_kernel(cells["baseline"], "sass"), _by_kernel(cells["no_fusion"], "sass")
    assert base["add_kernel.sass"] == cand["add_kernel.sass"]
    assert "HFMA2.MMA" in base["add_kernel.sass"]


# -- the manifest and the CLI -----------------------------------------------------------

def test_validate_accepts_sass_on_cpu_for_a_cuda_target_only(tmp_path):
    manifests = [PROJECT_ROOT / "manifests" / f"demo-cpu-fp-fusion-{stage}.yaml" for stage in ("ptx", "sass")]
    done = run_cli("validate", *manifests)
    assert done.returncode == 0, done.stdout + done.stderr
    musa = tmp_path / "musa.yaml"
    musa.write_text(manifests[1].read_text().replace('target: "cuda:90"', 'target: "musa:31"'))
    refused = run_cli("validate", musa)
    assert refused.returncode == 2
    assert "switch -> ir_stage" in refused.stderr + refused.stdout
    assert "target musa:31 compiles to ttir, ttgir, llir, ptx: no sass" in refused.stderr + refused.stdout


def test_screen_at_sass_end_to_end(screened_add_sass):
    # manifests/demo-cpu-fp-fusion-sass.yaml narrowed to add, screened once for the session (`conftest`)
    root = Path(json.loads(screened_add_sass["stdout"])["root"])
    row = screentable.parse((root / "screen.tsv").read_text(encoding="utf-8"))[0]
    assert row["verdict"] == "NO_IR_DIFF", row["note"]
    # judged by the screen's IR pass (round 0: baseline and candidate, no control), round 1 not run
    assert row["fingerprint_baseline"] == row["fingerprint_candidate"] != "" and row["fingerprint_control"] == ""
    assert "baseline and candidate sass equal" in row["note"] and "not timed: IR unchanged" in row["note"]
    ptx = [p.read_text() for p in root.rglob("*-add_kernel.ptx")]
    assert any("add.rn.f16x2" in text for text in ptx), "the candidate ran with fusion off"
    assert any("add.f16x2" in text and "add.rn.f16x2" not in text for text in ptx), "the baseline with it on"
    assert run_cli("verify", root).returncode == 0


def test_a_disassembly_that_fails_leaves_a_marker_and_the_cell_is_evidence_missing(tmp_path):
    """Left out silently, a variant whose SASS could not be made would let two failing sides
    fingerprint as equal; the marker turns the cell's sass evidence into an unreadable artifact."""
    from triton import knobs
    real = knobs.nvidia.nvdisasm.path
    broken = tmp_path / "nvdisasm"     # answers Triton's version probe, fails every disassembly
    broken.write_text(f'#!/bin/sh\ncase "$1" in --version) exec {real} --version;; esac\n'
                      'echo "nvdisasm: cannot read the cubin" >&2\nexit 1\n')
    broken.chmod(0o755)
    plan = plan_cell(tmp_path, "baseline", manifest=_sass_manifest())
    run_cell(plan, _calls(DEMO_DIR, matmul=False), extra_env={"TRITON_NVDISASM_PATH": str(broken)})
    ir = Path(plan.cell_dir) / "ir"
    markers = sorted(ir.glob("*.sass.failed"))
    assert markers and not list(ir.glob("*.sass"))
    assert "cannot read the cubin" in markers[0].read_text()
    from campaign.contract.artifacts import cell_dir_name
    from campaign.contract.manifest import Manifest
    from campaign.contract.runroot import RunRoot
    from campaign.judging.evidence import load_task
    root = tmp_path / "root"
    shutil.copytree(plan.cell_dir, root / cell_dir_name(plan.task.id))
    evidence = load_task(RunRoot(root), plan.task, Manifest.model_validate(_sass_manifest()), 1, None, read_rows=False)
    assert evidence.problems and "the sass of" in evidence.problems[0] and "could not be produced" in evidence.problems[0]


# -- the run's SASS store: each cubin disassembled once a run ---------------------------

def test_cells_sharing_a_sass_store_write_what_their_own_nvdisasm_writes_and_the_second_runs_none(tmp_path, cells):
    real = disassembly.knobs.nvidia.nvdisasm.path
    calls = tmp_path / "calls.log"
    tool = tmp_path / "nvdisasm"                 # the real tool, each call counted
    tool.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\nexec {real} \"$@\"\n")
    tool.chmod(0o755)
    store = tmp_path / "sass-by-cubin"
    store.mkdir()
    written, counted = {}, []
    for name in ("first", "second"):
        plan = plan_cell(tmp_path, name, manifest=_sass_manifest()).model_copy(update={"sass_cache_dir": str(store)})
        (Path(plan.cell_dir) / "task.json").write_text(plan.model_dump_json(), encoding="utf-8")
        run_cell(plan, _calls(DEMO_DIR), extra_env={"TRITON_NVDISASM_PATH": str(tool)})
        written[name] = {p.name: p.read_bytes() for p in (Path(plan.cell_dir) / "ir").glob("*.sass")}
        # disassemblies only: the run identity asks the tool its version too
        counted.append(sum(line.startswith("-hex ") for line in calls.read_text().splitlines()) if calls.exists() else 0)
    own = {p.name: p.read_bytes() for p in cells["baseline"].glob("*.sass")}    # no store: its own nvdisasm
    assert len(own) == 4                                                         # add and three matmul configs
    assert written["first"] == own == written["second"]
    assert counted == [4, 4]                    # the first cell disassembled each cubin; the second none
    assert len([p for p in store.iterdir() if not p.name.endswith(".lock")]) == 4


def test_a_store_entry_is_keyed_by_the_tool_too(tmp_path):
    store = disassembly.SassStore(tmp_path)
    other = disassembly.SassStore(tmp_path)
    assert store._key(b"cubin") == other._key(b"cubin") != store._key(b"cubin2")
    other._tool = b"another nvdisasm"
    assert other._key(b"cubin") != store._key(b"cubin")
