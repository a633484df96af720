import enum

import torch

FLOAT_DTYPES = [torch.float16, torch.float32]
DEFAULT_SHAPES = [(64, 64)]


class BenchLevel(enum.Enum):
    COMPREHENSIVE = "comprehensive"
    CORE = "core"
