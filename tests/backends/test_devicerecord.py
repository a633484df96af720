"""The device record the offline shim answers from: the card's own dump, one per target, never typed."""
from __future__ import annotations

import json

import pytest

from campaign.backends import devicerecord


def test_the_h200_record_is_the_cards_dump_with_every_field_flaggems_reads():
    record = devicerecord.load("cuda:90")
    props = record["properties"]
    # FlagGems' hopper tuner prunes mm configs by the opt-in shared memory: without it, 216 configs, not 162
    assert props["shared_memory_per_block_optin"] == 232448
    assert (props["name"], props["major"], props["minor"], props["multi_processor_count"]) == ("NVIDIA H200", 9, 0, 132)
    assert props["L2_cache_size"] == 60 * 2**20
    assert record["capability"] == [9, 0]
    assert record["source"]["torch"].endswith("+cu130"), "dumped by a CUDA torch on the card, not written by hand"


def test_a_target_without_a_record_is_refused_naming_how_to_dump_one():
    with pytest.raises(FileNotFoundError, match=r"no device record for cuda:80 .*devicerecord --write.*known: cuda:90"):
        devicerecord.load("cuda:80")


def test_a_record_of_another_target_under_a_targets_name_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / devicerecord.FOLDER
    folder.mkdir()
    (folder / "cuda-90.json").write_text(json.dumps({"target": "cuda:80", "properties": {}}))
    monkeypatch.setattr(devicerecord.resources, "files", lambda package: tmp_path)
    with pytest.raises(ValueError, match="its record is of 'cuda:80', not cuda:90"):
        devicerecord.load("cuda:90")


def test_the_digest_a_run_identity_records_follows_the_record():
    record = devicerecord.load("cuda:90")
    changed = {**record, "properties": {**record["properties"], "multi_processor_count": 108}}
    assert devicerecord.digest(record) == devicerecord.digest(json.loads(json.dumps(record)))
    assert devicerecord.digest(record) != devicerecord.digest(changed)
