"""Installed packages checked against their RECORD, start-up code digested (`campaign.planning.installedcode`).

A tiny distribution built in tmp_path (``fakepkg``: two modules, a dist-info with a RECORD) and put
on sys.path: prepare records it, and every later change -- a module edited (its mtime put back
too), a module added, a module removed, a module edited with its RECORD line -- fails preflight
naming the file or the RECORD; a ``.pth`` file or a
``sitecustomize`` added after prepare is named too.
"""
from __future__ import annotations

import base64
import hashlib
import os
import sys
from pathlib import Path

import pytest
from taskplan import write_plan

from campaign.backends import get_backend
from campaign.contract.rootrecords import InstalledCode
from campaign.planning import installedcode
from campaign.worker import preflight

MODULES = {"fakepkg/__init__.py": "VALUE = 1\n", "fakepkg/mod.py": "def f():\n    return 1\n"}


def _record_line(site: Path, path: str) -> str:
    data = (site / path).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch) -> Path:
    """The site folder holding ``fakepkg`` 1.0 and its RECORD, first on sys.path."""
    site = tmp_path / "site"
    for path, text in MODULES.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text, encoding="utf-8")
    info = site / "fakepkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakepkg\nVersion: 1.0\n", encoding="utf-8")
    lines = [_record_line(site, path) for path in [*MODULES, "fakepkg-1.0.dist-info/METADATA"]]
    (info / "RECORD").write_text("\n".join([*lines, "fakepkg-1.0.dist-info/RECORD,,"]) + "\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    return site


def _prepared(tmp_path: Path) -> InstalledCode:
    return InstalledCode(distributions={"fakepkg": installedcode.checked_distribution("fakepkg", tmp_path / "verified"),
                                        "absentpkg": None},
                         startup=installedcode.startup())


def test_prepare_records_the_package_and_preflight_passes_it_unchanged(fake: Path, tmp_path: Path):
    recorded = _prepared(tmp_path)
    found = recorded.distributions["fakepkg"]
    assert (found.name, found.version, found.files) == ("fakepkg", "1.0", 3)
    assert found.record_sha256 == hashlib.sha256((fake / "fakepkg-1.0.dist-info" / "RECORD").read_bytes()).hexdigest()
    assert installedcode.check(recorded) == (True, f"fakepkg 1.0 as prepared; {len(recorded.startup)} start-up files as prepared")


@pytest.mark.parametrize("change", ["edited", "edited, its mtime put back", "added", "removed"])
def test_a_changed_module_fails_preflight_naming_the_file(fake: Path, tmp_path: Path, change: str):
    recorded = _prepared(tmp_path)
    module = fake / "fakepkg" / "mod.py"
    stat = module.stat()
    if change.startswith("edited"):
        module.write_text("def f():\n    return 2\n", encoding="utf-8")       # the same size
        if "mtime" in change:
            os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        named = "fakepkg/mod.py: its sha256 differs from RECORD"
    elif change == "added":
        (fake / "fakepkg" / "evil.py").write_text("import os\n", encoding="utf-8")
        named = "fakepkg/evil.py: not in RECORD"
    else:
        module.unlink()
        named = "fakepkg/mod.py: missing"
    ok, detail = installedcode.check(recorded)
    assert not ok and detail == f"fakepkg: {named}"


def test_prepare_refuses_a_drifted_package_and_hashes_a_verified_one_once(fake: Path, tmp_path: Path, monkeypatch):
    (fake / "fakepkg" / "mod.py").write_text("def f():\n    return 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match="fakepkg: fakepkg/mod.py: its sha256 differs from RECORD"):
        installedcode.checked_distribution("fakepkg", tmp_path / "verified")
    (fake / "fakepkg" / "mod.py").write_text(MODULES["fakepkg/mod.py"], encoding="utf-8")
    first = installedcode.checked_distribution("fakepkg", tmp_path / "verified")
    monkeypatch.setattr(installedcode, "drift", lambda *_: pytest.fail("hashed again"))
    assert installedcode.checked_distribution("fakepkg", tmp_path / "verified") == first


def test_a_module_edited_with_its_record_fails_preflight(fake: Path, tmp_path: Path):
    """The files agree with the RECORD again, but it is not the RECORD prepare checked them against."""
    recorded = _prepared(tmp_path)
    (fake / "fakepkg" / "mod.py").write_text("def f():\n    return 2\n", encoding="utf-8")
    record = fake / "fakepkg-1.0.dist-info" / "RECORD"
    lines = record.read_text(encoding="utf-8").splitlines()
    record.write_text("\n".join(_record_line(fake, "fakepkg/mod.py") if line.startswith("fakepkg/mod.py,") else line
                                for line in lines) + "\n", encoding="utf-8")
    assert installedcode.drift(*[installedcode.rows(installedcode.distribution("fakepkg"))[i] for i in (0, 2)]) == []
    assert installedcode.check(recorded) == (False, "fakepkg: its RECORD is not prepare's (1.0, prepared 1.0)")


def test_preflight_refuses_an_edited_package_before_any_other_check(fake: Path, tmp_path: Path):
    plan = write_plan(tmp_path).model_copy(update={"installed": _prepared(tmp_path)})
    (fake / "fakepkg" / "__init__.py").write_text("VALUE = 2\n", encoding="utf-8")
    said: list[str] = []
    result = preflight.run(plan, get_backend("cpu"), {}, said.append)
    assert not result.ok and result.failed_check == "installed" and len(result.checks) == 1
    assert said == ["preflight installed FAILED: fakepkg: fakepkg/__init__.py: its sha256 differs from RECORD"]


def test_a_pth_file_or_a_sitecustomize_added_after_prepare_is_named(fake: Path, tmp_path: Path, monkeypatch):
    recorded = installedcode.startup([str(fake)])
    assert recorded == installedcode.startup([str(fake)])
    (fake / "zz-evil.pth").write_text("import os; os.system('true')\n", encoding="utf-8")
    custom = tmp_path / "custom"
    custom.mkdir()
    (custom / "sitecustomize.py").write_text("import os\n", encoding="utf-8")
    monkeypatch.delitem(sys.modules, "sitecustomize", raising=False)
    monkeypatch.syspath_prepend(str(custom))
    now = installedcode.startup([str(fake)])
    assert installedcode.startup_problems(recorded, now) == [
        f"{path}: not there at prepare" for path in sorted([str(custom / "sitecustomize.py"), str(fake / "zz-evil.pth")])]
    (fake / "zz-evil.pth").write_text("import sys\n", encoding="utf-8")
    assert installedcode.startup_problems(now, installedcode.startup([str(fake)])) == [
        f"{fake / 'zz-evil.pth'}: changed since prepare"]
