"""Decoding controls (``rosetta.search.controls``), written once for every
search, against a brute-force check: every output of a tiny vocabulary,
scored by teacher forcing, kept only if a plain reading of the controls
allows it."""

from __future__ import annotations

import itertools

import pytest
import torch

from rosetta.data.vocab import BOS_ID, EOS_ID
from rosetta.search.bans import Spellings
from rosetta.search.beam import beam_search
from rosetta.search.controls import Controls
from rosetta.search.greedy import greedy_search
from rosetta.search.options import SearchOptions
from tests.support.next_token import next_token_log_probs
from tests.support.transformers import transformer

VOCAB, LIMIT = 8, 4
WORDS = (1, 4, 5, 6, 7)  # what an output may hold: <unk> and the words


def tiny_model(eos_bias: float) -> torch.nn.Module:
    """Sharp distributions that repeat themselves (bans and n-gram blocking
    change the best output); ``eos_bias`` on </s>'s logit: 6 makes the
    empty output the best (a minimum length changes it)."""
    torch.manual_seed(1)
    network = transformer(
        VOCAB,
        VOCAB,
        encoder_layers=1,
        decoder_layers=1,
        d_model=16,
        heads=2,
        d_ff=32,
        output_bias=True,
    ).eval()
    with torch.no_grad():
        network.output_proj.weight.mul_(2)
        network.output_proj.bias[EOS_ID] = eos_bias
    return network


MODELS = {0.0: tiny_model(0.0), 6.0: tiny_model(6.0)}


def spellings(phrase: Spellings) -> list[tuple[int, ...]]:
    """Every walk from position 0 to the end of the phrase, one by one."""
    found, walks = [], [(0, ())]
    while walks:
        at, tokens = walks.pop()
        if at == phrase.length and tokens:
            found.append(tokens)
        walks += [(e, (*tokens, t)) for s, t, e in phrase.edges if s == at]
    return found


def allowed(tokens: list[int], ended: bool, controls: Controls) -> bool:
    """The controls read plainly, on a whole output."""
    if ended and len(tokens) < controls.min_length:
        return False
    n = controls.no_repeat_ngram
    if n:
        grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
        if len(grams) != len(set(grams)):
            return False
    for phrase in controls.banned:
        for spelling in spellings(phrase):
            m = len(spelling)
            if any(tuple(tokens[i : i + m]) == spelling for i in range(len(tokens))):
                return False
    return True


def teacher_forced(model, src, tokens: list[int], ended: bool) -> float:
    """Σ log P of ``tokens`` (and ``<eos>`` if ``ended``) after ``src``."""
    target = [*tokens, EOS_ID] if ended else tokens
    tgt_in = torch.tensor([[BOS_ID, *target[:-1]]])
    mask = torch.ones_like(src, dtype=torch.bool)
    with torch.no_grad():
        log_probs = next_token_log_probs(model.output_proj(model(src, mask, tgt_in)))
    return float(log_probs[0, torch.arange(len(target)), target].sum())


def best_by_brute_force(model, src, kept, alpha: float):
    """The best output of WORDS up to LIMIT tokens that ``kept(tokens,
    ended)`` allows, by the beam's length-normalised score."""
    best, best_rank = None, float("-inf")
    for length in range(0, LIMIT + 1):
        for tokens in itertools.product(WORDS, repeat=length):
            for ended in (True, False) if length < LIMIT else (False,):
                if (not ended and length < LIMIT) or not kept(list(tokens), ended):
                    continue
                score = teacher_forced(model, src, list(tokens), ended)
                rank = score / (length + ended) ** alpha if length + ended else score
                if rank > best_rank:
                    best, best_rank = list(tokens), rank
    return best


def exact_beam(model, src, controls: Controls | None = None):
    """The best output of a beam as wide as every prefix (exact here)."""
    mask = torch.ones_like(src, dtype=torch.bool)
    extra = {"controls": controls} if controls is not None else {}
    [[found]] = beam_search(
        model,
        src,
        mask,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        beam_size=64,
        alpha=1.0,
        max_len_a=0,
        max_len_b=LIMIT,
        **extra,
    )
    return found


TWO_WAYS = Spellings(3, ((0, 6, 3), (0, 5, 1), (1, 5, 3), (1, 4, 2), (2, 4, 3)))
CONTROLS = [  # and the </s> bias of the model they are tried on
    (Controls(min_length=2, eos_id=EOS_ID), 6.0),
    (Controls(no_repeat_ngram=1, eos_id=EOS_ID), 0.0),
    (Controls(no_repeat_ngram=2, eos_id=EOS_ID), 0.0),
    (Controls(banned=((6,), (5, 5)), eos_id=EOS_ID), 0.0),
    (Controls(min_length=3, no_repeat_ngram=2, banned=((7, 4),), eos_id=EOS_ID), 6.0),
    # one phrase written three ways: 6 alone, 5 then 5, or 5, 4, 4
    (Controls(banned=(TWO_WAYS,), eos_id=EOS_ID), 0.0),
    (Controls(min_length=2, no_repeat_ngram=1, banned=(TWO_WAYS,), eos_id=EOS_ID), 6.0),
]


@pytest.mark.reference
@pytest.mark.parametrize(("controls", "eos_bias"), CONTROLS, ids=str)
def test_beam_search_finds_the_best_output_the_controls_allow(controls, eos_bias):
    """A beam as wide as the words is exact here: it equals the best of
    every output the controls allow."""
    model = MODELS[eos_bias]
    changed = 0
    for seed in range(3):
        src = torch.randint(
            4, VOCAB, (1, 4), generator=torch.Generator().manual_seed(seed)
        )
        found = exact_beam(model, src, controls)
        assert found.complete and allowed(found.tokens, found.ended, controls)
        allows = lambda tokens, ended: allowed(tokens, ended, controls)  # noqa: E731
        assert found.tokens == best_by_brute_force(model, src, allows, 1.0)
        free = exact_beam(model, src)
        changed += free.tokens != found.tokens
    assert changed  # the controls changed what the search found


@pytest.mark.reference
@pytest.mark.parametrize(("controls", "eos_bias"), CONTROLS, ids=str)
def test_greedy_search_takes_the_likeliest_allowed_token(controls, eos_bias):
    model = MODELS[eos_bias]
    src = torch.randint(4, VOCAB, (3, 4), generator=torch.Generator().manual_seed(9))
    mask = torch.ones_like(src, dtype=torch.bool)
    found = greedy_search(
        model,
        src,
        mask,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        max_len_a=0,
        max_len_b=LIMIT,
        controls=controls,
    )
    for row, hypothesis in enumerate(found):
        tokens: list[int] = []
        for _ in range(LIMIT):  # the likeliest token a plain reading allows
            tgt_in = torch.tensor([[BOS_ID, *tokens]])
            with torch.no_grad():
                logits = model.output_proj(model(src[row : row + 1], mask[:1], tgt_in))
            order = logits[0, -1].argsort(descending=True).tolist()
            token = next(
                t
                for t in order
                if (t in WORDS and allowed([*tokens, t], False, controls))
                or (t == EOS_ID and allowed(tokens, True, controls))
            )
            if token == EOS_ID:
                break
            tokens.append(token)
        assert hypothesis.tokens == tokens


def test_the_options_carry_the_controls_and_refuse_nonsense():
    options = SearchOptions(min_length=2, no_repeat_ngram=3, banned=((5, 6),))
    expected = Controls(2, 3, (Spellings(2, ((0, 5, 1), (1, 6, 2))),), EOS_ID)
    assert options.controls(EOS_ID) == expected
    assert sorted(spellings(TWO_WAYS)) == [(5, 4, 4), (5, 5), (6,)]
    with pytest.raises(ValueError, match="min_length"):
        SearchOptions(min_length=-1)
    with pytest.raises(ValueError, match="empty"):
        SearchOptions(ban=(" ",))


def test_the_command_line_and_the_server_take_the_controls(toy_run, tmp_path, capsys):
    from fastapi.testclient import TestClient

    from rosetta.cli import main
    from rosetta.jobs.loading import load_translator
    from rosetta.serve.app import create_app

    run = toy_run("transformer")
    source = tmp_path / "in.txt"
    source.write_text("alpha beta gamma\ndelta eps\n")

    def translate(*flags: str) -> list[str]:
        assert main(["translate", "-m", str(run), "-i", str(source), *flags]) == 0
        return capsys.readouterr().out.splitlines()

    free = translate()
    word = free[0].split()[0]
    banned = translate("--ban", word, "--min-len", "4", "--no-repeat-ngram", "1")
    assert all(word not in line.split() for line in banned)
    assert all(len(set(line.split())) == len(line.split()) for line in banned)
    assert main(["translate", "-m", str(run), "-i", str(source), "--ban", "  "]) != 0
    assert "a banned phrase is empty" in capsys.readouterr().err
    translator = load_translator(run, device="cpu")
    with TestClient(create_app(translator)) as client:
        body = {"sentences": ["alpha beta gamma"], "ban": [word]}
        answer = client.post("/translate", json=body)
        assert answer.status_code == 200, answer.text
        best = answer.json()["translations"][0]["hypotheses"][0]["text"]
        assert word not in best.split()
        refused = client.post("/translate", json={"sentences": ["a"], "ban": [""]})
        assert refused.status_code == 422


def test_ctranslate2_refuses_the_controls_in_one_line(toy_run, tmp_path, capsys):
    pytest.importorskip("ctranslate2")
    from rosetta.cli import main

    source = tmp_path / "in.txt"
    source.write_text("alpha beta\n")
    command = ["translate", "-m", str(toy_run("transformer")), "-i", str(source)]
    assert main([*command, "--engine", "ctranslate2", "--min-len", "2"]) != 0
    error = capsys.readouterr().err.strip().splitlines()
    assert "Rosetta's search controls; use --engine rosetta" in error[-1]


def test_a_minimum_length_without_the_end_token_is_refused():
    """Without ``eos_id`` there is no end to rule out (an index of -1 would
    have banned the vocabulary's last token instead)."""
    with pytest.raises(ValueError, match="eos_id"):
        Controls(min_length=2)
    assert Controls(no_repeat_ngram=2).longest_output(10) is not None
