"""What `--format json` prints, as models: one per command, each with a committed JSON Schema
(`campaign schema`: schemas/<command>.schema.json), so a script reads a form that cannot drift.

`campaign compare` and `campaign report` have their own (`campaign.contract.comparison`,
`campaign.contract.records.Verdicts`); these are `validate`, `verify`, `screen`, `cost` and
`inventory`. Each is printed as canonical JSON on stdout; refusals stay on stderr with their
exit code, except `validate`'s, which are the point of its output.
"""
from __future__ import annotations

from typing import Literal, Optional

from campaign.contract.artifacts import Record

OUTPUT_VERSION = 1


class ManifestCheck(Record):
    """One manifest as `campaign validate` found it."""

    path: str                                  # as given
    ok: bool
    exit_code: int                             # 0, or the exit a refusal carries (`campaign.contract.errors.EXIT_CODES`)
    workloads: Optional[int] = None            # resolved workloads; None when refused
    tasks: Optional[int] = None                # the matrix's tasks; None when refused
    notes: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()               # each refusal line: FILE:LINE:COL: key -> path: message


class ValidateOutput(Record):
    schema_version: Literal[1]
    ok: bool                                   # every manifest passed
    manifests: tuple[ManifestCheck, ...]


class VerifyDifference(Record):
    kind: Literal["changed", "missing", "extra", "mode", "refused", "receipt", "journal", "signature"]
    path: str                                  # relative to the root; a folder ends in "/"; a signature's: the envelope
    detail: str


class VerifyOutput(Record):
    schema_version: Literal[1]
    root: str
    ok: bool                                   # no difference: the root verifies
    receipt_schema_version: Optional[int]      # None: receipt.json itself could not be read
    files_recorded: int
    differences: tuple[VerifyDifference, ...]
    notes: tuple[str, ...]                     # checks an old receipt cannot support
    writable: tuple[str, ...]                  # entries writable again (a sealed root is read-only)


class ScreenOutput(Record):
    """The screen's table (screen.tsv) as the screen printed it."""

    schema_version: Literal[1]
    root: str
    table: str                                 # the path of screen.tsv
    columns: tuple[str, ...]                   # screen.tsv's header: every row holds exactly these keys
    rows: tuple[dict[str, str], ...]           # one per workload, screen.tsv's values (empty string: none)
    emitted_manifest: Optional[str] = None     # --emit-manifest FILE, when written


class CostLine(Record):
    scope: Literal["workload", "cell", "total"]
    name: str                                  # workload, task id, or "total"
    state: str                                 # a cell's state (its status row's rc_name, or "not run"); empty for sums
    cells: int                                 # cells that ran
    recorded: int                              # of those, with a phase record
    ir_pass: bool                              # a screen's untimed IR pass cell (round 0)
    seconds: dict[str, Optional[float]]        # phase -> seconds; None: not recorded or not measured
    phases_s: Optional[float]
    wall_s: Optional[float]                    # the runner's elapsed time, spawn to exit


class CostOutput(Record):
    schema_version: Literal[1]
    root: str
    campaign: str
    backend: str
    sealed: bool
    lines: tuple[CostLine, ...]                # workloads in first-appearance order, then cells, then the total


class InventoryItem(Record):
    file: str
    function: str
    param_index: Optional[int]
    mark: str
    op_name: str
    bench_class: str
    shape_key: str
    shapes: Optional[int]                      # None: FlagGems' default shapes (no key of core_shapes.yaml)
    dismissed: str                             # ops/dismiss_upstream.csv's reason, or empty
    verified: Literal["yes", "no", "collection error", "not run"]


class InventoryOutput(Record):
    schema_version: Literal[1]
    checkout: str
    layout: Literal["per_op", "category"]      # the checkout's benchmark layout: 5.3+ per op, 5.0.2 by category
    items: tuple[InventoryItem, ...]
