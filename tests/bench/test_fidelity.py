"""The fidelity pair's compare: a differing entry of an item the screen itself sent to the card names that
reason, and the share over the screen's offline answers is given beside the share over every entry."""
from bench import fidelity


def line(item, cell, kernel, digest, signature="*fp16", outcome="ok", stage="ttgir"):
    return {"workload": item, "cell": cell, "stage": stage, "kernel": kernel, "signature": signature,
            "digest": digest, "outcome": outcome}


def sides():
    gpu = [line("add", c, "add_kernel", "d1") for c in ("baseline", "candidate")]
    gpu += [line("index_add", c, "index_add_kernel", "g2") for c in ("baseline", "candidate")]
    cpu = [line("add", c, "add_kernel", "d1") for c in ("baseline", "candidate")]
    cpu += [line("index_add", c, "index_add_kernel", "c2", outcome="tests_failed") for c in ("baseline", "candidate")]
    return gpu, cpu


def test_a_needs_card_item_s_differences_name_the_screen_s_reason_and_the_offline_share_leaves_it_out():
    gpu, cpu = sides()
    screen = {"add": ("NO_IR_DIFF", ""), "index_add": ("NEEDS_CARD", "host read equal (flag_gems/ops/eq.py:47) x3")}
    entries = fidelity.compare(gpu, cpu, screen)
    differ = [e for e in entries if not e["equal"]]
    assert [e["item"] for e in differ] == ["index_add", "index_add"]
    assert all(e["cause"] == "outcome differs (cpu tests_failed, gpu ok); NEEDS_CARD offline: host read equal "
               "(flag_gems/ops/eq.py:47) x3" for e in differ)
    assert {e["item"]: e["screen"] for e in entries} == {"add": "NO_IR_DIFF", "index_add": "NEEDS_CARD"}
    text = fidelity.summary(entries)
    assert "4 (item, cell, kernel, stage) entries, 2 of 4 (50.0 %) equal" in text
    assert ("over the items the screen answers offline (1; 1 NEEDS_CARD: index_add): 2 of 2 (100.0 %) equal"
            in text)


def test_without_the_screen_table_no_entry_is_set_apart():
    gpu, cpu = sides()
    entries = fidelity.compare(gpu, cpu)
    assert all("screen" not in e for e in entries)
    assert [e["cause"] for e in entries if not e["equal"]] == ["outcome differs (cpu tests_failed, gpu ok)"] * 2
    assert "answers offline" not in fidelity.summary(entries)


def test_an_offline_item_that_differs_keeps_its_plain_cause_and_counts_against_the_offline_share():
    gpu, cpu = sides()
    cpu[0] = line("add", "baseline", "add_kernel", "d9")
    entries = fidelity.compare(gpu, cpu, {"add": ("NO_IR_DIFF", ""), "index_add": ("NEEDS_CARD", "x")})
    add = [e for e in entries if e["item"] == "add" and not e["equal"]]
    assert [e["cause"] for e in add] == ["content differs"]
    assert "answers offline (1; 1 NEEDS_CARD: index_add): 1 of 2 (50.0 %) equal" in fidelity.summary(entries)


def test_an_item_with_a_cell_only_one_side_has_prints_of_is_named_not_dropped():
    # the card's sub candidate ran out of device memory before it compiled anything: no prints on that side
    gpu, cpu = sides()
    gpu.append(line("sub", "baseline", "sub_kernel", "s1"))
    cpu += [line("sub", c, "sub_kernel", "s1") for c in ("baseline", "candidate")]
    cpu.append(line("mul", "baseline", "mul_kernel", "m1"))
    entries = fidelity.compare(gpu, cpu)
    assert {e["item"] for e in entries} == {"add", "index_add"}
    left_out = fidelity.uncompared(gpu, cpu)
    assert left_out == ["mul (gpu has no baseline)", "sub (gpu has no candidate)"]
    assert ("not compared: 2 item(s) with a cell whose prints only one side has: mul (gpu has no baseline); "
            "sub (gpu has no candidate)") in fidelity.summary(entries, left_out)
    assert fidelity.uncompared(*sides()) == [] and "not compared" not in fidelity.summary(entries, [])
