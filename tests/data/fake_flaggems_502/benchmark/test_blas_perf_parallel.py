import pytest
import torch

from benchmark.performance_utils import Benchmark


class BlasBenchmark(Benchmark):
    def get_input_iter(self, dtype):
        for b, m, n, k in self.shapes:
            yield (torch.randn((m, k), dtype=dtype, device=self.device),
                   torch.randn((k, n), dtype=dtype, device=self.device))


class ParallelBlasBenchmark(BlasBenchmark):
    pass


@pytest.mark.parametrize(
    "op_name, torch_op, bench_cls",
    [pytest.param("mm", torch.mm, ParallelBlasBenchmark, marks=pytest.mark.mm)],
)
def test_blas_benchmark(op_name, torch_op, bench_cls):
    bench_cls(op_name=op_name, torch_op=torch_op).run()
