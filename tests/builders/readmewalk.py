"""The README's walkthrough ("From a tutorial file to a sealed A/B") as blocks a test runs.

A fenced block whose info string holds ``file=PATH`` is a file to write at PATH; a ``bash run``
block is a command block, run in order. `tests/flows/test_readme_walkthrough.py` runs them on the
compile-only backend, `tests/gpu/test_readme_walkthrough_gpu.py` with the README's GPU lines.
"""
from __future__ import annotations

import re

from conftest import PROJECT_ROOT

SECTION = "### From a tutorial file to a sealed A/B"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def walkthrough() -> tuple[dict[str, str], list[str]]:
    """(path -> text of each file block, the text of each run block), in the README's order."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index(SECTION)
    end = readme.find("\n## ", start)
    files, runs = {}, []
    for info, body in FENCE.findall(readme[start:end if end != -1 else len(readme)]):
        named = re.search(r"\bfile=(\S+)", info)
        if named:
            files[named.group(1)] = body
        elif info.split() == ["bash", "run"]:
            runs.append(body)
    return files, runs
