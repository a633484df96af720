"""What the session flow passes down to a runner: its setup (`RunSetup`), built once, and the
seams it reports through (`Events`, `Telemetry`). Apart from `campaign.running.runner` so the
runner's helpers (`campaign.running.batch`) can name them without importing the runner.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional, Protocol

from campaign.contract.manifest import Manifest
from campaign.contract.plans import Matrix, Task
from campaign.contract.runroot import RunRoot
from campaign.contract.status import StatusRow


@dataclass(frozen=True)
class Pace:
    """How a run's cells go, for its ETA: untimed IR-pass cells ``untimed_at_once`` at a time (its
    lanes), timed cells ``timed_at_once`` (alone on a card; a Ray cluster's slots), and the manifest's
    workload weights (``weight_s``; None where a workload has none)."""

    untimed_at_once: int = 1
    timed_at_once: int = 1
    weights: Mapping[str, Optional[float]] = field(default_factory=dict)


class Events(Protocol):
    def started(self, tasks: tuple[Task, ...], rows: dict[str, StatusRow], pace: Optional[Pace] = None) -> None: ...
    def cell_started(self, task: Task) -> None: ...
    def cell_ended(self, task: Task, row: StatusRow, settled: bool = True) -> None: ...
    def note(self, text: str) -> None: ...


class Telemetry(Protocol):
    def mark(self) -> None: ...
    def window(self, start: float, end: float, cell_dir: Path): ...


@dataclass
class RunSetup:
    """What the session flow built once and passes down; nothing here is read from globals."""

    root: RunRoot                        # a Path is taken too, and made one
    project_root: Path
    matrix: Matrix
    manifest: Manifest
    harness_digest: str
    plugins: tuple[str, ...]
    # this process's code against the root's prepare (`runchecks.harness_drift`): None, unchanged; asked
    # after each failed cell, so a failure the harness's own change caused settles nothing (`Runner.record`)
    harness_drift: Callable[[], Optional[str]]
    pinned_env: dict[str, str]
    parent_env: Mapping[str, str]
    scratch: Path                        # outside the root: per-cell caches, deleted after each cell
    python: str
    grace_s: float = 10.0
    lock: Optional[object] = None        # campaign.running.lock.RunLock: told which worker group runs
    # Several cards (`campaign.running.cards`): this runner's workloads (None: all), its card
    # (rows carry its uuid; the lock holds one running entry per card) and the variable that pins it.
    workloads: Optional[frozenset[str]] = None
    card: Optional[object] = None         # campaign.planning.cardplan.Card
    visibility_variable: Optional[str] = None
    # IR-pass processes at once on this runner's card (`batching.lanes`) and why; 1: one at a time
    lanes: int = 1
    lanes_why: str = ""
    # the cores one cell's worker may spread its own threads over (`workerlaunch.lane_cores`); None: an
    # IR-pass lane's share of this host (cores / lanes). A Ray CPU task asked one core of its node: 1
    cell_cores: Optional[int] = None

    def __post_init__(self):
        self.root = RunRoot.of(self.root)
