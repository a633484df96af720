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


def test_the_offline_hosts_lanes_stay_behind_and_the_card_host_chooses_its_own():
    # a 2-core screen's two lanes (or a 16-core host's sixteen) say nothing of how many processes one card takes
    data = manifest_data(device={"backend": "cpu", "name": "NVIDIA H200", "target": "cuda:90"})
    data["defaults"] = {**(data.get("defaults") or {}), "ir_pass_lanes": 16}
    line = _to_the_card(data)
    assert "ir_pass_lanes" not in data["defaults"] and "the offline pass's 16 IR-pass lanes left to the card's host" in line
    Manifest.model_validate(data)


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


def _emitted(tmp_path, device: dict) -> Manifest:
    from campaign.contract import yamlio, yamlwrite
    from campaign.contract.artifacts import MANIFEST_FILE
    from campaign.judging.screenroot import emitted_manifest

    data = manifest_data(device=device)
    (tmp_path / MANIFEST_FILE).write_text(yamlwrite.dump(data), encoding="utf-8")
    rows = [{"workload": w["name"], "verdict": "IR_CHANGED", "weight_s": "3.5"} for w in data["workloads"]]
    text = emitted_manifest(tmp_path, rows, {"root": "/runs/screen-root", "receipt_sha256": "0" * 64})
    path = tmp_path / "emitted.yaml"
    path.write_text(text, encoding="utf-8")
    return yamlio.validate(Manifest, path)


def test_an_offline_screen_moved_to_the_card_pins_no_configs_it_never_timed(tmp_path):
    # offline, each autotuned kernel compiled its first config untimed: replaying that on the card would
    # time FlagGems' first config, not its winner; the card tunes for itself
    emitted = _emitted(tmp_path, {"backend": "cpu", "name": "NVIDIA H200", "target": "cuda:90"})
    assert emitted.device.backend == "cuda" and emitted.defaults.autotune_from is None


def test_a_cards_own_screen_replays_the_configs_its_round_1_timed(tmp_path):
    emitted = _emitted(tmp_path, {"backend": "cuda", "name": "NVIDIA H200", "target": "cuda:90"})
    assert emitted.device.backend == "cuda" and emitted.defaults.autotune_from.root == "/runs/screen-root"


def test_an_offline_screen_that_stays_on_cpu_pins_nothing_either(tmp_path):
    # cpu times nothing and an offline screen runs no round 1 (campaign.running.rounds: IR_PASS_DECIDES):
    # there is no winner to replay, wherever the emitted campaign runs
    emitted = _emitted(tmp_path, {"backend": "cpu", "target": "cuda:90"})
    assert emitted.device.backend == "cpu" and emitted.defaults.autotune_from is None


def test_a_screened_manifests_own_weight_goes_only_where_the_screen_gives_none(tmp_path):
    """A suite screen manifest may carry ``weight_s`` (its IR pass's seconds, `campaign inventory
    --weights-from`: the queues hand heavier workloads out first). Those seconds predict no card round, so
    an emitted workload carries the screen's timed round's seconds where the table has them, and no weight
    where it has none (an offline screen's table never has): never the IR pass's seconds as a round's."""
    from campaign.contract import yamlio, yamlwrite
    from campaign.contract.artifacts import MANIFEST_FILE
    from campaign.judging.screenroot import emitted_manifest

    data = manifest_data(device={"backend": "cpu", "name": "NVIDIA H200", "target": "cuda:90"})
    data["workloads"] = [{**w, "name": f"{w['name']}{suffix}", "weight_s": 900.0}
                         for w in data["workloads"] for suffix in ("", "_b")]
    names = [w["name"] for w in data["workloads"]]
    (tmp_path / MANIFEST_FILE).write_text(yamlwrite.dump(data), encoding="utf-8")
    rows = [{"workload": name, "verdict": "IR_CHANGED", "weight_s": "3.5" if n == 0 else ""} for n, name in enumerate(names)]
    path = tmp_path / "emitted.yaml"
    path.write_text(emitted_manifest(tmp_path, rows), encoding="utf-8")
    weights = [w.weight_s for w in yamlio.validate(Manifest, path).workloads]
    assert len(names) == 2 and weights == [3.5, None]
