import pytest
import torch

from benchmark.attri_util import FLOAT_DTYPES
from benchmark.performance_utils import Benchmark


class UnaryPointwiseBenchmark(Benchmark):
    def get_input_iter(self, dtype):
        for shape in self.shapes:
            yield (torch.randn(shape, dtype=dtype, device=self.device),)


forward_operations = [
    ("abs", torch.abs, FLOAT_DTYPES),
    ("neg", torch.neg, FLOAT_DTYPES),
]


@pytest.mark.parametrize(
    "op_name, torch_op, dtypes",
    [pytest.param(name, op, dtype, marks=getattr(pytest.mark, name, None)) for name, op, dtype in forward_operations],
)
def test_general_unary_pointwise(op_name, torch_op, dtypes):
    bench = UnaryPointwiseBenchmark(op_name=op_name, torch_op=torch_op, dtypes=dtypes)
    bench.run()


@pytest.mark.gelu
def test_gelu_backward():
    bench = UnaryPointwiseBenchmark(op_name="gelu", torch_op=torch.nn.functional.gelu, is_backward=True)
    bench.run()
