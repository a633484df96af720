"""One run root handed down (issue #38): below the commands and flows a run root travels as
`campaign.contract.runroot.RunRoot`, read once, not as a bare `Path` each stage re-reads.

`PATH_ROOTS` holds, per module below flows/, how many parameters named ``root`` are still annotated
``Path``: none now, every stage takes the `RunRoot` its command made (the worker's `lifeline` too:
`campaign.contract.runroot` costs the worker only `campaign.contract.status` more). Another tree's
root is named for what it is (``checkout`` for a FlagGems checkout, ``checkout_dir`` where the module
``checkout`` is imported, ``rootdir``/``pytest_root`` for a pytest tree, ``project_root``), so a
``root`` is a run root. The count may only fall: a module that gains one fails, and one that loses one
fails until its entry is lowered (or removed), so the table is the work left -- none, and a new one fails.
"""
from __future__ import annotations

import ast

import ratchet
from conftest import PROJECT_ROOT

FOLDERS = ("campaign", "worker", "plugins", "reaccount")
EDGE = ("campaign/flows/", "campaign/commands/", "campaign/cli.py")
PATH_ROOTS: dict[str, int] = {}


# Entry points below flows/ that take a path or a root alike (``RunRoot | Path``) and make it a
# `RunRoot` once, for tests and bench scripts that hold a folder: the classifier's, the screen table's,
# the report flow's, the adaptive rounds'. They may only fall too: a new one is a stage taking a path again.
EITHER_ROOTS = {
    "campaign/judging/caliber.py": 1,
    "campaign/judging/classify.py": 1,
    "campaign/judging/evidence.py": 1,
    "campaign/judging/irdiffroot.py": 1,
    "campaign/judging/screenroot.py": 3,
    "campaign/running/rounds.py": 1,
}
PATH, EITHER = ("Path",), ("RunRoot | Path", "Path | RunRoot")


def _count(tree: ast.AST, forms: tuple[str, ...] = PATH) -> int:
    """Parameters named ``root`` or ``run_root`` annotated as one of ``forms``, over every function of ``tree``."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            count += sum(1 for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                         if arg.arg in ("root", "run_root") and arg.annotation is not None
                         and ast.unparse(arg.annotation) in forms)
    return count


def _path_roots(forms: tuple[str, ...] = PATH) -> dict[str, int]:
    found: dict[str, int] = {}
    for folder in FOLDERS:
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            name = path.relative_to(PROJECT_ROOT).as_posix()
            if not name.startswith(EDGE) and "__pycache__" not in path.parts:
                if count := _count(ast.parse(path.read_text(encoding="utf-8")), forms):
                    found[name] = count
    return found


def test_root_path_parameters_below_the_flows_only_fall():
    found = _path_roots()
    grown, fallen = ratchet.moved(found, PATH_ROOTS)
    assert not grown, f"root: Path parameters added below flows/ (take a RunRoot): {grown}"
    assert not fallen, f"fewer root: Path parameters than PATH_ROOTS says: lower these entries {fallen}"


def test_entry_points_taking_a_path_or_a_root_only_fall():
    found = _path_roots(EITHER)
    grown, fallen = ratchet.moved(found, EITHER_ROOTS)
    assert not grown, f"RunRoot | Path parameters added below flows/ (take a RunRoot; a path is made one above): {grown}"
    assert not fallen, f"fewer RunRoot | Path parameters than EITHER_ROOTS says: lower these entries {fallen}"


def test_the_scan_counts_path_roots_only():
    source = ("def f(root: Path, other: Path, *, root2: Path): ...\n"
              "def g(root: RunRoot): ...\n"
              "class C:\n    def h(self, root: Path, *, x=1): ...\n    async def i(root: Path): ...\n")
    assert _count(ast.parse(source)) == 3
    either = "def f(root: RunRoot | Path): ...\ndef g(run_root: Path | RunRoot, root: Path): ...\n"
    assert (_count(ast.parse(either)), _count(ast.parse(either), EITHER)) == (1, 2)
