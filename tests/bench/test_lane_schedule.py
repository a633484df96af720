"""The lane replay: a root's IR-pass cells, read from its batches' progress lines as the worker writes
them, replayed over its own lanes give its own span, over more lanes the longest cell bounds it, and the
slowdown found from a partial run reproduces that run's count."""
import json

from bench import lane_schedule

from campaign.contract.progresslines import event_line

T0 = 1_800_000_000.0


def write_root(tmp_path, sides):
    """One process per side (the root's one lane a side), each cell starting when the one before ended;
    ``sides``: {side: [(workload, seconds), ...]} in claim order."""
    root = tmp_path / "root"
    (root / "batches").mkdir(parents=True)
    (root / "matrix.json").write_text(json.dumps({"ir_pass_lanes": len(sides)}), encoding="utf-8")
    for n, (side, cells) in enumerate(sides.items(), 1):
        batch = root / "batches" / f"{n:04d}"
        batch.mkdir()
        (batch / "batch.json").write_text(json.dumps({"bound": 8}), encoding="utf-8")
        t, lines = T0, []
        for workload, seconds in cells:
            lines.append(event_line("start", f"{workload}/r0/{side}", t, t - T0))
            lines.append(event_line("end", f"{workload}/r0/{side}", t + seconds, t + seconds - T0, 0))
            t += seconds
        lines.append(event_line("start", f"late/r1/{side}", t, t - T0))        # round 1: not the IR pass
        (batch / "progress.tsv").write_text("".join(lines), encoding="utf-8")
    return root


def test_the_root_s_own_lanes_give_its_span_and_more_lanes_are_bounded_by_the_longest_cell(tmp_path):
    root = write_root(tmp_path, {"baseline": [("a", 10), ("b", 40), ("c", 10), ("d", 20)],
                                 "candidate": [("a", 12), ("b", 30), ("c", 10), ("d", 10)]})
    cells, bound, gaps = lane_schedule.ir_pass_cells(root)
    assert len(cells) == 8 and bound == 8 and {c.task_id.split("/")[1] for c in cells} == {"r0"}
    assert lane_schedule.replay(cells, 2, bound, 0.0) == (80.0, 0)          # 10+40+10+20, the side's own sum
    assert lane_schedule.replay(cells, 2, bound, 0.0, at=25.0)[1] == 2       # a@10 and a@12 ended by 25 s
    assert lane_schedule.replay(cells, 8, bound, 0.0)[0] == 40.0            # four lanes a side: b's 40 s
    span, ended = lane_schedule.replay(cells, 4, bound, 0.0, at=1000.0)
    assert span == 40.0 and ended == 8             # baseline: a, c, d claimed by one lane (40 s) beside b's 40 s


def test_a_process_bound_adds_a_start_and_the_slowdown_reproduces_a_partial_run(tmp_path):
    root = write_root(tmp_path, {"baseline": [(f"w{i}", 10) for i in range(10)],
                                 "candidate": [(f"w{i}", 10) for i in range(10)]})
    cells, bound, _ = lane_schedule.ir_pass_cells(root)
    assert lane_schedule.replay(cells, 2, bound, 3.0)[0] == 3.0 + 100.0 + 3.0   # a second process after 8
    # a run elsewhere ended 2 cells a side by 40 s on one lane a side: its cells took 40/3 to 20 s each
    low, high = lane_schedule.slowdown(cells, 2, bound, 0.0, 40.0, 4)
    assert abs(low - 4 / 3) < 1e-6 and abs(high - 2.0) < 1e-6
    assert lane_schedule.replay(cells, 2, bound, 0.0, 40.0, low * 1.001)[1] == 4
    assert lane_schedule.replay(cells, 2, bound, 0.0, 40.0, high)[1] == 4
    assert lane_schedule.replay(cells, 2, bound, 0.0, 40.0, high * 1.001)[1] == 2
