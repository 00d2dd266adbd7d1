"""Search on real trained models: a Transformer and a recurrent attention model."""

import json
import subprocess
import sys

import pytest
import torch

from rosetta.data import Example, collate
from rosetta.data.vocab import BOS_ID, EOS_ID
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from rosetta.search import beam_search, greedy_search, sampler
from rosetta.search.batched import auto_workers
from rosetta.search.greedy import most_likely
from rosetta.search.options import SearchOptions
from tests.support.fakes import CONFIG_LIMIT
from tests.support.next_token import next_token_log_probs
from tests.support.toy import (
    RNN_ATTENTION,
    TRANSFORMER,
    TRANSFORMER_RELATIVE,
    WORDS,
    toy_config,
)

MODELS = {
    "transformer": TRANSFORMER,
    "transformer-relative": TRANSFORMER_RELATIVE,
    "rnn-attention": RNN_ATTENTION,
}
SENTENCES = [
    "alpha beta gamma",
    "delta",
    "eps zeta eta theta iota kappa",
    "kappa alpha",
    "beta beta gamma delta eps",
]


@pytest.fixture(scope="module", params=list(MODELS))
def trained(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    config, _ = toy_config(
        folder,
        "train.max_epochs=null",
        "train.max_steps=60",
        "train.validate_every=60",
        model=MODELS[request.param],
    )
    run_training(config, folder / "run")
    return load_translator(folder / "run", device="cpu"), folder / "run"


def batch_of(translator, sentences):
    examples = [Example(translator.tokenizers.src.encode(s), []) for s in sentences]
    batch = collate(examples)
    return batch.src, batch.src_mask


def beam(model, src, mask, **options):
    options = {"alpha": SearchOptions.alpha, **CONFIG_LIMIT} | options
    return beam_search(model, src, mask, bos_id=BOS_ID, eos_id=EOS_ID, **options)


def greedy(model, src, mask, choose=most_likely):
    return greedy_search(
        model, src, mask, bos_id=BOS_ID, eos_id=EOS_ID, choose=choose, **CONFIG_LIMIT
    )


def teacher_forced_score(model, src, mask, tokens, limit):
    """Σ log P of ``tokens`` (+ <eos> when the hypothesis ended with it)."""
    ended = len(tokens) < limit
    target = [*tokens, EOS_ID] if ended else tokens
    tgt_in = torch.tensor([[BOS_ID, *target[:-1]]])
    with torch.no_grad():
        logits = model.output_proj(model(src, mask, tgt_in))
        log_probs = next_token_log_probs(logits.double())
    return float(log_probs[0, torch.arange(len(target)), torch.tensor(target)].sum())


@pytest.mark.parametrize("refill", [False, True])
def test_batched_beam_search_equals_one_sentence_at_a_time(trained, refill):
    translator, _ = trained
    model = translator.model
    src, mask = batch_of(translator, SENTENCES)
    batched = beam(model, src, mask, beam_size=4, nbest=3, refill=refill)
    for i in range(len(SENTENCES)):
        length = int(mask[i].sum())
        [alone] = beam(
            model,
            src[i : i + 1, :length],
            mask[i : i + 1, :length],
            beam_size=4,
            nbest=3,
            refill=refill,
        )
        assert [h.tokens for h in alone] == [h.tokens for h in batched[i]]
        for a, b in zip(alone, batched[i], strict=True):
            assert a.score == pytest.approx(b.score, abs=1e-4)


def test_greedy_is_beam_of_one_and_scores_are_teacher_forced_scores(trained):
    translator, _ = trained
    model = translator.model
    src, mask = batch_of(translator, SENTENCES)
    greedy_found = greedy(model, src, mask)
    beams = beam(model, src, mask, beam_size=1)
    limits = (mask.sum(1) * 1.5 + 10).floor().long()
    for g, [b] in zip(greedy_found, beams, strict=True):
        assert b.tokens == g.tokens
        assert b.score == pytest.approx(g.score, abs=1e-5)
    for i, hypotheses in enumerate(beam(model, src, mask, beam_size=4, nbest=4)):
        length = int(mask[i].sum())
        for h in hypotheses:
            rescored = teacher_forced_score(
                model,
                src[i : i + 1, :length],
                mask[i : i + 1, :length],
                h.tokens,
                int(limits[i]),
            )
            assert h.score == pytest.approx(rescored, abs=1e-4)


@pytest.mark.parametrize("refill", [False, True])
def test_attention_of_the_best_hypotheses(trained, refill):
    translator, _ = trained
    found = translator.translate_nbest(
        SENTENCES,
        SearchOptions(beam_size=3, nbest=2, need_attention=True, refill=refill),
    )
    for sentence, hypotheses in zip(SENTENCES, found, strict=True):
        assert len(hypotheses) == 2
        assert hypotheses[0].normalized_score >= hypotheses[1].normalized_score
        for h in hypotheses:
            steps = len(h.token_ids) + 1  # every token, then <eos>
            assert h.attention is not None
            assert h.attention.shape[0] == steps
            assert h.attention.shape[-1] == len(sentence.split()) + 1
            assert h.source_tokens == [*sentence.split(), "<eos>"]
            sums = h.attention.sum(-1)
            torch.testing.assert_close(sums, torch.ones_like(sums))


def test_sampling_is_reproducible_and_top_k_of_one_is_greedy(trained):
    translator, _ = trained
    model = translator.model
    src, mask = batch_of(translator, SENTENCES)
    top1 = greedy(model, src, mask, choose=sampler(top_k=1))
    assert [h.tokens for h in top1] == [h.tokens for h in greedy(model, src, mask)]
    first = translator.translate(
        SENTENCES * 4, SearchOptions(sample=True, seed=3, temperature=2.0)
    )
    again = translator.translate(
        SENTENCES * 4, SearchOptions(sample=True, seed=3, temperature=2.0)
    )
    other = translator.translate(
        SENTENCES * 4, SearchOptions(sample=True, seed=4, temperature=2.0)
    )
    assert first == again
    assert first != other


def test_translator_options_match_the_search_functions(trained):
    translator, _ = trained
    src, mask = batch_of(translator, SENTENCES)
    beams = beam(translator.model, src, mask, beam_size=4, alpha=1.0, penalty="gnmt")
    texts = translator.translate(
        SENTENCES, SearchOptions(beam_size=4, alpha=1.0, penalty="gnmt")
    )
    for text, [h] in zip(texts, beams, strict=True):
        assert text == translator.tokenizers.tgt.decode(h.tokens)
    with pytest.raises(ValueError, match="nbest"):
        translator.translate(SENTENCES, SearchOptions(beam_size=2, nbest=3))
    with pytest.raises(TypeError, match="beam"):
        translator.translate(SENTENCES, SearchOptions(beam=2))


def rosetta(*args, stdin=""):
    return subprocess.run(
        [sys.executable, "-m", "rosetta.cli", *args],
        input=stdin.encode(),
        capture_output=True,
        timeout=120,
    )


def test_cli_writes_one_json_line_per_input_line(trained):
    _, run_dir = trained
    lines = ["alpha beta", "", "gamma delta eps", " ".join(WORDS)]
    done = rosetta(
        "translate",
        "-m",
        str(run_dir),
        "--beam",
        "3",
        "--nbest",
        "2",
        "--format",
        "jsonl",
        "--attention",
        stdin="\n".join(lines) + "\n",
    )
    assert done.returncode == 0, done.stderr.decode()
    records = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3, 4]
    assert [r["source"] for r in records] == lines
    assert records[1]["hypotheses"] == []
    for record in (records[0], records[2], records[3]):
        assert len(record["hypotheses"]) == 2
        best = record["hypotheses"][0]
        assert {"text", "score", "normalized_score", "token_ids", "tokens"} <= set(best)
        assert len(best["attention"]) == len(best["token_ids"]) + 1


# Option checks do not depend on the model: one kind is enough.
@pytest.mark.parametrize("trained", ["transformer"], indirect=True)
def test_cli_refuses_bad_search_options(trained):
    _, run_dir = trained
    done = rosetta("translate", "-m", str(run_dir), "--attention", stdin="alpha\n")
    assert done.returncode == 2
    assert b"--format jsonl" in done.stderr
    done = rosetta(
        "translate",
        "-m",
        str(run_dir),
        "--format",
        "jsonl",
        "--beam",
        "2",
        "--nbest",
        "3",
        stdin="alpha\n",
    )
    assert done.returncode == 2
    assert done.stderr.count(b"translate") == 1  # the command, named once
    assert b"nbest (3) must be between 1 and the beam size (2)" in done.stderr
    assert b"set --beam to at least 3" in done.stderr
    assert b"Traceback" not in done.stderr


@pytest.mark.reference
def test_fast_and_reference_paths_give_the_same_translations(trained):
    """Fused attention / fused recurrent kernels, the shared beam memory and the
    batched search against the reference paths, one sentence at a time."""
    translator, _ = trained
    fast = translator.translate_nbest(SENTENCES, SearchOptions(beam_size=4, nbest=2))
    reference_parts = []
    for module in translator.model.modules():
        if hasattr(module, "fused"):
            reference_parts.append((module, "fused", module.fused))
            module.fused = False
        if getattr(module, "impl", None) == "fused":
            reference_parts.append((module, "impl", "fused"))
            module.impl = "reference"
    assert reference_parts, "the model has no fast path to switch off"
    try:
        slow = [
            translator.translate_nbest(
                [s], SearchOptions(beam_size=4, nbest=2), batch_size=1
            )[0]
            for s in SENTENCES
        ]
    finally:
        for module, name, value in reference_parts:
            setattr(module, name, value)
    assert [[h.text for h in f] for f in fast] == [[h.text for h in s] for s in slow]
    for f, s in zip(fast, slow, strict=True):
        for a, b in zip(f, s, strict=True):
            assert a.score == pytest.approx(b.score, abs=1e-4)


@pytest.mark.parametrize("search", [{}, {"beam_size": 3, "nbest": 2}])
def test_parallel_workers_translate_as_one_search_does(trained, search):
    translator, _ = trained
    threads = torch.get_num_threads()
    one = translator.translate_nbest(SENTENCES, SearchOptions(**search), batch_size=2)
    two = translator.translate_nbest(
        SENTENCES, SearchOptions(**search), batch_size=2, workers=2
    )
    assert torch.get_num_threads() == threads  # shared out, then restored
    assert [[h.text for h in f] for f in one] == [[h.text for h in f] for f in two]
    for f, g in zip(one, two, strict=True):
        assert [h.score for h in f] == pytest.approx([h.score for h in g], abs=1e-5)


def test_auto_workers_are_one_per_thread_on_a_cpu_and_one_where_they_cannot_apply():
    greedy, sampling = SearchOptions(), SearchOptions(sample=True)
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(4)
        assert auto_workers(greedy, cpu, batches=10) == 4
        assert auto_workers(greedy, cpu, batches=3) == 3  # one per batch at most
        assert auto_workers(greedy, cpu, batches=0) == 1
        assert auto_workers(sampling, cpu, batches=10) == 1
        assert auto_workers(greedy, gpu, batches=10) == 1
        torch.set_num_threads(1)
        assert auto_workers(greedy, cpu, batches=10) == 1
    finally:
        torch.set_num_threads(threads)


# Workers split batches, whatever the model: one kind of each decoder step.
@pytest.mark.parametrize("trained", ["transformer", "rnn-attention"], indirect=True)
def test_auto_workers_translate_as_one_search_does_and_sample_in_order(trained):
    translator, run_dir = trained
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        one = translator.translate(SENTENCES, batch_size=2)
        assert translator.translate(SENTENCES, batch_size=2, workers="auto") == one
        sampled = {"sample": True, "seed": 3}
        assert translator.translate(
            SENTENCES, SearchOptions(**sampled), batch_size=2, workers="auto"
        ) == translator.translate(SENTENCES, SearchOptions(**sampled), batch_size=2)
    finally:
        torch.set_num_threads(threads)
    assert torch.get_num_threads() == threads
    # the CLI's default is auto, sampling included; a bad count is one line
    sampled = rosetta(
        "translate", "-m", str(run_dir), "--sample", "--seed", "1", stdin="alpha\n"
    )
    assert sampled.returncode == 0, sampled.stderr.decode()
    for bad in ("0", "two"):
        done = rosetta("translate", "-m", str(run_dir), "--workers", bad, stdin="a\n")
        assert done.returncode == 2
        assert b"--workers" in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.parametrize("trained", ["transformer"], indirect=True)
def test_parallel_workers_refuse_what_they_cannot_do(trained):
    """Workers are a CPU feature: the commands name the CPU, whatever the
    machine has."""
    translator, run_dir = trained
    with pytest.raises(ValueError, match="at least 1"):
        translator.translate(["alpha"], workers=0)
    with pytest.raises(ValueError, match="sampling runs with one worker"):
        translator.translate(["alpha"], SearchOptions(sample=True, seed=1), workers=2)
    done = rosetta(
        "translate",
        "-m",
        str(run_dir),
        "--device",
        "cpu",
        "--workers",
        "2",
        "--sample",
        stdin="alpha\n",
    )
    assert done.returncode == 2
    assert b"sampling runs with one worker" in done.stderr
    assert b"Traceback" not in done.stderr
    lines = "\n".join(SENTENCES) + "\n"
    cpu = ("--device", "cpu")
    one = rosetta(
        "translate", "-m", str(run_dir), *cpu, "--batch-size", "2", stdin=lines
    )
    two = rosetta(
        "translate",
        "-m",
        str(run_dir),
        *cpu,
        "--batch-size",
        "2",
        "--workers",
        "2",
        stdin=lines,
    )
    assert two.returncode == 0, two.stderr.decode()
    assert two.stdout == one.stdout
