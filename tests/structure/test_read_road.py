"""One road for reading a root: only `campaign.judging.evidence` reads a run root's results.

The source of the installed namespace (campaign/, worker/, plugins/, reaccount/) is scanned
with `ast` for the names of a root's result files -- the constants of
`campaign.contract.artifacts` and string literals spelling them -- and for calls of the
parsers evidence reads them with. A module that touches one outside its allowlist entry
fails, so the screen, the adaptive rounds and the classifier cannot start reading the
same files two ways again.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import rootbuilder as rb
from conftest import PROJECT_ROOT

from campaign.contract import artifacts
from campaign.contract.runroot import RunRoot
from campaign.judging import evidence, screening, screenroot
from campaign.judging.workload import WorkloadFacts, screen_verdict
from campaign.running.rounds import Rounds

SCANNED = ("campaign", "worker", "plugins", "reaccount")
NAMES = ("RESULT_FILE", "STATUS_FILE", "ROWS_FILE", "OUTCOMES_FILE", "IDENTITY_FILE", "AUTOTUNE_FILE",
         "TELEMETRY_FILE", "INDEX_FILE", "IR_DIR")
# the root's own records: `campaign.contract.runroot.RunRoot` is their one reader
RECORDS = ("PREPARE_FILE", "MATRIX_FILE", "MANIFEST_FILE", "PHASES_FILE", "BATCH_FILE")
WATCHED = NAMES + RECORDS
LITERALS = {getattr(artifacts, name): name for name in WATCHED}

# module -> {name it may touch: why}. Anything else naming a root's result files fails.
ALLOWED = {
    "campaign/judging/evidence.py": dict.fromkeys(NAMES, "the one reader of a root"),
    "campaign/contract/runroot.py": dict.fromkeys(RECORDS + ("STATUS_FILE", "TELEMETRY_FILE"),
                                                  "the one reader of a root's own records (and their paths)"),
    "campaign/judging/irevidence.py": {
        "INDEX_FILE": "the parser of ir/index.tsv; evidence hands it a cell's ir/ folder"},
    "campaign/judging/caliber.py": {
        "IDENTITY_FILE": "load_identities parses run_identity.json for evidence.caliber_of (its only caller, "
                         "checked by PARSERS below); the literal also labels a missing identity in a finding"},
    "campaign/running/telemetry.py": {
        "ROWS_FILE": "the runner's status row takes the clocks of the timing windows of the cell that just ran"},
    "campaign/running/runner.py": {
        "STATUS_FILE": "the run loop appends its ledger and reads it back to resume",
        "RESULT_FILE": "names the worker's one result file and reads it for the cell it just ran",
        "AUTOTUNE_FILE": "hands a replaying cell the path of its recording; the child reads it"},
    "campaign/running/cellresult.py": {
        "RESULT_FILE": "reads the result file of the cell the runner just ran, into its status row"},
    "campaign/sealing/receipt.py": {
        "IDENTITY_FILE": "copies each cell's run identity verbatim into the receipt, as it hashes files"},
    "campaign/planning/pinning.py": {
        "AUTOTUNE_FILE": "at prepare, copies another sealed root's recordings byte for byte into this root; "
                         "it judges nothing"},
    "campaign/running/rayexec.py": dict.fromkeys(("STATUS_FILE", "TELEMETRY_FILE"),
        "names the head's own bookkeeping so it is never shipped to a node, and appends the nodes' "
        "telemetry samples to telemetry.tsv; reads neither"),
    "campaign/contract/journalcheck.py": {
        "STATUS_FILE": "names the ledger in a finding; its rows are handed in, read by RunRoot"},
    "campaign/flows/freeze.py": dict.fromkeys(("MANIFEST_FILE", "MATRIX_FILE", "PREPARE_FILE"),
                                              "prepare writes the root's records; it reads none back"),
    "campaign/flows/session.py": {"PREPARE_FILE": "names the missing file in run's refusal of an unprepared root"},
    "campaign/sealing/attest.py": {"MANIFEST_FILE": "labels the manifest's entry in the in-toto predicate"},
    "campaign/running/batch.py": {"BATCH_FILE": "writes each batch process's batch.json and hands its path "
                                                "to the worker"},
    "worker/phases.py": {"PHASES_FILE": "writes phases.json"},
    "campaign/running/sidequeue.py": {"BATCH_FILE": "writes each queue process's batch.json and hands its path "
                                                    "to the worker"},
    "reaccount/derive.py": {"MATRIX_FILE": "copies the sealed matrix.json byte for byte beside the derived receipt"},
    # the child side writes the cell: each plugin its own file, the worker the result from them
    "worker/cell.py": dict.fromkeys(("ROWS_FILE", "OUTCOMES_FILE", "AUTOTUNE_FILE", "IR_DIR", "INDEX_FILE"),
                                    "the worker builds result.json from the files its own plugins just wrote"),
    "worker/batch.py": {"RESULT_FILE": "names the result file of each cell it runs, as the runner chose it"},
    "plugins/timing.py": {"ROWS_FILE": "writes rows.json"},
    "plugins/dobench.py": {"ROWS_FILE": "writes rows.json"},
    "plugins/outcomes.py": {"OUTCOMES_FILE": "writes outcomes.json"},
    "plugins/autotune.py": {"AUTOTUNE_FILE": "writes autotune.json"},
    "plugins/run_identity.py": {"IDENTITY_FILE": "writes run_identity.json"},
    "plugins/ir_capture.py": {"IR_DIR": "writes ir/", "INDEX_FILE": "writes ir/index.tsv"},
}

# The parsers evidence reads with: called from anywhere else, they are a second road.
PARSERS = {
    ("caliber", "load_identities"): ("campaign/judging/evidence.py",),
    ("telemetryfile", "read_samples"): ("campaign/judging/evidence.py",),
    ("irevidence", "fingerprint"): ("campaign/judging/evidence.py",),
    ("irevidence", "read_cell_ir"): ("campaign/judging/evidence.py",),
    ("irevidence", "topology"): ("campaign/judging/evidence.py",),
    ("irevidence", "read_index"): ("campaign/judging/evidence.py",),
}


def _sources() -> dict[str, str]:
    out = {}
    for top in SCANNED:
        for path in sorted((PROJECT_ROOT / top).rglob("*.py")):
            out[path.relative_to(PROJECT_ROOT).as_posix()] = path.read_text(encoding="utf-8")
    return out


def touches(source: str) -> dict[str, int]:
    """Name of a root's result file -> first line touching it: the artifacts constant (also
    imported under another name or read as an attribute), or a literal spelling the file."""
    tree = ast.parse(source)
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "campaign.contract.artifacts":
            aliases.update({a.asname or a.name: a.name for a in node.names if a.name in WATCHED})
    found: dict[str, int] = {}

    def hit(name: str, line: int) -> None:
        found[name] = min(line, found.get(name, line))

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in aliases:
            hit(aliases[node.id], node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in WATCHED:
            hit(node.attr, node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = LITERALS.get(node.value.rsplit("/", 1)[-1]) if node.value != artifacts.IR_DIR else None
            if name:
                hit(name, node.lineno)
        elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant)
              and node.right.value == artifacts.IR_DIR):
            hit("IR_DIR", node.lineno)          # cell / "ir": too short a word to look for anywhere else
    return found


def calls(source: str) -> dict[tuple[str, str], int]:
    """(module, function) of PARSERS -> first line calling it, as ``module.function`` or imported by name."""
    tree = ast.parse(source)
    imported = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module.rsplit(".", 1)[-1]
            imported.update({a.asname or a.name: (module, a.name) for a in node.names if (module, a.name) in PARSERS})
    found: dict[tuple[str, str], int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        key = None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            key = (func.value.id, func.attr)
        elif isinstance(func, ast.Name):
            key = imported.get(func.id)
        if key in PARSERS:
            found[key] = min(node.lineno, found.get(key, node.lineno))
    return found


def road_breaches(sources: dict[str, str]) -> list[str]:
    out = []
    for rel, source in sources.items():
        if rel == "campaign/contract/artifacts.py":
            continue                            # where the names are defined
        allowed = ALLOWED.get(rel, {})
        out += [f"{rel}:{line}: names {name}" for name, line in sorted(touches(source).items()) if name not in allowed]
        out += [f"{rel}:{line}: calls {module}.{function}" for (module, function), line in sorted(calls(source).items())
                if rel not in PARSERS[(module, function)] and not rel.endswith(f"/{module}.py")]
    return out


def test_only_evidence_reads_a_roots_results():
    breaches = road_breaches(_sources())
    assert not breaches, ("read a root's results through campaign.judging.evidence, or add an allowlist entry "
                          "that says why:\n" + "\n".join(breaches))


def test_each_way_of_naming_a_result_file_or_calling_a_parser_is_caught():
    sources = {
        "campaign/reporting/aliased.py": ("from campaign.contract.artifacts import ROWS_FILE as R\n"
                                          "def f(cell):\n    return (cell / R).read_text()\n"),
        "campaign/reporting/attribute.py": ("from campaign.contract import artifacts\n"
                                            "def f(cell):\n    return cell / artifacts.RESULT_FILE\n"),
        "campaign/reporting/literal.py": ('def f(root, cell):\n    return (cell / "outcomes.json", cell / "ir",\n'
                                          '            root / "cells/a/r1/baseline/status.tsv")\n'),
        "campaign/reporting/parsers.py": ("from campaign.judging import irevidence\n"
                                          "from campaign.contract.telemetryfile import read_samples as samples\n"
                                          "def f(cell):\n    return irevidence.fingerprint(cell), samples(cell)\n"),
        # words in a message, a folder named like the IR stage, and the reader itself are not a second road
        "campaign/reporting/innocent.py": ('def f(cell, stage="ir"):\n    return f"no result.json in {cell}", stage\n'),
        "campaign/judging/evidence.py": ("from campaign.contract.artifacts import ROWS_FILE\n"
                                         "from campaign.judging import irevidence\n"
                                         "def f(cell):\n    return cell / ROWS_FILE, irevidence.topology(cell, 1)\n"),
    }
    assert road_breaches(sources) == [
        "campaign/reporting/aliased.py:3: names ROWS_FILE",
        "campaign/reporting/attribute.py:3: names RESULT_FILE",
        "campaign/reporting/literal.py:2: names IR_DIR",
        "campaign/reporting/literal.py:2: names OUTCOMES_FILE",
        "campaign/reporting/literal.py:3: names STATUS_FILE",
        "campaign/reporting/parsers.py:4: calls irevidence.fingerprint",
        "campaign/reporting/parsers.py:4: calls telemetryfile.read_samples",
    ]


def test_every_allowlist_entry_is_still_needed():
    """An entry nothing uses any more would let a later read in through it unseen."""
    sources = _sources()
    stale = [f"{rel}: {name}" for rel, names in ALLOWED.items() if rel != "campaign/judging/evidence.py"
             for name in names if name not in touches(sources.get(rel, ""))]
    assert not stale, "drop these allowlist entries: " + "; ".join(stale)


class _Notes:
    """The runner's events: only notes are expected while it judges round 1."""

    def __init__(self):
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines.append(text)


def _three_answers(root: Path, workload: str) -> dict[str, object]:
    """"Did the IR change" for one workload as the screen, the runner and the classifier answer it."""
    facts = {f.workload: f for f in screenroot.gather(root)}[workload]
    screen = screening.verdict(facts).name
    ev = evidence.load_root(root)
    w = WorkloadFacts(workload, [t for t in ev.tasks.values() if t.task.workload == workload], ev)
    notes = _Notes()
    skip = Rounds(root, ev.matrix, ev.manifest, notes.note).verdict(workload, RunRoot(root).latest())
    runner = skip[0] if skip else ("no pair" if any("no control" in n for n in notes.lines) else "runs")
    assert screen_verdict(w) == screen, "the classifier's screen column is the screen's own verdict"
    return {"screen": screen, "runner": runner, "classifier": w.ir_changed()}


CHANGED = {"screen": screening.IR_CHANGED, "runner": "runs", "classifier": True}
EQUAL = {"screen": screening.NO_IR_DIFF, "runner": "SWITCH_NO_IR_DIFF", "classifier": False}
NO_IR = {"screen": screening.NO_COMPARABLE_IR, "runner": "NO_COMPARABLE_IR", "classifier": None}
NO_PAIR = {"screen": screening.NO_COMPARABLE_IR, "runner": "no pair", "classifier": None}


def _drop_ir(root: Path, task_id: str) -> None:
    for path in (root / artifacts.cell_dir_name(task_id) / artifacts.IR_DIR).glob("*.ttgir"):
        path.unlink()


def _unreadable_autotune(root: Path, task_id: str) -> None:
    path = root / artifacts.cell_dir_name(task_id) / artifacts.AUTOTUNE_FILE
    path.unlink()
    path.write_text("{not json", encoding="utf-8")


@pytest.mark.parametrize("case", ["changed", "equal", "tuned_baseline", "no_ir", "no_control", "autotune_unreadable"])
def test_the_screen_the_runner_and_the_classifier_give_one_answer(tmp_path, case):
    options = rb.Options(rounds=1, control=case != "no_control")
    workload, expected, bend = {
        "changed": (rb.mm(tuning_configs=0), CHANGED, None),
        "equal": (rb.pointwise(), EQUAL, None),
        # the recording baseline holds every config's variants: the control stands in for it
        "tuned_baseline": (rb.mm(), CHANGED, None),
        "no_ir": (rb.pointwise(), NO_IR, lambda root: _drop_ir(root, "add/r1/candidate")),
        "no_control": (rb.mm(), NO_PAIR, None),
        # the switch changes nothing, but the recording baseline holds extra config variants: read as
        # not tuned, baseline and candidate would differ; an unreadable record is never compared
        "autotune_unreadable": (rb.pointwise(tuning_configs=3), EQUAL,
                                lambda root: _unreadable_autotune(root, "add/r1/baseline")),
    }[case]
    root = rb.build(tmp_path, [workload], options)
    if bend:
        bend(root)
    assert _three_answers(root, workload.name) == expected


def test_the_runner_reads_the_plan_not_the_manifests_defaults():
    """What a run does is frozen in matrix.json at prepare (``tuner_cache``, ``workloads_per_process``,
    ``ir_pass_lanes``, the rounds policy): nothing under campaign/running/, nor the session that sets the
    runner up (campaign/flows/session.py), reads a manifest's ``defaults`` attribute."""
    found = []
    paths = [*sorted((PROJECT_ROOT / "campaign" / "running").rglob("*.py")), PROJECT_ROOT / "campaign" / "flows" / "session.py"]
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr == "defaults"
                    and "manifest" in ast.unparse(node.value).rsplit(".", 1)[-1]):
                found.append(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}")
    assert found == []
