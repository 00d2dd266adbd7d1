"""The compiled decoding step (``compile_for_decoding``): its fixed-shape
slots give the layers' log-probabilities, and every search gives the
layers' tokens; compiled, the step is one graph and new batch shapes do
not recompile it without end."""

import pytest
import torch

from rosetta.families.transformer.fast.compiled import (
    CompiledDecoding,
    can_compile_decoding,
    compile_for_decoding,
    slot_step,
)
from rosetta.families.transformer.fast.slots import INITIAL_SLOTS, SlotState
from rosetta.search.constraints import TokenConstraints
from rosetta.search.dispatch import search
from rosetta.search.options import SearchOptions
from tests.families.transformer.test_model import random_batch, tiny_model

BOS, EOS = 2, 3
# the schemes whose decoder counts positions 0, 1, 2, ...
COMPILABLE = ["sinusoidal", "relative", "relative-randomized", "nope", "learned"]


def with_slots(model):
    """The slot state and step, not compiled: the same code, cheap to run."""
    return CompiledDecoding(model, slot_step)


def copy_model(positions="sinusoidal", updates=800):
    """A tiny model trained to copy its source: outputs of many lengths, so
    rows finish at different steps."""
    model = tiny_model(positions=positions, dropout=0.0)
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(updates):
        lengths = torch.randint(1, 9, (16,), generator=generator)
        src = torch.randint(4, 11, (16, 8), generator=generator)
        src_mask = torch.arange(8)[None] < lengths[:, None]
        src = src.masked_fill(~src_mask, 0)
        tgt = torch.cat([torch.full((16, 1), BOS), src, torch.zeros(16, 1).long()], 1)
        tgt[torch.arange(16), lengths + 1] = EOS
        tgt_mask = torch.arange(10)[None] <= (lengths + 1)[:, None]
        features = model(src, src_mask, tgt[:, :-1], tgt_mask[:, :-1])
        logits = model.output_proj(features).flatten(0, 1)
        loss = torch.nn.functional.cross_entropy(
            logits, tgt[:, 1:].flatten(), reduction="none"
        )
        loss = (loss * tgt_mask[:, 1:].flatten()).sum() / tgt_mask[:, 1:].sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def sources(count=7, seed=5):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 9, (count,), generator=generator)
    src = torch.randint(4, 11, (count, 8), generator=generator)
    src_mask = torch.arange(8)[None] < lengths[:, None]
    return src.masked_fill(~src_mask, 0), src_mask


def decoded(model, options, rules=None, batch=None):
    src, src_mask = batch or sources()
    with torch.no_grad():
        found = search(
            model, src, src_mask, options, bos_id=BOS, eos_id=EOS, constraints=rules
        )
    return [[(h.tokens, h.score, h.ended) for h in hs] for hs in found]


def assert_same(found, expected, atol=1e-4):
    """The same tokens, ends and ranks; scores within ``atol``."""
    assert [[(t, e) for t, _, e in hs] for hs in found] == [
        [(t, e) for t, _, e in hs] for hs in expected
    ]
    scores = torch.tensor([s for hs in found for _, s, _ in hs])
    wanted = torch.tensor([s for hs in expected for _, s, _ in hs])
    torch.testing.assert_close(scores, wanted, rtol=0, atol=atol)


@pytest.fixture(scope="module")
def copier():
    return copy_model()


@pytest.mark.reference
@pytest.mark.parametrize("positions", COMPILABLE)
def test_slot_steps_equal_the_layers_steps(positions):
    """Teacher-fed steps over beams (rows sharing their sentence's memory),
    past the first capacity, give the layers' log-probabilities."""
    model = tiny_model(positions=positions)
    assert can_compile_decoding(model)
    src, src_mask, _ = random_batch()
    index = torch.tensor([0, 0, 1, 1, 2, 2])
    tgt = torch.randint(4, 13, (6, INITIAL_SLOTS + 3), generator=torch.Generator())
    with torch.no_grad():
        results = []
        for decoder in (model, with_slots(model)):
            state = decoder.init_state(decoder.encode(src, src_mask), src_mask)
            state = state.reorder(index)
            steps = []
            for t in range(tgt.size(1)):
                log_probs, state = decoder.step(tgt[:, t], state)
                steps.append(log_probs)
            results.append(torch.stack(steps, 1))
        assert isinstance(state, SlotState) and state.capacity == 2 * INITIAL_SLOTS
    torch.testing.assert_close(results[1], results[0], rtol=0, atol=1e-5)


def test_schemes_with_penalties_or_numbers_stay_with_the_layers():
    for positions in ["alibi", "abacus", "coupled", "abacus-alibi"]:
        model = tiny_model(positions=positions)
        assert not can_compile_decoding(model)
        assert compile_for_decoding(model) is model


SEARCHES = {
    "greedy": SearchOptions(max_len_b=12),
    "beam": SearchOptions(beam_size=4, nbest=3, max_len_b=12),
    "beam refill": SearchOptions(beam_size=3, refill=True, stopping="k_finished"),
    "controls": SearchOptions(beam_size=3, min_length=3, no_repeat_ngram=2),
    "banned": SearchOptions(banned=((5,), (6, 7))),
    "short limit": SearchOptions(beam_size=2, max_len_a=0.5, max_len_b=1),
}


@pytest.mark.reference
@pytest.mark.parametrize("name", SEARCHES)
def test_every_search_finds_the_layers_tokens(copier, name):
    options = SEARCHES[name]
    expected = decoded(copier, options)
    assert_same(decoded(with_slots(copier), options), expected)
    assert len({len(hs[0][0]) for hs in expected}) > 2  # rows end apart


@pytest.mark.reference
def test_constraints_prefixes_and_attention_find_the_layers_tokens(copier):
    """A fed prefix goes through the layers, the slots take it over; an
    include phrase; attention weights through the layers."""
    prefixed = [TokenConstraints(prefix=(5, 6))] * 7
    included = [TokenConstraints(include=((9,),))] * 7
    for constraints, options in [
        (prefixed, SearchOptions()),
        (prefixed, SearchOptions(beam_size=3)),
        (included, SearchOptions(beam_size=3)),
        (None, SearchOptions(beam_size=2, need_attention=True)),
    ]:
        expected = decoded(copier, options, constraints)
        assert_same(decoded(with_slots(copier), options, constraints), expected)


def test_the_search_outputs_what_a_copier_copies(copier):
    """The trained model the other tests decode with does copy: they test
    searches whose tokens mean something."""
    src, src_mask = sources()
    found = decoded(copier, SearchOptions())
    copied = sum(hs[0][0] == src[i][src_mask[i]].tolist() for i, hs in enumerate(found))
    assert copied >= 4  # 6 or 7 of 7 where measured: a margin


def graph_breaks(positions):
    model = tiny_model(positions=positions)
    src, src_mask, _ = random_batch()
    with torch.no_grad():
        state = with_slots(model).init_state(model.encode(src, src_mask), src_mask)
        explained = torch._dynamo.explain(slot_step)(
            model.decoder,
            model.output_proj,
            torch.tensor([BOS] * 3),
            torch.tensor(0),
            state.slots,
            state.memory_kv,
            state.src_mask,
        )
    return explained.graph_break_count, explained.graph_count


@pytest.mark.parametrize("positions", ["sinusoidal", "relative"])
def test_the_decoding_step_is_one_graph(positions):
    assert graph_breaks(positions) == (0, 1)


@pytest.mark.slow
def test_compiled_search_finds_the_layers_tokens_and_compiles_few_graphs(copier):
    """Compiled for real (inductor, one cold compile): greedy and beam give
    the layers' tokens over batches of other sizes and lengths, and a
    new batch shape compiles no more graphs after the first few."""
    from torch._dynamo.utils import counters

    compiled = compile_for_decoding(copier)
    assert isinstance(compiled, CompiledDecoding)
    batches = [sources(count, seed) for count, seed in [(7, 5), (5, 6), (6, 7)]]
    before = int(counters["stats"]["unique_graphs"])
    graphs = []
    for batch in batches:
        for options in (SEARCHES["greedy"], SEARCHES["beam"]):
            expected = decoded(copier, options, batch=batch)
            assert_same(decoded(compiled, options, batch=batch), expected, 1e-3)
        graphs.append(int(counters["stats"]["unique_graphs"]) - before)
    assert not compiled.compiled_step.eager  # compiled, no fallback
    # one graph with a memory row per row (greedy, beam's first step), one
    # with k rows per memory row (beam); batches of other sizes reuse them
    assert graphs == [2, 2, 2]
