"""outcomes.json from a real pytest session: one outcome per node, the worst phase wins,
a file that does not import is an error row, never zero rows."""
from __future__ import annotations

import textwrap

import pytest

from campaign.contract.canonical import read_json
from campaign.contract.cellfiles import Outcomes
from campaign.plugins.outcomes import OutcomesPlugin, write_not_run

pytest_plugins = ("pytester",)

CORRECTNESS = textwrap.dedent("""\
    import pytest

    @pytest.fixture
    def broken():
        raise RuntimeError("fixture broke")

    @pytest.fixture
    def bad_teardown():
        yield
        raise RuntimeError("teardown broke")

    def test_pass():
        assert 1 + 1 == 2

    @pytest.mark.parametrize("n", [1, 2])
    def test_param(n):
        assert n == 1, "two is not one"

    def test_setup_error(broken):
        pass

    def test_teardown_error(bad_teardown):
        pass

    @pytest.mark.skip(reason="no device")
    def test_skipped():
        pass

    @pytest.mark.xfail(reason="known wrong")
    def test_xfail():
        assert False
""")


def _session(pytester, tmp_path, **files) -> Outcomes:
    cell_dir = tmp_path / "cell"
    cell_dir.mkdir()
    pytester.makepyfile(**files)
    pytester.runpytest_inprocess("-p", "no:cacheprovider", plugins=[OutcomesPlugin(cell_dir)])
    return Outcomes.model_validate(read_json(cell_dir / "outcomes.json"))


def test_one_outcome_per_node_worst_phase_wins(pytester, tmp_path):
    outcomes = _session(pytester, tmp_path, test_correct=CORRECTNESS)
    assert outcomes.state == "run"
    got = {o.node: (o.outcome, o.detail) for o in outcomes.outcomes}
    assert got == {
        "test_correct.py::test_pass": ("passed", None),
        "test_correct.py::test_param[1]": ("passed", None),
        "test_correct.py::test_param[2]": ("failed", "AssertionError: two is not one (test_correct.py:17)"),
        "test_correct.py::test_setup_error": ("error", "RuntimeError: fixture broke (test_correct.py:5)"),
        "test_correct.py::test_teardown_error": ("error", "RuntimeError: teardown broke (test_correct.py:10)"),
        "test_correct.py::test_skipped": ("skipped", "Skipped: no device"),
        "test_correct.py::test_xfail": ("skipped", "xfail: known wrong"),
    }


def test_a_file_that_does_not_import_is_an_error_row(pytester, tmp_path):
    outcomes = _session(pytester, tmp_path, test_broken="import no_such_module_anywhere\n\ndef test_x():\n    pass\n")
    assert [(o.node, o.outcome) for o in outcomes.outcomes] == [("test_broken.py", "error")]
    assert outcomes.outcomes[0].detail == "ModuleNotFoundError: No module named 'no_such_module_anywhere'"


def test_outcomes_are_written_once(pytester, tmp_path):
    cell_dir = tmp_path / "cell"
    cell_dir.mkdir()
    write_not_run(cell_dir, "compile-only backend: launches are not executed")
    with pytest.raises(FileExistsError):
        write_not_run(cell_dir, "again")
    data = Outcomes.model_validate(read_json(cell_dir / "outcomes.json"))
    assert (data.state, data.reason, data.outcomes) == ("not_run", "compile-only backend: launches are not executed", ())
