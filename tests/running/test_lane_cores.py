"""An IR-pass lane's worker spreads its own threads (every config's compile under first-config, SASS
disassembly) over its share of the host, cores / lanes, not over every core: 16 lanes each taking the
GPU host's 16 cores ran 256 compile threads there (load 58 to 75). A timed cell runs alone: every core.
The real lanes' share, read back from a screen's cells: `tests/running/test_irlanes.py` (slow)."""
from __future__ import annotations

from campaign.contract.artifacts import LANE_CORES_VARIABLE
from campaign.plugins import warmup
from campaign.running.workerlaunch import lane_cores


def test_an_ir_pass_lane_gets_its_share_and_a_timed_cell_every_core():
    assert lane_cores(4, False, 16) == {LANE_CORES_VARIABLE: "4"}
    assert lane_cores(16, False, 16) == {LANE_CORES_VARIABLE: "1"}
    assert lane_cores(3, False, 2) == {LANE_CORES_VARIABLE: "1"}, "at least one"
    assert lane_cores(4, True, 16) == {}, "a timed cell runs alone"
    assert lane_cores(1, False, 16) == {}, "one lane: the host is its"


def test_the_worker_spreads_its_threads_over_its_share(monkeypatch):
    every = warmup.host_workers()
    monkeypatch.setenv(LANE_CORES_VARIABLE, "1")
    assert warmup.host_workers() == 1
    monkeypatch.setenv(LANE_CORES_VARIABLE, str(every + 5))
    assert warmup.host_workers() == every, "never more than the cores it may run on"
    monkeypatch.delenv(LANE_CORES_VARIABLE)
    assert warmup.host_workers() == every
