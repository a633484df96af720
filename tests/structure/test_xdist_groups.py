"""The CI command's `--dist loadgroup` (README, `.ci/run`) builds a module-scoped fixture once: every
test that uses one is in its module's xdist group (`tests/conftest.py`), and no other test is.

Checked on the suite's own collection, in a pytest subprocess with a plugin that reads each item's
group after the conftest's hook: the shard set's tests (module fixture `sealed_set`) are one group,
its tests without the fixture none.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT_ROOT

READER = '''
import json, os, pytest
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    groups = {item.nodeid: [m.args[0] for m in item.iter_markers("xdist_group")] for item in items}
    with open(os.environ["GROUPS_OUT"], "w") as out:
        json.dump(groups, out)
'''


def test_the_tests_of_a_module_fixture_share_one_group_and_no_other_test_has_one(tmp_path: Path):
    (tmp_path / "groupreader.py").write_text(READER, encoding="utf-8")
    out = tmp_path / "groups.json"
    env = {"PYTHONPATH": str(tmp_path), "GROUPS_OUT": str(out), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "groupreader",
                           "-p", "no:cacheprovider", "tests/flows/test_shards.py"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    groups = json.loads(out.read_text(encoding="utf-8"))
    uses = {name for name, marks in groups.items() if marks}
    assert uses and all(marks == ["test_shards"] for marks in groups.values() if marks)
    # every test whose signature names the module fixture, and no other
    source = (PROJECT_ROOT / "tests/flows/test_shards.py").read_text(encoding="utf-8")
    named = {line.split("(")[0][len("def "):] for line in source.splitlines()
             if line.startswith("def test_") and "sealed_set" in line}
    assert {nodeid.split("::")[1] for nodeid in uses} == named
    assert len(groups) > len(uses)                      # the module holds tests without it, ungrouped
