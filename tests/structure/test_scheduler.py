"""One scheduler (issue #38): a single loop owns claim -> skip -> launch -> record for every cell
(`campaign.running.scheduler.settle`); the executors are placements it launches cells on."""
from __future__ import annotations

import ast

from conftest import PROJECT_ROOT


def test_one_loop_asks_the_rounds_policy():
    """Claim -> skip -> launch -> record is one loop (`campaign.running.scheduler.settle`); the executors
    are placements it launches cells on, so none asks ``<runner>.rounds.skip`` of its own."""
    found = []
    for folder in ("campaign", "worker", "reaccount"):
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Attribute) and node.attr == "skip" and isinstance(node.value, ast.Attribute)
                        and node.value.attr == "rounds"):
                    found.append(path.relative_to(PROJECT_ROOT).as_posix())
    assert found == ["campaign/running/scheduler.py"]
