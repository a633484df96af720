"""A FlagGems checkout as a source: its commit, its cleanliness, and the files a cell of it runs.

A manifest names the checkout (``sources.flag_gems_checkout: {path, commit | tag | digest}``).
A git work tree is refused unless ``git rev-parse HEAD`` is that commit and the tree is clean.
A dirty tree is refused, not recorded: the campaign's claim is "FlagGems at commit X",
and a diff recorded beside it is not something a reviewer of the receipt can read back.
A plain tree (an unpacked release, a copy: no ``.git``) has no commit; its `tree_digest`
stands in for one, pinned as ``digest`` in the manifest (which the root holds byte for
byte), and a refusal prints the digest to pin. The checkout's own version (`own_version`:
pyproject.toml, setup.py or flag_gems' ``__init__.py``) must be the one ``sources.flag_gems``
pins, or the checkout's benchmark files would time another release's package.

What a cell runs from the checkout is digested like any harness file: the benchmark or
test file, every conftest.py and pytest configuration on its way down from the checkout
root, what those import from the checkout (``performance_utils.py`` or ``base.py``,
``attri_util.py`` or ``consts.py``, ``accuracy_utils.py``; `campaign.planning.targetfiles`
reads them with the checkout as the root), and the shape file FlagGems reads,
``benchmark/core_shapes.yaml``. flag_gems itself is the installed package pinned by
``sources.flag_gems`` (the sessions override the checkout's ``pythonpath = src``), so the
checkout's ``src/`` is not what runs and is not digested.

Targets of a checkout are absolute paths inside it; the checkout root is the nearest
folder above a target holding ``.git`` or ``benchmark/core_shapes.yaml``, so prepare, run and
the seal find the same files from prepare.json's targets alone.
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
import subprocess
from pathlib import Path
from typing import Iterable, Optional

import tomllib

from campaign.contract import toolenv
from campaign.planning import targetfiles

SHAPE_FILE = "benchmark/core_shapes.yaml"
SHAPE_SUFFIXES = (".yaml", ".yml")
GIT_TIMEOUT_S = 60
# left out of a plain tree's digest: what running or installing it writes beside its files
UNDIGESTED = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", "build", "dist"})


class CheckoutProblem(ValueError):
    """Why a checkout cannot be used; the message names the check's subject."""


def _git(checkout: Path, *args: str) -> str:
    try:
        with toolenv.clean(os.environ) as env:     # no caller's HOME or GIT_CONFIG_* runs code here
            done = subprocess.run(toolenv.git_argv("-C", str(checkout), *args), capture_output=True, text=True,
                                  timeout=GIT_TIMEOUT_S, check=False, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckoutProblem(f"git {' '.join(args)} in {checkout}: {type(exc).__name__}: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        raise CheckoutProblem(f"git {' '.join(args)} in {checkout}: exit {done.returncode}: {tail[0]}")
    return done.stdout


def locate(manifest_path: Path, path: str) -> Path:
    """The checkout's folder: ``path`` as written, relative to the manifest's folder unless absolute."""
    given = Path(path).expanduser()
    where = given if given.is_absolute() else Path(manifest_path).resolve().parent / given
    try:
        return where.resolve()
    except (RuntimeError, OSError):    # a loop of links: kept as written, its reader names the loop
        return where


def tree_digest(checkout: Path) -> str:
    """sha256 over ``<sha256>  <path>`` lines of every regular file under ``checkout``, sorted by path,
    leaving out `UNDIGESTED` folders, ``*.egg-info`` and ``*.pyc``; a symbolic link counts by its target text."""
    lines = []
    for folder, names, files in os.walk(checkout):
        names[:] = sorted(n for n in names if n not in UNDIGESTED and not n.endswith(".egg-info"))
        for name in files:
            path = Path(folder) / name
            if name.endswith(".pyc"):
                continue
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            lines.append(f"{hashlib.sha256(data).hexdigest()}  {path.relative_to(checkout).as_posix()}\n")
    return hashlib.sha256("".join(sorted(lines, key=lambda line: line[66:])).encode()).hexdigest()


_VERSION = re.compile(r"""\bversion\s*=\s*["']([^"']+)["']""")


def own_version(checkout: Path) -> Optional[tuple[str, str]]:
    """(version, the file it was read from): pyproject.toml's [project] version, setup.py's
    ``version="..."``, or ``__version__`` of flag_gems' ``__init__.py``; None when none states one."""
    pyproject = checkout / "pyproject.toml"
    if pyproject.is_file():
        try:
            version = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("version")
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            version = None
        if isinstance(version, str):
            return version, "pyproject.toml"
    setup = checkout / "setup.py"
    if setup.is_file():
        found = _VERSION.search(setup.read_text(encoding="utf-8", errors="replace"))
        if found:
            return found.group(1), "setup.py"
    for init in (checkout / "src" / "flag_gems" / "__init__.py", checkout / "flag_gems" / "__init__.py"):
        if init.is_file():
            for node in ast.parse(init.read_text(encoding="utf-8", errors="replace")).body:
                if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets)
                        and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                    return node.value.value, init.relative_to(checkout).as_posix()
    return None


def check(checkout: Path, commit: Optional[str], tag: Optional[str], digest: Optional[str] = None) -> str:
    """The checkout's HEAD commit, when it is the pinned one and the tree is clean; for a plain
    tree (no ``.git``), its `tree_digest`, when that is the pinned ``digest``."""
    if not checkout.is_dir():
        raise CheckoutProblem(f"{checkout}: no such folder")
    if not (checkout / ".git").exists():
        return _plain(checkout, commit, tag, digest)
    if digest is not None:
        raise CheckoutProblem(f"{checkout}: a git work tree is named by its commit or tag, not a digest: "
                              "pin `commit:` (git rev-parse HEAD) instead of `digest:`")
    if _git(checkout, "rev-parse", "--show-toplevel").strip() != str(checkout.resolve()):
        raise CheckoutProblem(f"{checkout}: not the top of a git work tree")
    head = _git(checkout, "rev-parse", "HEAD").strip()
    if commit is not None and not head.startswith(commit):
        raise CheckoutProblem(f"{checkout}: HEAD is {head}, the manifest pins commit {commit}")
    if tag is not None:
        tagged = _git(checkout, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}").strip()
        if tagged != head:
            raise CheckoutProblem(f"{checkout}: HEAD is {head}, tag {tag} is {tagged}")
    changed = [line for line in _git(checkout, "status", "--porcelain", "--untracked-files=normal").splitlines() if line]
    if changed:
        shown = "; ".join(line.strip() for line in changed[:10])
        more = f" (and {len(changed) - 10} more)" if len(changed) > 10 else ""
        raise CheckoutProblem(f"{checkout}: the tree differs from {head[:12]}: {shown}{more}; "
                              "a campaign names a commit, so local edits and untracked files are refused")
    return head


def _plain(checkout: Path, commit: Optional[str], tag: Optional[str], digest: Optional[str]) -> str:
    found = tree_digest(checkout)
    if commit is not None or tag is not None:
        raise CheckoutProblem(f"{checkout}: not a git work tree (no .git), so no commit or tag can be checked; "
                              f"pin the tree by its digest instead: `digest: \"{found}\"`")
    if digest != found:
        raise CheckoutProblem(f"{checkout}: the tree's digest is {found}, the manifest pins {digest}: the files "
                              "changed since it was pinned (pin the new digest if that is the tree to measure)")
    return found


def root_of(path: Path) -> Optional[Path]:
    """The nearest folder at or above ``path``'s folder that holds ``.git`` or, a plain tree,
    `SHAPE_FILE`."""
    for folder in Path(path).parents:
        if (folder / ".git").exists() or (folder / SHAPE_FILE).is_file():
            return folder
    return None


def is_checkout_target(target: str) -> bool:
    return Path(target.partition("::")[0]).is_absolute()


def harness_paths(targets: Iterable[str]) -> set[Path]:
    """Every checkout path the absolute ``targets`` make a cell read, existing or not (a file
    that appears there after prepare is a change), each checkout's shape file, and a
    campaign's own shape file (``Targets.shape_file``, absolute, wherever it lies)."""
    by_root: dict[Path, list[str]] = {}
    found: set[Path] = set()
    for target in targets:
        if not is_checkout_target(target):
            continue
        path = Path(target.partition("::")[0])
        if path.suffix in SHAPE_SUFFIXES:     # a campaign's own shape file: read as it is, wherever it lies
            found.add(path)
            continue
        root = root_of(path)
        if root is None:
            continue
        relative = path.relative_to(root).as_posix()
        by_root.setdefault(root, []).append(relative + target[len(str(path)):])
    for root, relative_targets in sorted(by_root.items()):
        found |= targetfiles.candidates(root, relative_targets)
        found.add(root / SHAPE_FILE)
    return found
