"""The MThreads compat plugin: a guard is dropped only for its one file, its exact reason,
and only when flag_gems has dispatched to mthreads."""
from __future__ import annotations

import sys
import textwrap
import types

from campaign.plugins import musa_compat
from campaign.plugins.musa_compat import MusaCompatPlugin, Override, flag_gems_vendor

pytest_plugins = ("pytester",)

REASON = "requires CUDA"
GUARDED = textwrap.dedent(f"""\
    import pytest

    @pytest.mark.skipif(True, reason={REASON!r})
    def test_fft():
        pass

    @pytest.mark.skipif(True, reason="needs vLLM")
    def test_other_guard():
        pass
""")
MODULE_GUARD = textwrap.dedent(f"""\
    import pytest

    pytestmark = pytest.mark.skipif(True, reason={REASON!r})

    @pytest.mark.parametrize("n", [1, 2])
    def test_sort(n):
        pass
""")


def _run(pytester, vendor, overrides, **files):
    lines = []
    plugin = MusaCompatPlugin(overrides, lambda: vendor, lines.append)
    pytester.makepyfile(**files)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs", plugins=[plugin])
    return result, plugin, lines


def test_the_pinned_guard_is_dropped_on_mthreads(pytester):
    result, plugin, lines = _run(pytester, "mthreads", (Override("test_fft.py", REASON, "test"),), test_fft=GUARDED)
    result.assert_outcomes(passed=1, skipped=1)
    assert plugin.dropped == ["test_fft.py::test_fft"]
    assert lines == ["musa_compat: dropped skipif 'requires CUDA' on test_fft.py::test_fft"]


def test_other_vendors_keep_the_guard(pytester):
    for vendor in ("nvidia", None):
        result, plugin, _ = _run(pytester, vendor, (Override("test_fft.py", REASON, "test"),), test_fft=GUARDED)
        result.assert_outcomes(skipped=2)
        assert plugin.dropped == []


def test_a_different_reason_or_file_keeps_the_guard(pytester):
    result, _, _ = _run(pytester, "mthreads", (Override("test_fft.py", "requires cuda", "test"),), test_fft=GUARDED)
    result.assert_outcomes(skipped=2)
    result, _, _ = _run(pytester, "mthreads", (Override("other/test_fft.py", REASON, "test"),), test_fft=GUARDED)
    result.assert_outcomes(skipped=2)


def test_a_module_level_guard_is_found_on_the_node_chain(pytester):
    result, plugin, _ = _run(pytester, "mthreads", (Override("test_sort.py", REASON, "test"),), test_sort=MODULE_GUARD)
    result.assert_outcomes(passed=2)
    assert plugin.dropped == ["test_sort.py::test_sort[1]"]     # dropped once, from the Module node


def test_the_shipped_table_is_pinned_and_the_vendor_comes_from_flag_gems(monkeypatch):
    assert musa_compat.FLAGGEMS_VERSION == "5.0.2" and {o.path for o in musa_compat.OVERRIDES} == {"tests/test_embedding.py"}
    monkeypatch.delitem(sys.modules, "flag_gems", raising=False)
    assert flag_gems_vendor() is None
    monkeypatch.setitem(sys.modules, "flag_gems", types.SimpleNamespace(vendor_name="mthreads"))
    assert flag_gems_vendor() == "mthreads"
    runtime = types.SimpleNamespace(device=types.SimpleNamespace(vendor_name="nvidia"))
    monkeypatch.setitem(sys.modules, "flag_gems", types.SimpleNamespace(runtime=runtime))
    assert flag_gems_vendor() == "nvidia"
