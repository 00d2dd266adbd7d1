"""Controls no output can meet: refused in one line where that is known
before the search, else each hypothesis ends where no token is left and is
marked incomplete; never ``<pad>``, a score of -inf or no hypothesis at all
for a sentence, in any search, on the command line or the server."""

from __future__ import annotations

import json
import math

import pytest
import torch
from fastapi.testclient import TestClient

from rosetta.cli import main
from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID
from rosetta.jobs.loading import load_translator
from rosetta.search import beam_search, exhaustive_search, greedy_search
from rosetta.search.controls import Controls
from rosetta.search.sampling import sampler
from rosetta.serve.app import create_app
from tests.search.test_controls import VOCAB, WORDS, allowed, tiny_model
from tests.support.fakes import TableModel
from tests.support.toy import WORDS as TOY_WORDS

LIMIT = {"max_len_a": 0.0, "max_len_b": 8}
UNMEETABLE = {  # five tokens may follow <bos> (WORDS), each at most once
    "six of five": Controls(min_length=6, no_repeat_ngram=1, eos_id=EOS_ID),
    "every word banned": Controls(
        min_length=1, banned=tuple((w,) for w in WORDS), eos_id=EOS_ID
    ),
}


def run_search(name: str, model, src, mask, controls: Controls):
    """One n-best list per sentence from the search ``name``."""
    common = {"bos_id": BOS_ID, "eos_id": EOS_ID, "controls": controls, **LIMIT}
    if name in ("greedy", "sampling"):
        draws = sampler(generator=torch.Generator().manual_seed(0))
        choose = {"choose": draws} if name == "sampling" else {}
        return [[h] for h in greedy_search(model, src, mask, **choose, **common)]
    if name == "exhaustive":
        return exhaustive_search(
            model, src, mask, alpha=1.0, nbest=2, max_sequences=10**8, **common
        )
    beam = {"beam": {}, "refill": {"refill": True}, "n-best": {"nbest": 3}}[name]
    return beam_search(model, src, mask, beam_size=4, alpha=1.0, **beam, **common)


SEARCHES = ["greedy", "sampling", "beam", "refill", "n-best", "exhaustive"]


@pytest.mark.parametrize("search", SEARCHES)
@pytest.mark.parametrize("controls", UNMEETABLE.values(), ids=list(UNMEETABLE))
def test_every_search_marks_what_the_controls_leave_unfinished(search, controls):
    model = tiny_model(0.0)
    src = torch.randint(4, VOCAB, (3, 4), generator=torch.Generator().manual_seed(2))
    mask = torch.ones_like(src, dtype=torch.bool)
    for found in run_search(search, model, src, mask, controls):
        assert found  # a hypothesis for every sentence
        for hypothesis in found:
            assert not hypothesis.complete
            assert math.isfinite(hypothesis.score)
            assert math.isfinite(hypothesis.normalized_score or 0.0)
            assert not {PAD_ID, BOS_ID, EOS_ID} & set(hypothesis.tokens)
            assert len(hypothesis.tokens) < controls.min_length
            assert allowed(hypothesis.tokens, False, controls)


@pytest.mark.parametrize("search", SEARCHES)
def test_one_sentence_left_without_a_token_leaves_the_others_alone(search):
    """Sentence 0's model only ever repeats token 4, which n-gram blocking
    rules out the second time; sentence 1 goes on with 5."""
    tables = [{(): {4: 1.0}, (4,): {4: 1.0}}, {(): {4: 1.0}, (4,): {5: 1.0}}]
    model = TableModel(tables, VOCAB)
    src = torch.tensor([[0, 7], [1, 7]])
    mask = torch.ones_like(src, dtype=torch.bool)
    controls = Controls(min_length=2, no_repeat_ngram=1, eos_id=EOS_ID)
    stuck, free = run_search(search, model, src, mask, controls)
    assert [(h.tokens, h.complete, h.score) for h in stuck] == [([4], False, 0.0)]
    assert [(h.tokens, h.complete) for h in free] == [([4, 5], True)]


def test_a_minimum_length_beyond_the_limit_is_refused_by_every_search():
    model, src = tiny_model(0.0), torch.tensor([[4, 5]])
    mask = torch.ones_like(src, dtype=torch.bool)
    controls = Controls(min_length=9, eos_id=EOS_ID)
    for search in SEARCHES:
        with pytest.raises(ValueError, match="beyond the output limit"):
            run_search(search, model, src, mask, controls)


STUCK = ["--no-repeat-ngram", "1", "--max-len-b", "60"]


def translate(run, tmp_path, capsys, *flags: str) -> tuple[int, list[str], str]:
    source = tmp_path / "in.txt"
    source.write_text("alpha beta gamma\n\ndelta eps\n")
    command = ["translate", "-m", str(run), "-i", str(source), *flags]
    status = main(command)
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err.strip()


def test_what_cannot_be_met_is_refused_in_one_line_before_the_search(
    toy_run, tmp_path, capsys
):
    run = toy_run("transformer")
    usable = len(load_translator(run, device="cpu").tokenizers.tgt) - 3
    capsys.readouterr()  # what training the toy model said
    for flags, message in [  # the model's own limit, and a wider one
        (["--min-len", "1500"], "beyond the output limit of input line 1: "),
        (
            [*STUCK, "--min-len", str(usable + 1)],
            f"beyond the longest output the controls allow: {usable} tokens",
        ),
    ]:
        status, out, err = translate(run, tmp_path, capsys, *flags)
        assert (status, out) == (2, [])
        last = err.splitlines()[-1]  # after the line naming the checkpoint
        assert last.startswith("rosetta translate: error: ") and message in last


# No order of the words and <unk> holds each once and leaves alpha, beta and
# gamma all followed by nothing but <unk> or the end: the searches find out.
CORNERED = [f"{w} {v}" for w in TOY_WORDS[:3] for v in TOY_WORDS if v != w]


@pytest.mark.parametrize(
    "flags", [[], ["--beam", "3", "--nbest", "2"], ["--sample", "--seed", "1"]]
)
def test_the_command_line_and_the_server_mark_short_lines(
    toy_run, tmp_path, capsys, flags
):
    run = toy_run("transformer")
    translator = load_translator(run, device="cpu")
    usable = len(translator.tokenizers.tgt) - 3
    capsys.readouterr()  # what training the toy model said
    bans = [arg for phrase in CORNERED for arg in ("--ban", phrase)]
    controls = [*STUCK, "--min-len", str(usable), *bans, *flags]
    status, out, err = translate(run, tmp_path, capsys, *controls, "--format", "jsonl")
    assert status == 0, err
    assert "warning: 2 of 3 lines stop short" in err
    lines = [json.loads(line)["hypotheses"] for line in out]
    assert [len(found) > 0 for found in lines] == [True, False, True]
    for found in lines:
        assert all(h["complete"] is False for h in found)
        assert all(math.isfinite(h["score"]) and h["token_ids"] for h in found)
        assert not any({PAD_ID, BOS_ID, EOS_ID} & set(h["token_ids"]) for h in found)
    body = {
        "sentences": ["alpha beta gamma", "delta eps"],
        "min_length": usable,
        "no_repeat_ngram": 1,
        "max_len_b": 60,
        "ban": CORNERED,
    }
    if "--sample" in flags:
        body |= {"sample": True, "seed": 1}
    with TestClient(create_app(translator)) as client:
        answer = client.post("/translate", json=body)
        assert answer.status_code == 200, answer.text
        for result in answer.json()["translations"]:
            assert result["hypotheses"]
            assert all(h["complete"] is False for h in result["hypotheses"])
        body["min_length"] = 1500
        refused = client.post("/translate", json=body)
        assert refused.status_code == 422
        assert "beyond the output limit" in refused.text
