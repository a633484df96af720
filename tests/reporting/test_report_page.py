"""`campaign report ROOT --html DIR`: the review page of a sealed root, and the markdown's links to it.

A built screen root (matmul's TTGIR goes mma v3 -> v2, a kernel the candidate alone compiles, add
unchanged) and a real one: the compile-only backend compiling the demo matmul for sm_90 with and
without ``DISABLE_MMA_V3``, fingerprinted at SASS (wgmma -> mma v2 in TTGIR, HGMMA -> HMMA in SASS).
Each page is loaded in headless chromium: it must finish its script without an error and show the
diff lines; ``#stage=...`` switches every diff the way its stage buttons do.
"""
from __future__ import annotations

import re

import browser
import pytest
import rootbuilder as rb
from conftest import run_cli

SKIPPED_ADD = {"add/r1/baseline", "add/r1/control", "add/r1/candidate"}


def _unpaired() -> rb.Workload:
    """add's kernel changed, and a kernel only the candidate compiles."""
    w = rb.pointwise("addx", "add")
    w.kernels = {"baseline": (rb.Kernel("add_kernel", 0, 300, "pointwise"),),
                 "candidate": (rb.Kernel("add_kernel", 2, 300, "pointwise_v2"), rb.Kernel("extra_kernel", 0, 300, "x"))}
    return w


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One built screen root and its page for the module: no test writes into either (the refusal
    below writes nothing)."""
    base = tmp_path_factory.mktemp("builtpage")
    options = rb.Options(ir_pass=True, skip=set(SKIPPED_ADD))
    root = rb.screen_root(base, [rb.pointwise(), rb.mm(), _unpaired()], options)
    out = base / "page"
    done = run_cli("report", root, "--html", out)
    assert done.returncode == 0, done.stderr
    return root, out / "index.html", done.stdout


def _section(page: str, workload: str) -> str:
    return page.split(f'id="diff-{workload}"', 1)[1].split("<section", 1)[0]


def test_the_page_diffs_each_changed_workload_and_the_markdown_links_it(built):
    root, page_path, markdown = built
    page = page_path.read_text(encoding="utf-8")
    assert f"- IR diff: [matmul: variants paired, side by side, every captured stage]({page_path.as_posix()}#diff-matmul)" \
        in markdown
    assert "#diff-add)" not in markdown and 'id="diff-add"' not in page
    matmul = _section(page, "matmul")
    # the TTGIR lines the switch changed, side by side, normalised (no source location left)
    assert "versionMajor = 3" in matmul and "versionMajor = 2" in matmul and "/work/" not in matmul
    assert ("<tr class=r><td>2<td>#mma = #ttg.nvidia_mma&lt;{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1]}&gt;"
            "<td>2<td>#mma = #ttg.nvidia_mma&lt;{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1]}&gt;") in matmul
    assert "1 pair(s) changed, 1 equal, 0 unpaired; control <code>matmul/r1/control</code> vs candidate" in matmul
    assert "<tr class=moved><td>convert_layout [ttgir]<td>12<td>4" in matmul
    assert "BLOCK_K=64 BLOCK_M=128 BLOCK_N=128 num_warps=8 num_stages=3" in matmul     # autotune configs of each side
    # no file outside the page: no src, no stylesheet link, no address but its own anchors
    assert not re.search(r"""(src=|<link |https?://(?!www\.w3\.org/2000/svg))""", page)


def test_an_unpaired_variant_is_listed_never_diffed(built):
    _, page_path, _ = built
    addx = _section(page_path.read_text(encoding="utf-8"), "addx")
    assert "1 pair(s) changed, 0 equal, 1 unpaired" in addx
    assert re.search(r"<code>extra_kernel</code> in candidate only, <code>\w{12}</code> \(300 launch\(es\)\): "
                     r"only candidate compiled this signature", addx)


def test_the_page_is_refused_inside_the_root(built):
    root, _, _ = built
    done = run_cli("report", root, "--html", root / "page")
    assert done.returncode == 2
    assert f"--html {root / 'page'}: inside the run root" in done.stderr and "name a folder outside it" in done.stderr


def test_the_built_page_renders_in_chromium_without_an_error(built):
    _, page_path, _ = built
    dom, _ = browser.dump_dom(page_path)
    assert '<body data-status="ok"' in dom, dom[:500]
    assert '<pre id="errors"></pre>' in dom
    assert "// body: mma_v3" in dom and "// body: mma_v2" in dom


@pytest.fixture(scope="module")
def real(screened_demo_two, tmp_path_factory):
    """A real screen through the compile-only backend, the session's (`conftest.screened_demo_two`): add
    and the autotuned matmul at sass, every round 1 run; its page written outside it."""
    page = tmp_path_factory.mktemp("realpage") / "page"
    done = run_cli("report", screened_demo_two, "--html", page)
    assert done.returncode == 0, done.stderr
    return screened_demo_two, page / "index.html"


@pytest.mark.slow
def test_a_real_root_shows_wgmma_to_mma_v2_and_hgmma_to_hmma_for_matmul_only(real):
    _, page_path = real
    page = page_path.read_text(encoding="utf-8")
    assert 'id="diff-add"' not in page
    matmul = _section(page, "matmul")
    assert "judged and paired at sass" in matmul and "0 unpaired" in matmul
    assert "<tr class=moved><td>MMA form [ttgir]<td>wgmma x1<td>mma v2 x1" in matmul
    assert re.search(r"<tr class=moved><td>SASS HGMMA \[sass\]<td>[1-9]\d*<td>0", matmul)
    assert re.search(r"<tr class=moved><td>SASS HMMA \[sass\]<td>0<td>[1-9]\d*", matmul)
    assert re.search(r"<code>HGMMA</code> [1-9]\d* → 0", matmul)
    stages = re.findall(r'<button type=button data-show="(\w+)"', matmul)
    assert stages == ["ttir", "ttgir", "llir", "ptx", "sass"]
    assert "ttir: identical on both sides" in matmul        # the switch acts below TTIR: each config paired with its own


@pytest.mark.slow
def test_the_real_page_renders_and_switches_stage_in_chromium(real, tmp_path):
    _, page_path = real
    dom, _ = browser.dump_dom(page_path)
    assert '<body data-status="ok"' in dom and '<pre id="errors"></pre>' in dom
    section = _section(dom, "matmul")
    assert 'data-shown="sass"' in dom
    assert re.search(r'<div class="stage" data-stage="sass">', section)            # the judged stage, shown
    assert re.search(r'<div class="stage" data-stage="ttgir" hidden="">', section)
    assert "HGMMA.64x128x16.F32" in section and "HMMA.16816.F32" in section
    switched, _ = browser.dump_dom(page_path, "stage=ttgir")
    section = _section(switched, "matmul")
    assert 'data-shown="ttgir"' in switched and '<body data-status="ok"' in switched
    assert re.search(r'<div class="stage" data-stage="ttgir">', section)
    assert re.search(r'<div class="stage" data-stage="sass" hidden="">', section)
    shot = browser.screenshot(page_path, tmp_path / "page.png")
    assert shot.stat().st_size > 10_000

