"""GPU tests run on the GPU host only (`-m gpu`); CI deselects them by marker.

Selected on a machine without the expected device, they fail -- a GPU claim is
never left silently unchecked by a skip.
"""
import pytest


@pytest.fixture(scope="session", autouse=True)
def _h200():
    import torch
    if not torch.cuda.is_available():
        pytest.fail("gpu-marked tests need a CUDA device: run them on the GPU host", pytrace=False)
    if torch.cuda.get_device_capability(0) != (9, 0):
        pytest.fail(f"gpu-marked tests are written for sm_90 (H100/H200); found "
                    f"{torch.cuda.get_device_name(0)} {torch.cuda.get_device_capability(0)}", pytrace=False)
    import flag_gems  # noqa: F401  -- the host must have it: the FlagGems tests are the point
