"""The decoder's key/value cache: in-place steps, copy on write, reordering."""

import pytest
import torch

from rosetta.families.transformer.fast.packed import pack_for_inference
from rosetta.families.transformer.kv_cache import KeyValueCache
from tests.families.transformer.test_model import random_batch, tiny_model

ROWS, LAYERS, HEADS, D_K = 3, 2, 2, 4


def position(seed: int, rows: int = ROWS) -> torch.Tensor:
    """Keys and values of one new position: (rows, 2, heads, d_k)."""
    return torch.randn(
        rows, 2, HEADS, D_K, generator=torch.Generator().manual_seed(seed)
    )


def grow(cache: KeyValueCache, seeds: list[int]) -> KeyValueCache:
    for seed in seeds:
        cache = cache.extend(1)
        for layer in range(LAYERS):
            cache.store_step(layer, position(seed * 10 + layer, cache.rows))
    return cache


def expected(seeds: list[int], layer: int, part: int) -> torch.Tensor:
    """(rows, heads, length, d_k) as concatenating each position would give."""
    steps = [position(seed * 10 + layer)[:, part].unsqueeze(2) for seed in seeds]
    return torch.cat(steps, dim=2)


def empty(capacity: int = 4) -> KeyValueCache:
    cpu = torch.device("cpu")
    return KeyValueCache.empty(ROWS, LAYERS, HEADS, D_K, torch.float32, cpu, capacity)


def assert_holds(cache: KeyValueCache, seeds: list[int]) -> None:
    assert cache.length == len(seeds)
    for layer in range(LAYERS):
        keys, values = cache[layer]
        assert torch.equal(keys, expected(seeds, layer, 0))
        assert torch.equal(values, expected(seeds, layer, 1))


def test_steps_write_in_place_and_grow_past_the_capacity():
    first = grow(empty(capacity=4), [1, 2])
    second = grow(first, [3, 4])
    assert second.buffer is first.buffer  # no copy while there is room
    assert_holds(second, [1, 2, 3, 4])
    longer = grow(second, [5])  # full: a buffer twice as long
    assert longer.buffer is not second.buffer and longer.capacity == 8
    assert_holds(longer, [1, 2, 3, 4, 5])
    assert_holds(second, [1, 2, 3, 4])  # the shorter cache still reads its own


def test_a_cache_stepped_twice_copies_instead_of_overwriting():
    base = grow(empty(capacity=8), [1, 2])
    left = grow(base, [3])
    right = grow(base, [4])  # position 2 is taken by ``left``: copy first
    assert right.buffer is not left.buffer
    assert_holds(left, [1, 2, 3])
    assert_holds(right, [1, 2, 4])
    assert_holds(grow(left, [5]), [1, 2, 3, 5])


def test_reorder_selects_rows_and_leaves_room_for_the_next_position():
    cache = grow(empty(), [1, 2, 3])
    index = torch.tensor([2, 0, 0, 1])
    reordered = cache.reorder(index)
    assert reordered.rows == 4 and reordered.capacity == 4
    for layer in range(LAYERS):
        for part in (0, 1):
            assert torch.equal(reordered[layer][part], cache[layer][part][index])
    stepped = reordered.extend(1)
    assert stepped.buffer is reordered.buffer  # in place
    assert_holds(cache, [1, 2, 3])  # the original is untouched


def test_from_pairs_holds_the_concatenated_keys_and_values():
    pairs = [
        (expected([1, 2], layer, 0), expected([1, 2], layer, 1)) for layer in (0, 1)
    ]
    assert_holds(KeyValueCache.from_pairs(pairs), [1, 2])


@pytest.mark.reference
def test_both_paths_keep_one_cache_and_branch_correctly():
    """A decoding state stepped with two different tokens (as exhaustive search
    does) gives, packed, what the layers' path gives; both keep their keys and
    values in one ``KeyValueCache``."""
    model = tiny_model()
    src, src_mask, tgt = random_batch()
    results = {}
    for packed, decoding in ((True, pack_for_inference(model)), (False, model)):
        with torch.no_grad():
            state = decoding.init_state(decoding.encode(src, src_mask), src_mask)
            _, state = decoding.step(tgt[:, 0], state)
            _, state = decoding.step(tgt[:, 1], state)
            assert isinstance(state.self_kv, KeyValueCache)
            first, after_first = decoding.step(tgt[:, 2], state)
            second, _ = decoding.step(tgt[:, 3], state)
            again, _ = decoding.step(tgt[:, 4], after_first)
        results[packed] = torch.stack([first, second, again])
    # -inf where search never goes (<pad>, <bos>) on both paths
    torch.testing.assert_close(results[True], results[False], atol=1e-5, rtol=0)


@pytest.mark.reference
def test_the_layers_path_continues_a_packed_cache():
    model = tiny_model()
    packed = pack_for_inference(model)
    src, src_mask, tgt = random_batch()
    with torch.no_grad():
        full = torch.log_softmax(model.output_proj(model(src, src_mask, tgt)), dim=-1)
        state = model.init_state(model.encode(src, src_mask), src_mask)
        for t in range(tgt.size(1)):
            decoding = packed if t % 2 == 0 else model  # alternate the two paths
            log_probs, state = decoding.step(tgt[:, t], state)
            assert (log_probs - full[:, t]).abs().max() <= 1e-5
