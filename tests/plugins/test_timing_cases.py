"""The cases a benchmark draws: the provider's shape file at the bench level, dtype-major, narrowed by a subset."""
from __future__ import annotations

import pytest
from timingsession import shape_project

from campaign.plugins import timing


def test_cases_come_from_the_providers_shape_file_dtype_major(tmp_path):
    root = shape_project(tmp_path)
    builtin = timing.plan_cases(root, "builtin", "core", "add", None, ("float16", "float32"))
    assert [(c.shape, c.dtype_name) for c in builtin] == [
        ((8,), "float16"), ((4, 4), "float16"), ((8,), "float32"), ((4, 4), "float32")]
    flaggems = timing.plan_cases(root, "flaggems", "core", "add", None, ("bfloat16",))
    assert [c.shape for c in flaggems] == [(16,), (2, 8), (3, 5, 7)]
    assert str(flaggems[0].dtype) == "torch.bfloat16"


def test_a_shape_subset_narrows_in_its_own_order(tmp_path):
    cases = timing.plan_cases(shape_project(tmp_path), "flaggems", "core", "add", ("3x5x7", "16"), ("float32",))
    assert [c.shape for c in cases] == [(3, 5, 7), (16,)]


@pytest.mark.parametrize("subset, message", [
    (("2x8", "4x4"), "shape 4x4 is not in the op's set"),
    (("2x8x",), "not of the form"),
    (("0x8",), "non-positive"),
])
def test_an_unknown_or_malformed_subset_entry_is_an_error(tmp_path, subset, message):
    with pytest.raises(ValueError, match=message):
        timing.plan_cases(shape_project(tmp_path), "flaggems", "core", "add", subset, ("float32",))


def test_unknown_op_or_dtype_is_an_error(tmp_path):
    root = shape_project(tmp_path)
    with pytest.raises(ValueError, match="no shapes for op 'softmax'"):
        timing.plan_cases(root, "flaggems", "core", "softmax", None, ("float32",))
    with pytest.raises(ValueError, match="not a torch dtype"):
        timing.plan_cases(root, "builtin", "core", "add", None, ("float17",))
