"""An offline screen's emitted manifest is the card's campaign: its changed workloads are timed on the card
the screen compiled for, never on the compile-only backend that can time nothing."""
from __future__ import annotations

from taskplan import manifest_data

from campaign.contract.manifest import Manifest
from campaign.judging.screenroot import _to_the_card


def test_an_offline_screens_changed_workloads_run_on_the_card_it_compiled_for():
    data = manifest_data(device={"backend": "cpu", "name": "NVIDIA H200", "target": "cuda:90"})
    line = _to_the_card(data)
    assert data["device"] == {"backend": "cuda", "name": "NVIDIA H200", "target": "cuda:90"}
    assert data["timer"] == {"kind": "graph"}
    assert "timed here on the cuda card it compiled for (NVIDIA H200)" in line
    Manifest.model_validate(data)      # what is emitted validates as a card's manifest


def test_a_cards_own_screen_emits_its_device_and_timer_unchanged():
    data = manifest_data(device={"backend": "cuda", "name": "NVIDIA H200", "target": "cuda:90"},
                         timer={"kind": "event"})
    before = {**data}
    assert _to_the_card(data) == "" and data == before


def test_an_offline_screen_of_an_unnamed_card_keeps_its_device_and_says_how_to_name_one():
    data = manifest_data(device={"backend": "cpu", "target": "cuda:90"})
    line = _to_the_card(data)
    assert data["device"] == {"backend": "cpu", "target": "cuda:90"} and "give device.name" in line
    Manifest.model_validate(data)
