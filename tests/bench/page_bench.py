"""Size and render time of the review page for a 21-workload screen root (tests/bench/page.md).

The root is built (`rootbuilder`: 18 workloads whose IR is unchanged, 3 whose IR changed, shaped
like the H200 screen under DISABLE_MMA_V3), and the three changed workloads' cells then carry real
IR: the ir/ folders of a compile-only screen of the demo matmul at sass (every stage, six variants a
cell), copied in before the seal. Usage:

    .venv/bin/python tests/bench/page_bench.py REAL_SCREEN_ROOT OUT_DIR
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "builders"))

import rootbuilder as rb  # noqa: E402

from campaign.flows import session  # noqa: E402
from campaign.judging import screenroot, screentable  # noqa: E402

CHANGED = ("mm", "bmm", "addmm")


def build(real: Path, out: Path) -> Path:
    workloads = [rb.pointwise(f"op{i:02d}") for i in range(18)] + [rb.mm(name, tuning_configs=0) for name in CHANGED]
    skip = {f"op{i:02d}/r1/{c}" for i in range(18) for c in ("baseline", "control", "candidate")}
    options = rb.Options(ir_pass=True, skip=skip, mode="screen", rounds=1)
    root = rb.build(out, workloads, options, "screen21")
    for name in CHANGED:
        for rnd in ("r0", "r1"):
            for cell in ("baseline", "control", "candidate"):
                target = root / "cells" / name / rnd / cell / "ir"
                source = real / "cells" / "matmul" / rnd / ("baseline" if cell == "control" else cell) / "ir"
                if target.is_dir() and source.is_dir():
                    shutil.rmtree(target)
                    shutil.copytree(source, target)
    (root / screenroot.SCREEN_FILE).write_text(screentable.render(screenroot.table(root)), encoding="utf-8")
    session.seal_root(root)
    return root


def main(real: Path, out: Path) -> None:
    root = build(real, out)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "campaign", "report", str(root), "--html", str(out / "page")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report_s = time.monotonic() - start
    page = out / "page" / "index.html"
    for _ in range(3):
        start = time.monotonic()
        dom = subprocess.run(["chromium", "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom", page.as_uri()],
                             capture_output=True, text=True).stdout
        wall = time.monotonic() - start
        status = dom.split("<body", 1)[1].split(">", 1)[0]
        print(f"chromium --dump-dom: {wall:.2f} s wall;{status}")
    sections = dom.count('<section class="diff" id=')
    print(f"campaign report --html: {report_s:.2f} s; page {page.stat().st_size / 1e6:.2f} MB; diff sections {sections}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
