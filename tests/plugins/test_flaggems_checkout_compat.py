"""The MThreads override list against the guard lines of FlagGems 5.0.2, as recorded here.

GUARDS holds each CUDA-naming ``skipif`` of FlagGems 5.0.2's benchmark/ and tests/ as one
quoted line (the line only, not FlagGems code), under its file's path. Each becomes one test
in a tree of those paths; on mthreads with flag_gems 5.0.2 exactly the override's guard is
dropped, every KEPT guard still skips, and another flag_gems version drops nothing.
"""
from __future__ import annotations

from pathlib import Path

# imported here, before pytester's in-process runs: they unload what they import, and torch
# imported again in the same process crashes it
import torch  # noqa: F401

from campaign.plugins import musa_compat
from campaign.plugins.musa_compat import KEPT, OVERRIDES, MusaCompatPlugin

pytest_plugins = ("pytester",)

# path -> the guard as FlagGems 5.0.2 writes it (multi-line decorators joined on one line)
GUARDS = {
    "tests/test_embedding.py": '@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")',
    "tests/test_grouped_topk.py": '@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")',
    "tests/test_DSA/test_sparse_mla_ops.py": '@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA device required")',
    "tests/test_DSA/test_bin_topk.py": '@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA device required")',
    "tests/test_apply_repetition_penalties.py":
        '@pytest.mark.skipif(not _VLLM_OK or not torch.cuda.is_available(), reason="need VLLM+CUDA")',
    "benchmark/test_unary_pointwise_perf.py": '@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA required")',
    "benchmark/test_attention_perf.py": '@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")',
    "benchmark/test_special_perf.py": ('@pytest.mark.skipif((not torch.cuda.is_available()) or (flag_gems.device != "cuda"), '
                                       'reason="CUDA backend is not available for this benchmark.")'),
}
# what the guards' conditions read, as on an MThreads host: no CUDA, no vLLM, FlagGems on musa
PRELUDE = "import types\nimport pytest\nimport torch\n_VLLM_OK = False\nflag_gems = types.SimpleNamespace(device='musa')\n"


def _tree(pytester) -> None:
    for path, guard in GUARDS.items():
        file = Path(pytester.path) / path
        file.parent.mkdir(parents=True, exist_ok=True)
        name = Path(path).stem.removeprefix("test_")
        file.write_text(f"{PRELUDE}\n\n{guard}\ndef test_{name}():\n    pass\n", encoding="utf-8")


def _run(pytester, version: str):
    _tree(pytester)
    lines: list[str] = []
    plugin = MusaCompatPlugin(OVERRIDES, lambda: "mthreads", lines.append, pinned=musa_compat.FLAGGEMS_VERSION,
                              version=lambda: version)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs", "tests", "benchmark", plugins=[plugin])
    return result, plugin, lines


def test_the_list_covers_every_recorded_guard_once():
    listed = [(o.path, o.reason) for o in OVERRIDES] + [(path, reason) for path, reason, _ in KEPT]
    assert len(listed) == len(set(listed)) == len(GUARDS)
    for path, reason in listed:
        assert f'reason="{reason}"' in GUARDS[path], path


def test_on_mthreads_with_5_0_2_only_the_override_runs(pytester):
    result, plugin, lines = _run(pytester, "5.0.2")
    result.assert_outcomes(passed=1, skipped=len(GUARDS) - 1)
    assert plugin.dropped == ["tests/test_embedding.py::test_embedding"]
    assert lines[0] == "musa_compat: 1 override(s) read from FlagGems 5.0.2; active"
    assert lines[1] == "musa_compat: dropped skipif 'CUDA is not available' on tests/test_embedding.py::test_embedding"


def test_another_flag_gems_version_drops_nothing_and_says_why(pytester):
    result, plugin, lines = _run(pytester, "5.3.1")
    result.assert_outcomes(skipped=len(GUARDS))
    assert plugin.dropped == []
    assert lines == ["musa_compat: 1 override(s) read from FlagGems 5.0.2; inactive: flag_gems 5.3.1 is not 5.0.2"]
