"""One scheduler (issue #38): a single loop owns claim -> skip -> launch -> record for every cell
(`campaign.running.scheduler.settle`); the executors are placements it launches cells on."""
from __future__ import annotations

import ast

import ratchet
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


# Where `campaign.contract.status.settled` is asked, per module: the scheduler's loop and what it
# leaves unsettled (`scheduler.unsettled`, `scheduler.mark`); the runner's start, canary check and
# record; the Ray head's start, its claim of a node's folders and its record; the cards' start; the
# seal's check. The count may only fall: a second loop that settles cells of its own
# (the side queues', the cards' card_failed rows, the Ray head's lost rows had one each) fails here.
SETTLED_CALLS = {
    "campaign/flows/cardrun.py": 1,
    "campaign/running/rayexec.py": 3,
    "campaign/running/runner.py": 3,
    "campaign/running/scheduler.py": 3,
    "campaign/sealing/verification.py": 1,
}


def _settled_calls() -> dict[str, int]:
    found: dict[str, int] = {}
    for folder in ("campaign", "worker", "reaccount"):
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            calls = sum(1 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                        if isinstance(node, ast.Call) and ast.unparse(node.func) == "status.settled")
            if calls:
                found[path.relative_to(PROJECT_ROOT).as_posix()] = calls
    return found


def test_what_is_settled_is_asked_in_few_places_and_only_fewer():
    found = _settled_calls()
    grown, fallen = ratchet.moved(found, SETTLED_CALLS)
    assert not grown, f"status.settled( asked in more places (settle through campaign.running.scheduler): {grown}"
    assert not fallen, f"fewer status.settled( calls than SETTLED_CALLS says: lower these entries {fallen}"


def test_a_mark_records_only_what_is_unsettled_in_matrix_order(tmp_path):
    """`scheduler.mark` (a card that failed, a Ray task lost): one row each for the unsettled tasks only,
    in matrix order, whatever order they were handed in; a card_failed row settles nothing."""
    from runroots import demo, manifest

    from campaign.contract import status
    from campaign.flows import freeze
    from campaign.planning.matrix import expand
    from campaign.running import scheduler

    checked = freeze.check(manifest(tmp_path, [demo("add"), demo("softmax")]))
    tasks = sorted(expand(checked.manifest, checked.resolved).tasks, key=lambda t: t.order)

    def row(task, rc_name: str) -> status.StatusRow:
        return status.StatusRow(task_id=task.id, round=task.round, workload=task.workload, cell=task.cell,
                                rc=None, rc_name=rc_name)

    rows = [row(tasks[0], status.SKIPPED), row(tasks[1], status.CARD_FAILED)]

    class Appends:
        def record(self, task, new: status.StatusRow, into: list) -> None:
            into.append(new)

    scheduler.mark(Appends(), tuple(reversed(tasks)), rows, lambda task: row(task, status.CARD_FAILED))
    assert [r.task_id for r in rows[2:]] == [t.id for t in tasks[1:]]
