"""What the offline shim answers in place of the card's torch: the pieces that hold without flag_gems."""
from __future__ import annotations

import torch

from campaign.plugins import offline_reads, offline_torch


def test_the_philox_state_reads_as_the_cards_and_advances_in_host_arithmetic():
    state = offline_torch.PhiloxState()
    seed, offset = state.get_state().view(torch.int64).tolist()       # FlagGems' own read of the 16 bytes
    assert (seed, offset) == (offline_torch.PHILOX_DEFAULT_SEED, 0)
    # philox_backend_seed_offset: the values now, then the offset moved by the increment rounded up to 4
    assert state.advance(1000) == (seed, 0)
    assert state.advance(10) == (seed, 1000)
    assert state.advance(1) == (seed, 1012)
    assert state.get_state().view(torch.int64).tolist() == [seed, 1016]
    state.set_state(torch.tensor([7, 64], dtype=torch.int64).view(torch.uint8))
    assert state.advance(3) == (7, 64) and state.initial_seed() == 7


def test_dropout_takes_the_fused_kernel_under_the_cards_own_condition(monkeypatch):
    called = []
    monkeypatch.setattr(torch, "native_dropout", lambda x, p, train: (called.append((p, train)) or (x * 0, None)))
    original = torch.dropout
    monkeypatch.setattr(torch, "dropout", original)
    monkeypatch.setattr(torch._VF, "dropout", torch._VF.dropout, raising=False)
    offline_torch.fused_dropout(torch)
    x = torch.ones(8)
    torch.nn.functional.dropout(x, 0.5, True)
    assert called == [(0.5, True)], "training with 0 < p < 1: aten takes native_dropout on the card"
    torch.nn.functional.dropout(x, 0.5, False)
    torch.nn.functional.dropout(x, 0.0, True)
    assert called == [(0.5, True)], "eval, or p = 0: the composite path, as on the card"


def test_a_float_fill_by_shape_or_by_size_is_left_unfilled_and_one_with_a_generator_is_drawn():
    drawn = []

    def randn(*args, **kwargs):
        drawn.append(kwargs)
        return torch.randn(*args, **kwargs)

    unfilled = offline_torch._unfilled(randn, torch.empty)
    # the three ways FlagGems' benchmarks draw a float input: no value is drawn, the tensor is as asked
    for built in (unfilled(4, 8, dtype=torch.float16), unfilled((4, 8), dtype=torch.float16, device="cpu"),
                  unfilled(size=(4, 8), dtype=torch.float16, device="cpu")):
        assert built.shape == (4, 8) and built.dtype == torch.float16
    assert drawn == []
    # a generator= or out= call asks for those values: drawn as asked
    made = unfilled(size=(4, 8), generator=torch.Generator().manual_seed(3))
    assert len(drawn) == 1 and torch.equal(made, torch.randn(size=(4, 8), generator=torch.Generator().manual_seed(3)))


def test_a_fill_flaggems_takes_goes_on_to_its_op():
    drawn = []

    def rand(*args, **kwargs):
        drawn.append(args)
        return torch.rand(*args, **kwargs)

    taken = [False]
    unfilled = offline_torch._unfilled(rand, torch.empty, lambda: taken[0])
    unfilled(4, 8)
    assert drawn == [], "no op of FlagGems' takes the call: an unfilled tensor"
    taken[0] = True
    unfilled(4, 8)
    assert drawn == [(4, 8)], "FlagGems' rand takes it (inside use_gems): the call goes on, its kernel compiles"


def test_every_scalar_read_of_a_marked_tensor_is_counted_once_at_its_call_site_and_reads_the_value():
    class Shim:
        marked: set = set()
        host_reads: dict = {}

    shim = Shim()
    shim.host_reads = __import__("collections").Counter()
    library = offline_reads.scalar_reads_counted(torch, shim)
    try:
        sums = torch.tensor([3, 5], dtype=torch.int64)
        shim.marked = {offline_reads.storage_ptr(sums)}
        size = sums[-1]
        assert torch.empty(size).shape == (5,)              # a kernel result read as a size (masked_select's way)
        assert size.item() == 5 and int(size) == 5 and bool(size) and float(size) == 5.0
        assert torch.arange(10)[:size].shape == (5,)        # a slice bound
        here = [site for site in shim.host_reads]
        assert len(here) == 3 and all(s.startswith("test_every_scalar_read") for s in here), here   # three lines
        assert sorted(shim.host_reads.values()) == [1, 1, 4], "item, int, bool, float: one count each, not two"
        shim.host_reads.clear()
        assert torch.tensor(7).item() == 7 and not shim.host_reads, "an unmarked tensor is not counted"
        # the values aten's own read gives, for the dtypes numpy does not hold too
        assert torch.tensor(2.5, dtype=torch.bfloat16).item() == 2.5
        assert torch.tensor(1 + 2j, dtype=torch.complex64).item() == 1 + 2j
        assert torch.tensor(True).item() is True and torch.tensor(-3, dtype=torch.int8).item() == -3
        assert torch.tensor([4.0], requires_grad=True).sum().item() == 4.0
    finally:
        library._destroy()


def test_a_bare_device_index_is_the_card_and_is_built_on_the_host():
    # FlagGems' randn_like passes ``x.device.index``: torch reads device=0 as the accelerator's
    assert offline_torch._is_cuda(0) and offline_torch._host(0) == torch.device("cpu")
    assert not offline_torch._is_cuda(True) and not offline_torch._is_cuda("cpu")
    assert offline_torch._on_host(torch.empty_like)(torch.ones(3), device=0).device == torch.device("cpu")
