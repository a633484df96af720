# A tiny stand-in for FlagGems' Benchmark, written for the project's tests (not FlagGems code):
# shapes from the shape file (op name, then the class chain, then DEFAULT_SHAPES), dtypes from
# --dtypes or the op's own, and per shape the torch side then the FlagGems side (under
# flag_gems.use_gems, or an explicit gems_op), each timed with triton.testing.do_bench.
import flag_gems
import torch
import triton

from .conftest import Config
from .consts import DEFAULT_SHAPES, FLOAT_DTYPES


def load_table(path):
    try:
        import yaml
    except ImportError:  # the stand-in also runs where only ruamel.yaml is installed
        from ruamel.yaml import YAML
        with open(path) as handle:
            return YAML(typ="safe").load(handle)
    with open(path) as handle:
        return yaml.safe_load(handle)


class Benchmark:
    DEFAULT_SHAPES = DEFAULT_SHAPES

    def __init__(self, op_name, torch_op, dtypes=None, is_backward=False, **kwargs):
        self.op_name = op_name + ("_backward" if is_backward else "")
        self.torch_op = torch_op
        self.is_backward = is_backward
        self.gems_op = kwargs.get("gems_op")
        self.dtypes = dtypes or FLOAT_DTYPES
        self.shapes = self.DEFAULT_SHAPES
        self.device = flag_gems.device

    def set_shapes(self, path):
        table = load_table(path)
        if self.op_name in table:
            self.shapes = table[self.op_name]["shapes"]
        else:
            for cls in type(self).__mro__:
                if cls.__name__ in table:
                    self.shapes = table[cls.__name__]["shapes"]
                    break
        self.shapes = [tuple(s) for s in self.shapes]

    def init_user_config(self):
        self.to_bench_dtypes = [getattr(torch, d) for d in Config.user_desired_dtypes or ()] or self.dtypes
        self.set_shapes(Config.shape_file)

    def get_latency(self, op, *args):
        fn = lambda: op(*args)  # noqa: E731
        if self.is_backward:
            out = fn()
            xs = [a for a in args if torch.is_tensor(a) and a.requires_grad]
            fn = lambda: torch.autograd.grad((out,), xs, grad_outputs=(torch.ones_like(out),), retain_graph=True)  # noqa: E731
        return triton.testing.do_bench(fn, warmup=Config.warm_up, rep=Config.repetition, return_mode="median")

    def get_input_iter(self, dtype):
        raise NotImplementedError("Each Benchmark must implement its own input iterator.")

    def run(self):
        self.init_user_config()
        for dtype in self.to_bench_dtypes:
            print(f"Operator: {self.op_name}  Performance Test (dtype={dtype}, mode={Config.mode},level={Config.bench_level.value})")
            for args in self.get_input_iter(dtype):
                if self.is_backward:
                    args = [a.clone().requires_grad_() if torch.is_tensor(a) else a for a in args]
                base = self.get_latency(self.torch_op, *args)
                if self.gems_op:
                    gems = self.get_latency(self.gems_op, *args)
                else:
                    with flag_gems.use_gems(exclude=["zero_"]):
                        gems = self.get_latency(self.torch_op, *args)
                print(f"SUCCESS {base:.6f} {gems:.6f} {[tuple(a.shape) for a in args]}")


class GenericBenchmark(Benchmark):
    def __init__(self, *args, input_fn, **kwargs):
        super().__init__(*args, **kwargs)
        self.input_fn = input_fn

    def get_input_iter(self, dtype):
        for shape in self.shapes:
            yield from self.input_fn(shape, dtype, self.device)


class UnaryPointwiseBenchmark(Benchmark):
    def get_input_iter(self, dtype):
        for shape in self.shapes:
            yield (torch.randn(shape, dtype=dtype, device=self.device),)


class BlasBenchmark(Benchmark):
    def get_input_iter(self, dtype):
        for b, m, n, k in self.shapes:
            yield (torch.randn((m, k), dtype=dtype, device=self.device),
                   torch.randn((k, n), dtype=dtype, device=self.device))
