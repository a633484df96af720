# A tiny stand-in for a FlagGems checkout's benchmark/conftest.py (the options a cell passes).
import logging
import os

from benchmark.attri_util import BenchLevel


class BenchConfig:
    def __init__(self):
        self.mode = "kernel"
        self.bench_level = BenchLevel.COMPREHENSIVE
        self.warm_up = 1000
        self.repetition = 100
        self.shape_file = os.path.join(os.path.dirname(__file__), "core_shapes.yaml")
        self.user_desired_dtypes = None


Config = BenchConfig()

# FlagGems 5.0.2's record logger, as its conftest writes it: non-propagating, and its first
# handler assumed to be a FileHandler. Under pytest >= 8.4 log capture attaches a handler
# without `_open` to every non-propagating logger, and every item fails here after its rows.
recordLogger = logging.getLogger("fake_flag_gems_benchmark")
recordLogger.propagate = False


def emit_record_logger(message: str) -> None:
    if recordLogger.handlers:
        handler = recordLogger.handlers[0]
        if getattr(handler, "stream", None) is None:
            handler.stream = handler._open()
    recordLogger.info(message)


def pytest_addoption(parser):
    parser.addoption("--mode", default="kernel", choices=["kernel", "operator", "wrapper"])
    parser.addoption("--level", default="comprehensive", choices=["comprehensive", "core"])
    parser.addoption("--warmup", type=int, default=Config.warm_up)
    parser.addoption("--iter", type=int, default=Config.repetition)
    parser.addoption("--shape_file", default=Config.shape_file)
    parser.addoption("--dtypes", action="append", default=None)


def pytest_configure(config):
    Config.mode = config.getoption("--mode")
    Config.bench_level = BenchLevel(config.getoption("--level"))
    Config.warm_up = config.getoption("--warmup")
    Config.repetition = config.getoption("--iter")
    Config.shape_file = config.getoption("--shape_file")
    Config.user_desired_dtypes = config.getoption("--dtypes")
