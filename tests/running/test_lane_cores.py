"""A worker that shares its host spreads its own threads (every config's compile under first-config, SASS
disassembly) over its share of the cores, not over every core: 16 IR-pass lanes each taking the GPU host's
16 cores ran 256 compile threads there (load 58 to 75). A lane gets cores / lanes, a Ray compile-only task
the one core it asked its node for, a timed cell (alone) every core. The real lanes' share, read back from
a screen's cells: `tests/running/test_irlanes.py` (slow)."""
from __future__ import annotations

import runroots

from campaign.backends import get_backend
from campaign.contract import cores
from campaign.contract.cores import LANE_CORES_VARIABLE
from campaign.contract.runroot import RunRoot
from campaign.running import raynode
from campaign.running.workerlaunch import lane_cores


def test_an_ir_pass_lane_gets_its_share_and_a_timed_cell_every_core():
    assert lane_cores(4, False, 16) == {LANE_CORES_VARIABLE: "4"}
    assert lane_cores(16, False, 16) == {LANE_CORES_VARIABLE: "1"}
    assert lane_cores(3, False, 2) == {LANE_CORES_VARIABLE: "1"}, "at least one"
    assert lane_cores(4, True, 16) == {}, "a timed cell runs alone"
    assert lane_cores(1, False, 16) == {}, "one lane: the host is its"
    # a Ray CPU task asked its node for one core, whatever the node has and whatever its lanes
    assert lane_cores(1, False, 16, granted=raynode.CPU_TASK_CORES) == {LANE_CORES_VARIABLE: "1"}


def test_a_ray_compile_only_task_is_granted_the_core_it_asked_for(tmp_path):
    root = RunRoot(runroots.prepare(tmp_path, [runroots.demo("add", float16=True)]))
    cpu = raynode._setup(root, root.prepare, root.matrix, root.manifest, get_backend("cpu"), tmp_path, 1.0)
    cuda = raynode._setup(root, root.prepare, root.matrix, root.manifest, get_backend("cuda"), tmp_path, 1.0)
    assert cpu.cell_cores == raynode.CPU_TASK_CORES == 1 and cuda.cell_cores is None


def test_the_worker_spreads_its_threads_over_its_share(monkeypatch):
    every = cores.worker_threads()
    monkeypatch.setenv(LANE_CORES_VARIABLE, "1")
    assert cores.worker_threads() == 1
    monkeypatch.setenv(LANE_CORES_VARIABLE, str(every + 5))
    assert cores.worker_threads() == every, "never more than the cores it may run on"
    monkeypatch.delenv(LANE_CORES_VARIABLE)
    assert cores.worker_threads() == every
