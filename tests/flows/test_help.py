"""Every command's --help fits one screen (40 lines of 80 columns) and ends with an example
that names the command itself; the CLI run as a subprocess."""
from __future__ import annotations

import os

import pytest
from conftest import run_cli

from campaign.cli import COMMANDS

SCREEN_LINES, SCREEN_COLUMNS = 40, 80


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_fits_one_screen_and_shows_an_example(command: str):
    done = run_cli(command, "--help", env={**os.environ, "COLUMNS": str(SCREEN_COLUMNS)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.rstrip("\n").splitlines()
    assert len(lines) <= SCREEN_LINES, f"campaign {command} --help is {len(lines)} lines"
    assert all(len(line) <= SCREEN_COLUMNS for line in lines), [line for line in lines if len(line) > SCREEN_COLUMNS]
    example = lines[next(n for n, line in enumerate(lines) if line.startswith("example"))]
    shown = lines[lines.index(example) + 1:]
    assert shown and all(line.startswith(f"  campaign {command}") for line in shown), shown
