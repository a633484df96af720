import pytest
import torch

from benchmark.performance_utils import Benchmark


class BinaryPointwiseBenchmark(Benchmark):
    def get_input_iter(self, dtype):
        for shape in self.shapes:
            yield torch.randn(shape, dtype=dtype, device=self.device), 2


@pytest.mark.parametrize(
    "op_name, torch_op, dtypes",
    [pytest.param(name, op, dtype, marks=getattr(pytest.mark, name, None)) for name, op, dtype in [("pow", torch.pow, None)]],
)
def test_general_binary_pointwise(op_name, torch_op, dtypes):
    BinaryPointwiseBenchmark(op_name=op_name, torch_op=torch_op, dtypes=dtypes).run()


# as in FlagGems 5.0.2: parameters without a parametrize (on the dismiss list)
@pytest.mark.pow
def test_pow(op_name, torch_op, dtypes):
    BinaryPointwiseBenchmark(op_name=op_name, torch_op=torch_op, dtypes=dtypes).run()
