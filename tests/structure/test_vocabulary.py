"""Each vocabulary is one list, defined once and read everywhere else (#27).

Read from the source with ``ast`` (nothing imported), over campaign/, worker/, plugins/ and
reaccount/; docstrings are prose and not read. Two rules:

- a backend, target family or telemetry source is never spelled as a string outside
  `campaign.contract.platforms`: a decision reads the backend's row (``executes``,
  ``visibility_variable`` ...), so a new backend is a new row, not a hunt through the stages;
- a display (tuple, list, set, dict keys, ``Literal[...]``) holding three or more words of a
  vocabulary is a copy of its list, allowed only in the defining module. Pairs are logic
  (which two cells a rule compares), not copies;
- a word of a named vocabulary (`WORDS`: a cell, a verdict class, a screen verdict, a skip reason, a
  refusal prefix) is never a bare string outside its home: it is read by its name there
  (``BASELINE``, ``INCONCLUSIVE``, ``RUN_FAILED``), which a typo turns into a NameError and the type
  checker into a Literal; a refusal's first word that is in no list (``FOO_REFUSED``) fails too.

`ALLOWED` names every other place that must spell a word, with its reason.
"""
from __future__ import annotations

import ast
import re
from typing import get_args

from conftest import PROJECT_ROOT

from campaign.backends import BACKENDS
from campaign.contract import platforms, timers
from campaign.contract.errors import (
    EXIT_CALIBER,
    EXIT_CODES,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PREFLIGHT,
    EXIT_REFUSED,
    EXIT_VERIFY,
    REFUSAL_PREFIXES,
)
from campaign.contract.fields import CELL_NAMES
from campaign.contract.verdictnames import CLASSES, SKIP_REASONS, ScreenVerdict
from campaign.running.telemetry import SOURCES

FOLDERS = ("campaign", "worker", "plugins", "reaccount")
PLATFORMS = "campaign/contract/platforms.py"
NAMES = frozenset(platforms.BACKEND_NAMES) | frozenset(platforms.BY_FAMILY) | frozenset(platforms.TELEMETRY_SOURCES)
LISTS = {  # vocabulary -> (its words, the one module that lists them)
    "cells": (CELL_NAMES, "campaign/contract/fields.py"),
    "timer kinds": (timers.ROW_TIMERS, "campaign/contract/timers.py"),
    "IR stages": (platforms.IR_STAGES, PLATFORMS),
    "backends": (platforms.BACKEND_NAMES, PLATFORMS),
}
VERDICTNAMES, ERRORS = "campaign/contract/verdictnames.py", "campaign/contract/errors.py"
WORDS = {  # vocabulary -> (its words, its home): outside the home each word is read by its name
    "cells": (CELL_NAMES, "campaign/contract/fields.py"),
    "verdict classes": (CLASSES, VERDICTNAMES),
    "screen verdicts": (get_args(ScreenVerdict), VERDICTNAMES),
    "skip reasons": (SKIP_REASONS, VERDICTNAMES),
    "refusal prefixes": (REFUSAL_PREFIXES, ERRORS),
}
# a refusal's first word, as a string or the head of an f-string: ``RUN_FAILED check=...``
PREFIX_SHAPE = re.compile(r"^([A-Z]+_(?:REFUSED|FAILED))(?= |$)")
# (file, word): why it must be spelled there.
ALLOWED = {
    ("campaign/backends/cuda.py", "cuda"): "the module behind the row joins it by name; also torch's device string",
    ("campaign/backends/musa.py", "musa"): "the module behind the row joins it by name; also torch's device string",
    ("campaign/backends/rocm.py", "rocm"): "the module behind the row joins it by name",
    ("campaign/backends/cpu.py", "cpu"): "the module behind the row joins it by name; also torch's device string",
    ("plugins/offline_torch.py", "cuda"): "torch.device('cuda'): torch's word for the card's tensors, mapped to the host",
    ("plugins/offline_torch.py", "cpu"): "torch.device('cpu'): torch's word, where the offline tensors live",
    ("plugins/flaggems_offline.py", "cpu"): "gems_vendor('cpu', ...) and FlagGems' dispatch key CPU: torch's words",
    ("plugins/compile_only.py", "cpu"): "torch.device('cpu'): torch's word, where the compile-only tensors live",
    ("campaign/planning/ownrules.py", "cuda"): "torch's device string and torch.cuda, as a user's file spells them "
                                               "(the rule that refuses them on the compile-only backend)",
    ("campaign/running/telemetry.py", "nvml"): "SOURCES, the source registry (held equal to the rows below)",
    ("campaign/running/telemetry.py", "mthreads-gmi"): "SOURCES, the source registry (held equal to the rows below)",
    ("campaign/running/telemetry.py", "amdsmi"): "SOURCES, the source registry (held equal to the rows below)",
    ("campaign/running/telemetrysources.py", "mthreads-gmi"): "the executable's name in its own argv (gmi_argv)",
    ("plugins/rowclock.py", "nvml"): "a row's own clock is read through NVML and nothing else",
    ("campaign/contract/rootrecords.py", "cuda"): "the runtime version's key in roots sealed before it was "
                                                  "named runtime: they must still validate and report",
    ("campaign/judging/stats.py", "timer kinds"): "a ranking of regimes (graph, event, direct), not the list; "
                                                  "the stats rework owns the file",
    ("campaign/judging/ircounts.py", "IR stages"): "READERS: the stages it has a count reader for (ttgir, ptx, "
                                                   "sass), each beside its reader, not the list of stages",
}


def _sources() -> dict[str, ast.AST]:
    found = {}
    for folder in FOLDERS:
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            if "__pycache__" not in path.parts:
                found[path.relative_to(PROJECT_ROOT).as_posix()] = ast.parse(path.read_text(encoding="utf-8"))
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    nodes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, nodes) and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def _strings(elements) -> set[str]:
    return {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _displays(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            yield node, _strings(node.elts)
        elif isinstance(node, ast.Dict):
            yield node, _strings(k for k in node.keys if k is not None)


def test_backend_family_and_telemetry_names_are_spelled_once():
    found = []
    for file, tree in _sources().items():
        if file == PLATFORMS:
            continue
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES
                    and id(node) not in prose and (file, node.value) not in ALLOWED):
                found.append(f"{file}:{node.lineno}: {node.value!r} (read it from campaign.contract.platforms)")
    assert not found, "\n".join(found)


def test_each_list_is_written_out_in_its_module_only():
    found = []
    for file, tree in _sources().items():
        for node, words in _displays(tree):
            for vocabulary, (listed, home) in LISTS.items():
                if file != home and len(words & set(listed)) >= 3 and (file, vocabulary) not in ALLOWED:
                    found.append(f"{file}:{node.lineno}: {sorted(words & set(listed))} copies the {vocabulary} "
                                 f"of {home}")
    assert not found, "\n".join(found)


def _bare_words(file: str, tree: ast.AST) -> list[str]:
    prose, found = _docstrings(tree), []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in prose:
            continue
        for vocabulary, (words, home) in WORDS.items():
            if node.value in words and file != home and (file, node.value) not in ALLOWED:
                found.append(f"{file}:{node.lineno}: {node.value!r} is one of the {vocabulary} of {home}: read it by its name")
        head = PREFIX_SHAPE.match(node.value)
        if head and file != ERRORS and node.value not in REFUSAL_PREFIXES and (file, head[1]) not in ALLOWED:
            what = "spelled bare" if head[1] in REFUSAL_PREFIXES else "in no list: add it to errors.RefusalPrefix"
            found.append(f"{file}:{node.lineno}: {node.value[:40]!r}: the refusal prefix {head[1]} {what}")
    return found


def test_no_word_of_a_vocabulary_is_a_bare_string_outside_its_home():
    found = [line for file, tree in _sources().items() for line in _bare_words(file, tree)]
    assert not found, "\n".join(found)


def test_the_bare_word_rule_sees_a_cell_a_class_and_a_prefix():
    planted = ast.parse('def f(w):\n    return "X" if w["baseline"] else f"RUN_FAILED check=x: {w}" + "NEW_REFUSED"\n')
    found = _bare_words("campaign/judging/planted.py", planted)
    assert len(found) == 4 and "the verdict classes" in found[0] + found[1], found
    assert sum("refusal prefix" in line for line in found) == 2, found
    assert _bare_words(WORDS["cells"][1], ast.parse('BASELINE = "baseline"\n')) == []


def test_the_allowlist_holds_no_stale_entry():
    trees = _sources()
    for (file, word), why in ALLOWED.items():
        assert why and file in trees, f"{file}: no such module"
        if word in LISTS:
            continue
        words = {n.value for n in ast.walk(trees[file]) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert word in words, f"{file} no longer spells {word!r}: drop it from ALLOWED"


def test_the_registries_are_the_rows():
    assert tuple(BACKENDS) == platforms.BACKEND_NAMES
    assert set(SOURCES) == set(platforms.TELEMETRY_SOURCES)
    for name, cls in BACKENDS.items():
        row, backend = platforms.platform(name), cls()
        assert (backend.capabilities.executes, backend.capabilities.telemetry, backend.visibility_variable) == (
            row.executes, row.telemetry, row.visibility_variable)
    for row in platforms.PLATFORMS:
        assert set(row.families) <= set(platforms.BY_FAMILY), row


def test_commands_return_named_exit_codes():
    """Exit codes are interface (README's table): 0 1 2 3 4 5 130, named once in contract/errors."""
    assert (EXIT_OK, EXIT_REFUSED, EXIT_INPUT, EXIT_PREFLIGHT, EXIT_CALIBER, EXIT_VERIFY, EXIT_INTERRUPTED) == (
        0, 1, 2, 3, 4, 5, 130)
    found = []
    for file, tree in _sources().items():
        if not (file.startswith("campaign/commands/") or file == "campaign/cli.py"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant) and type(node.value.value) is int:
                found.append(f"{file}:{node.lineno}: return {node.value.value} (return an EXIT_* name)")
    assert not found, "\n".join(found)
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    assert all(f"| {code} | {meaning} |" in readme for code, meaning in EXIT_CODES.items())   # the one table


def test_a_target_names_its_family_and_the_family_its_stages():
    assert platforms.triton_target("cuda:90") == ("cuda", 90, 32)
    assert platforms.triton_target("hip:gfx942") == ("hip", "gfx942", 64)
    assert platforms.stages_of("hip:gfx942") == ("ttir", "ttgir", "llir", "amdgcn")
    assert platforms.stages_of("cuda:90")[-1] == "sass"
    for bad in ("sm_90", "hip:90", "cuda:gfx942", "rocm:gfx942"):
        try:
            platforms.family(bad)
        except ValueError as exc:
            assert "<family>:<arch>" in str(exc)
        else:
            raise AssertionError(f"{bad} was taken for a target")
