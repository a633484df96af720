"""Per-round A/A of run roots: the control against the baseline (the same build twice), per workload and
shape, in time and in cycles (each row's latency times its window's median SM clock), and the floor the
tool takes from them (`campaign.judging.direction.aa_floor`: the largest |A/A| up to 4 rounds, the 80th
percentile beyond).

    .venv/bin/python tests/bench/aa_rounds.py ROOT_OR_TARBALL...

A root may be a folder or a packed root (``root.tar.gz``). Rows are read through the judging road
(`campaign.judging.evidence.load_root`): measured rows of status ok, keyed by shape and dtype.
"""
import pathlib
import sys
import tarfile
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from campaign.judging import direction  # noqa: E402
from campaign.judging.evidence import load_root  # noqa: E402


def rows_by_key(task) -> dict:
    out = {}
    for row in task.rows or ():
        if row.role == "measured" and row.status == "ok" and row.latency_ms:
            out[(tuple(row.shape or ()), row.dtype)] = row
    return out


def cycles(row) -> float | None:
    mhz = row.clock.sm_mhz_median if row.clock is not None else None
    return row.latency_ms * mhz if mhz else None


def pct(a: float, b: float) -> float:
    return 100 * (a / b - 1)


def floor_pct(deltas: list[float]) -> float:
    """The floor of per-round deltas in %, as the direction rule takes it (`direction.aa_floor`)."""
    return 100 * direction.aa_floor([d / 100 for d in deltas], 0, True)


def table(root: pathlib.Path) -> list[str]:
    evidence = load_root(root)
    cells = {}
    for task in evidence.tasks.values():
        if task.task.timed and task.task.cell in ("baseline", "control"):
            cells[(task.task.workload, task.task.round, task.task.cell)] = task
    out = [f"## {root.name}", "", "| workload | shape | dtype | rounds: A/A time % (cycles %) | floor time | floor cycles |",
           "| --- | --- | --- | --- | ---: | ---: |"]
    keys = sorted({(w, r) for (w, r, _) in cells})
    per_shape: dict = {}
    for workload, rnd in keys:
        base, ctrl = cells.get((workload, rnd, "baseline")), cells.get((workload, rnd, "control"))
        if base is None or ctrl is None:
            continue
        b, c = rows_by_key(base), rows_by_key(ctrl)
        for key in sorted(set(b) & set(c)):
            t = pct(c[key].latency_ms, b[key].latency_ms)
            cb, cc = cycles(b[key]), cycles(c[key])
            per_shape.setdefault((workload, key), []).append((t, pct(cc, cb) if cb and cc else None))
    for (workload, (shape, dtype)), deltas in sorted(per_shape.items()):
        cells_text = ", ".join(f"{t:+.2f} ({y:+.2f})" if y is not None else f"{t:+.2f} (-)" for t, y in deltas)
        ys = [y for _, y in deltas if y is not None]
        out.append(f"| {workload} | {'x'.join(map(str, shape))} | {dtype} | {cells_text} | "
                   f"{floor_pct([t for t, _ in deltas]):.2f} % | {floor_pct(ys) if ys else float('nan'):.2f} % |")
    return out + [""]


def main(paths: list[str]) -> None:
    for given in paths:
        path = pathlib.Path(given)
        if path.is_dir():
            print("\n".join(table(path)))
            continue
        with tempfile.TemporaryDirectory() as folder:
            with tarfile.open(path) as packed:
                packed.extractall(folder, filter="data")
            print("\n".join(table(next(pathlib.Path(folder).iterdir()))))


if __name__ == "__main__":
    main(sys.argv[1:])
