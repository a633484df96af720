import flag_gems
import pytest
import torch

from . import base, consts


@pytest.mark.mm
def test_mm():
    # an explicit gems_op: FlagGems' function timed directly, not through use_gems
    base.BlasBenchmark(op_name="mm", torch_op=torch.mm, dtypes=consts.FLOAT_DTYPES, gems_op=flag_gems.mm).run()
