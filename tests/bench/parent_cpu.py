"""The runner's own CPU while its IR-pass lanes compile: what the parent takes from the cores its lanes share.

Starts ``campaign screen MANIFEST`` (this checkout's, with the caller's environment), waits ``--settle``
seconds (prepare, the freeze, the first claims), reads the runner's and its whole process tree's CPU
seconds from /proc over ``--window`` seconds, stops the screen with SIGINT and prints one markdown row.
Linux only (/proc). The figures of `parent_cpu.md` came from it::

    PYTHONPATH=.venv/flaggems python tests/bench/parent_cpu.py MANIFEST --runs-dir /tmp/pcpu --label "..."
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """utime + stime of one process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def tree(pid: int) -> list[int]:
    """The process and its descendants, as /proc shows them now."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def tree_cpu_s(pid: int) -> dict[int, float]:
    seconds = {}
    for member in tree(pid):
        try:
            seconds[member] = cpu_s(member)
        except OSError:
            continue
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest")
    parser.add_argument("--runs-dir", required=True)
    parser.add_argument("--settle", type=float, default=60.0)
    parser.add_argument("--window", type=float, default=90.0)
    parser.add_argument("--label", default="")
    args = parser.parse_args(argv)
    screen = subprocess.Popen([sys.executable, "-m", "campaign", "screen", args.manifest, "--runs-dir", args.runs_dir],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(args.settle)
        before, parent_before = tree_cpu_s(screen.pid), cpu_s(screen.pid)
        time.sleep(args.window)
        after, parent_after = tree_cpu_s(screen.pid), cpu_s(screen.pid)
    finally:
        os.killpg(screen.pid, signal.SIGINT)
        screen.wait(timeout=120)
    workers = sum(after[p] - before.get(p, 0.0) for p in after if p != screen.pid)
    parent = parent_after - parent_before
    print("| label | window s | runner CPU s | runner % of a core | its workers' CPU s | cores |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    print(f"| {args.label} | {args.window:.0f} | {parent:.1f} | {100 * parent / args.window:.1f} | {workers:.1f} "
          f"| {len(os.sched_getaffinity(0))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
