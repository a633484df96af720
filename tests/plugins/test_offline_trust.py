"""offline.json: what makes an offline FlagGems cell's IR untrustworthy, recorded by real FlagGems 5.0.2; and
the FlagGems installs the offline screen refuses, each by its named check.

The first test runs FlagGems 5.0.2 from ``.venv/flaggems`` in its own process, as the canary does
(`tests/plugins/test_flaggems_canary.py`): without it the test fails, naming the install, never skips.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from taskplan import run_worker, write_plan

from campaign.contract import canonical
from campaign.contract.artifacts import OFFLINE_FILE
from campaign.contract.cellfiles import CellResult, OfflineTrust
from campaign.contract.errors import WorkerExit
from campaign.plugins import flaggems_offline

HERE = Path(__file__).resolve().parents[1]
SCRIPT = HERE / "fixtures" / "flaggems_needs_card.py"
SITE = Path(sys.prefix) / "flaggems"


def test_real_flaggems_host_reads_and_torch_fallbacks_are_named_by_call_site(tmp_path):
    assert (SITE / "flag_gems" / "__init__.py").is_file(), (
        f"flag_gems is not installed in {SITE}: `pip install --no-deps --target {SITE} flag_gems==5.0.2` (what .ci/run does)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(SITE)]))}
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trust = OfflineTrust.model_validate(canonical.read_json(tmp_path / OFFLINE_FILE))
    assert trust.flag_gems == "5.0.2" and trust.answered_from.startswith("cuda:90 sha256:")
    assert trust.reasons == (
        "host reads kernel results: allclose (flag_gems/ops/isclose.py:83) x3",
        "host reads kernel results: masked_select (flag_gems/ops/masked_select.py:181) x1",
        "FlagGems fell back to torch: aten::copy_ from copy_ (flag_gems/ops/copy.py:94) x1")
    assert trust.compile_errors == ()


def _install(site: Path, version: str, vendor_configs: bool) -> Path:
    """A FlagGems distribution as pip lays it out: its dist-info and the package's vendor folder."""
    info = site / f"flag_gems-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: flag_gems\nVersion: {version}\n", encoding="utf-8")
    vendor = site / "flag_gems" / "runtime" / "backend" / "_nvidia"
    vendor.mkdir(parents=True)
    if vendor_configs:
        (vendor / "tune_configs.yaml").write_text("mm: []\n", encoding="utf-8")
    return site


@pytest.mark.parametrize(("version", "configs", "environ", "check", "said"), [
    ("5.1.0", True, {"GEMS_VENDOR": "nvidia"}, "offline_flaggems_version", "flag_gems 5.1.0 is installed"),
    ("5.0.2", False, {"GEMS_VENDOR": "nvidia"}, "offline_gems_vendor", "tune_configs.yaml is absent"),
    ("5.0.2", True, {}, "offline_gems_vendor", "GEMS_VENDOR is unset, the target's vendor is nvidia"),
])
def test_a_flaggems_the_screen_cannot_answer_for_is_refused_by_name(tmp_path, monkeypatch, version, configs,
                                                                  environ, check, said):
    monkeypatch.syspath_prepend(str(_install(tmp_path, version, configs)))
    with pytest.raises(flaggems_offline.Unscreenable) as refused:
        flaggems_offline.screenable("nvidia", environ)
    assert refused.value.check == check and said in str(refused.value)


def test_the_screened_flaggems_with_its_vendor_configs_passes(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_install(tmp_path, "5.0.2", True)))
    assert flaggems_offline.screenable("nvidia", {"GEMS_VENDOR": "nvidia"}) == "5.0.2"


def test_the_worker_refuses_another_flaggems_at_preflight_with_its_reason(tmp_path):
    """Through the real worker: a cpu cell of a FlagGems workload, FlagGems 5.1.0 first on the path, is a
    failed preflight check that says which version it found; the screen reads it back as the NO_ROWS reason."""
    site = _install(tmp_path / "site", "5.1.0", True)
    (site / "flag_gems" / "__init__.py").write_text('__version__ = "5.1.0"\n', encoding="utf-8")
    plan = write_plan(tmp_path / "cell", task={"provider": "flaggems"})
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    proc = run_worker(plan, {**os.environ, "PYTHONPATH": path, "GEMS_VENDOR": "nvidia"})
    assert proc.returncode == WorkerExit.PREFLIGHT_FAILED, proc.stderr[-2000:]
    result = CellResult.model_validate(canonical.read_json(Path(plan.cell_dir) / "result.json"))
    assert result.preflight.failed_check == "offline_flaggems_version"
    assert result.preflight.checks[-1][0] == "offline_flaggems_version"
    assert "flag_gems 5.1.0 is installed" in result.preflight.checks[-1][2]


BROKEN = '''
import tempfile, os, sys
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="broken-")
import torch, triton, triton.language as tl
from triton.runtime.driver import driver
from campaign.plugins import compile_only, flaggems_offline, offline_reads

@triton.jit
def broken_kernel(x_ptr, N: tl.constexpr):
    tl.static_assert(N < 4, "N must stay under 4 on this card")

driver.set_active(compile_only.build_driver("cuda:90"))
shim = flaggems_offline.Shim(target="cuda:90", digest="-")
offline_reads.compile_errors_named(shim)
try:
    broken_kernel[(1,)](torch.empty(8), N=8)
except Exception:
    pass
else:
    raise SystemExit("compiled")
flaggems_offline.write_trust(sys.argv[1], shim)
'''


def test_a_kernel_that_does_not_compile_for_the_target_is_named_with_its_error(tmp_path):
    script = tmp_path / "broken.py"            # @triton.jit reads its source from a file
    script.write_text(BROKEN, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trust = OfflineTrust.model_validate(canonical.read_json(tmp_path / OFFLINE_FILE))
    (site,) = trust.compile_errors
    assert (site.site, site.count) == ("broken_kernel: CompileTimeAssertionFailure: N must stay under 4 on this card", 1)
    assert trust.reasons == (), "a compile error alone proves nothing about the card's IR: NO_ROWS names it"
