"""A run root as one object: its paths, its records read once and typed, sealed or not.

Every stage that opens a root's own records (prepare.json, matrix.json, manifest.yaml, status.tsv,
each cell's phases.json, each batch's batch.json) goes through a `RunRoot` instead of joining a
bare path (`tests/structure/test_read_road.py`). The cells' result files are `campaign.judging.evidence`'s.

The frozen records (prepare, matrix, manifest) are read on first use and kept: nothing rewrites
them after `campaign prepare`. status.tsv grows while a run appends to it, so `status()` reads it
each time it is asked. A record that cannot be read is an `InputError` naming the file and why.
"""
from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Optional

from pydantic import ValidationError

from campaign.contract import artifacts, canonical, status, yamlio
from campaign.contract.cellfiles import Phases
from campaign.contract.errors import InputError
from campaign.contract.manifest import Manifest
from campaign.contract.plans import BatchRecord, Matrix
from campaign.contract.rootrecords import Prepare
from campaign.contract.status import StatusRow


def _why(exc: Exception) -> str:
    return str(exc).splitlines()[0]


class RunRoot:
    """The root at ``path``; ``RunRoot.of`` takes a path or a root alike."""

    def __init__(self, path: Path):
        self.path = Path(path)

    @classmethod
    def of(cls, root: "RunRoot | Path | str") -> "RunRoot":
        return root if isinstance(root, RunRoot) else cls(Path(root))

    def __repr__(self) -> str:
        return f"RunRoot({str(self.path)!r})"

    def __str__(self) -> str:              # messages and commands print the folder
        return str(self.path)

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __truediv__(self, name: str) -> Path:
        """A path inside the root, for the writers (the runner's ledger, a batch's record, the
        sampler's telemetry); reading a record goes through the accessors below."""
        return self.path / name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunRoot) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    # paths ------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.path.name

    def file(self, name: str) -> Path:
        """A top-level file of the root, by its `campaign.contract.artifacts` name."""
        return self.path / name

    @property
    def manifest_file(self) -> Path:
        return self.path / artifacts.MANIFEST_FILE

    @property
    def matrix_file(self) -> Path:
        return self.path / artifacts.MATRIX_FILE

    @property
    def prepare_file(self) -> Path:
        return self.path / artifacts.PREPARE_FILE

    @property
    def status_file(self) -> Path:
        return self.path / artifacts.STATUS_FILE

    @property
    def receipt_file(self) -> Path:
        return self.path / artifacts.RECEIPT_FILE

    @property
    def telemetry_file(self) -> Path:
        return self.path / artifacts.TELEMETRY_FILE

    @property
    def batches_dir(self) -> Path:
        return self.path / artifacts.BATCHES_DIR

    def cell(self, task_id: str) -> Path:
        """The folder of one cell (``task_id``: workload/rN/cell)."""
        return self.path / artifacts.cell_dir_name(task_id)

    # state ------------------------------------------------------------------------------
    @property
    def prepared(self) -> bool:
        return self.prepare_file.is_file()

    @property
    def sealed(self) -> bool:
        """A receipt is there (any kind of file: verification says whether it holds)."""
        return os.path.lexists(self.receipt_file)

    @property
    def mode(self) -> Optional[str]:
        """The command the root was prepared for ("campaign" where prepare.json names none); None
        without a prepare.json."""
        return self.prepare.mode if self.prepared else None

    # frozen records ---------------------------------------------------------------------
    @cached_property
    def prepare(self) -> Prepare:
        if not self.prepared:
            raise InputError(f"{self.path}: no {artifacts.PREPARE_FILE}: not a prepared root; run `campaign prepare`")
        return self._model(self.prepare_file, Prepare, "prepare record")

    @cached_property
    def matrix(self) -> Matrix:
        if not self.matrix_file.is_file():
            raise InputError(f"{self.path}: no {artifacts.MATRIX_FILE}: not a run root")
        return self._model(self.matrix_file, Matrix, "matrix")

    @cached_property
    def manifest(self) -> Manifest:
        if not self.manifest_file.is_file():
            raise InputError(f"{self.path}: no {artifacts.MANIFEST_FILE}: not a run root")
        return yamlio.validate(Manifest, self.manifest_file)

    def frame(self) -> tuple[Manifest, Matrix]:
        """The manifest and the matrix, the manifest read first: a folder that is no root is named
        by its missing manifest, as every reader of a root names it."""
        manifest = self.manifest
        return manifest, self.matrix

    @staticmethod
    def _model(path: Path, model, what: str):
        try:
            return model.model_validate(canonical.read_json(path))
        except (OSError, ValueError, ValidationError) as exc:
            raise InputError(f"{path}: not a {what}: {_why(exc)}") from None

    # records that grow or may be absent -------------------------------------------------
    def status(self) -> tuple[list[StatusRow], list[str]]:
        """status.tsv's rows and the lines that are not rows, read now (a run appends to it)."""
        try:
            return status.read(self.status_file)
        except OSError as exc:   # a FIFO, a device or a link (`regular.NotRegular`), or no permission
            raise InputError(f"{self.status_file}: {exc.strerror}: not a status ledger that can be read; put "
                             "the run's status.tsv back (or move this aside if the root has none), then run again") from None

    def latest(self) -> dict[str, StatusRow]:
        """Each task's last status row."""
        return status.latest(self.status()[0])

    def phases(self, task_id: str) -> tuple[Optional[Phases], Optional[str]]:
        """A cell's phases.json and, where it is unusable, why (None, None: not recorded)."""
        path = self.cell(task_id) / artifacts.PHASES_FILE
        if not path.is_file():
            return None, None
        try:
            record = Phases.model_validate(canonical.read_json(path))
        except (OSError, ValueError, ValidationError) as exc:
            return None, f"{path}: unreadable, counted as not recorded: {_why(exc)}"
        if record.task_id != task_id:
            return None, f"{path}: records task {record.task_id}, not {task_id}: counted as not recorded"
        return record, None

    def batches(self) -> tuple[list[BatchRecord], list[str]]:
        """Every batch process's batch.json (batches/*/), and a note for each unreadable one."""
        records, notes = [], []
        for path in sorted(self.batches_dir.glob(f"*/{artifacts.BATCH_FILE}")):
            try:
                records.append(BatchRecord.model_validate(canonical.read_json(path)))
            except (OSError, ValueError, ValidationError) as exc:
                notes.append(f"{path}: unreadable, left out of the batching line: {_why(exc)}")
        return records, notes
