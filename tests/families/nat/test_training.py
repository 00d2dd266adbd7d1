"""The NAT through the ordinary run: reference fertilities, loss, validation
equal to a fresh load, exact resume, and noisy parallel decoding."""

import json

import pytest
import torch

from rosetta.data.batching import Example, pad
from rosetta.data.vocab import EOS_ID, PAD_ID
from rosetta.evaluate.corpus import sacrebleu_score
from rosetta.families.nat.config import ALIGNMENTS_FILE
from rosetta.families.nat.search import (
    draw_fertilities,
    nat_candidates,
    teacher_log_probabilities,
)
from rosetta.families.nat.training import collate_nat
from rosetta.families.nat.translator import NATTranslator
from rosetta.jobs.loading import load_translator
from rosetta.search.batched import decode_in_batches
from rosetta.search.options import SearchOptions
from tests.support.toy import NAT, NAT_CTC_GLANCING, assert_resume_is_exact, toy_config


def test_a_batch_carries_the_fertilities_with_zero_at_eos_and_padding():
    batch = collate_nat([Example([5, 6], [7, 7, 8]), Example([9], [10])], [[2, 1], [1]])
    assert batch.src.tolist() == [[5, 6, EOS_ID], [9, EOS_ID, PAD_ID]]
    assert batch.fertilities.tolist() == [[2, 1, 0], [1, 0, 0]]
    assert batch.tgt.tolist() == [[7, 7, 8], [10, PAD_ID, PAD_ID]]
    assert batch.num_tgt_tokens == 4


def test_the_argmax_fertilities_come_first_and_draws_follow_the_distribution():
    logits = torch.tensor([[[0.0, 5.0, 0.0], [9.0, 0.0, 0.0]]])
    generator = torch.Generator().manual_seed(0)
    drawn = draw_fertilities(logits, 2000, generator)
    assert drawn.shape == (1, 2000, 2)
    assert drawn[0, 0].tolist() == [1, 0]
    share = (drawn[0, 1:, 0] == 1).float().mean().item()
    expected = torch.tensor([0.0, 5.0, 0.0]).softmax(0)[1].item()
    assert share == pytest.approx(expected, abs=0.03)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["nat", "nat-ctc"])
def test_training_reports_the_bleu_a_fresh_load_gets(toy_run, kind):
    run = toy_run(kind)
    records = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    last = [r for r in records if r["kind"] == "valid"][-1]
    assert {"loss", "ppl", "bleu"} <= set(last)
    assert (
        ("fertility_nll" in last) == ("fertility_accuracy" in last) == (kind == "nat")
    )
    translator = load_translator(run, which="latest", device="cpu")
    assert isinstance(translator, NATTranslator)
    folder = run.parent
    sources = (folder / "2.src").read_text().splitlines()
    references = (folder / "2.tgt").read_text().splitlines()
    bleu = sacrebleu_score(translator.translate(sources), references).value
    assert bleu == pytest.approx(last["bleu"], abs=1e-9)
    if kind == "nat-ctc":  # CTC aligns as it trains
        assert not (run / ALIGNMENTS_FILE).exists()
        return
    header = (run / ALIGNMENTS_FILE).read_text().splitlines()[0]
    assert json.loads(header)["aligner"] == "eflomal"


@pytest.mark.slow
def test_a_resumed_nat_run_ends_with_the_uninterrupted_weights(tmp_path):
    def same_alignments(split):
        # eflomal seeds itself from the system: a run's alignments are its own,
        # kept in its folder, and the resumed half must read them back
        alignments = (tmp_path / "whole" / ALIGNMENTS_FILE).read_text()
        (split / ALIGNMENTS_FILE).write_text(alignments)

    assert_resume_is_exact(tmp_path, NAT, same_alignments)


@pytest.mark.slow
@pytest.mark.reference
def test_teacher_forced_scores_equal_the_scores_of_step_by_step_search(toy_run):
    """``log P(y + <eos> | x)`` in one pass equals greedy search's score of
    every hypothesis that ended with ``<eos>`` (one stopped by the length
    limit has no ``<eos>`` in its score)."""
    teacher = load_translator(toy_run("transformer"), device="cpu", packed=False)
    sentences = ["alpha beta gamma", "eta", "iota iota", "delta eps", "kappa zeta"]
    sources = [teacher.encode(s) for s in sentences]
    found = decode_in_batches(
        teacher.model,
        sources,
        torch.device("cpu"),
        batch_size=8,
        options=teacher.complete(SearchOptions()),
    )
    ended = [(s, h[0]) for s, h in zip(sources, found, strict=True) if h[0].ended]
    assert len(ended) >= 2
    scores = teacher_log_probabilities(
        teacher.model,
        [source for source, _ in ended],
        [hypothesis.tokens for _, hypothesis in ended],
        torch.device("cpu"),
    )
    expected = [hypothesis.score for _, hypothesis in ended]
    assert scores.tolist() == pytest.approx(expected, abs=1e-4)


@pytest.mark.slow
def test_noisy_parallel_decoding_keeps_the_candidate_the_teacher_scores_best(
    toy_run,
):
    teacher = load_translator(toy_run("transformer"), device="cpu")
    nat = load_translator(toy_run("nat"), device="cpu")
    npd = nat.rescored_by(teacher, 8)
    for sentence in ["alpha beta gamma delta", "eps zeta", "kappa iota theta eta"]:
        ids = npd.encode(sentence)
        generator = torch.Generator().manual_seed(0)
        src = pad([[*ids, EOS_ID]])
        candidates = nat_candidates(
            nat.model, src, src != PAD_ID, 8, generator=generator
        )[0]
        sequences = [tuple(c.fertilities) for c in candidates]
        assert 1 <= len(sequences) == len(set(sequences)) <= 8  # each drawn once
        # each candidate scored on its own, as text through the teacher's tokenizers
        scored = []
        for candidate in candidates:
            text = nat.tokenizers.tgt.decode(candidate.tokens)
            target = teacher.tokenizers.tgt.encode(text)
            alone = teacher_log_probabilities(
                teacher.model, [teacher.encode(sentence)], [target], teacher.device
            )
            scored.append(float(alone) / (len(target) + 1) ** 0.75)
        best = max(range(len(scored)), key=lambda k: (scored[k], -k))
        chosen = npd.translate_nbest([sentence])[0][0]
        assert chosen.token_ids == candidates[best].tokens
        assert chosen.fertilities == candidates[best].fertilities
        assert chosen.normalized_score == pytest.approx(scored[best], abs=1e-4)


def test_noisy_parallel_decoding_needs_a_teacher_and_nat_search_no_beam(toy_run):
    from rosetta.errors import RosettaError
    from rosetta.search.options import SearchOptions

    nat = load_translator(toy_run("nat"), device="cpu")
    with pytest.raises(RosettaError, match="teacher"):
        NATTranslator(nat.trained, npd=4)
    with pytest.raises(RosettaError, match="one pass"):
        nat.translate(["alpha"], SearchOptions(beam_size=4))
    assert nat.translate(["", "alpha beta"])[0] == ""


def test_a_teacher_of_the_other_direction_is_refused(toy_run):
    from rosetta.errors import RosettaError

    nat = load_translator(toy_run("nat"), device="cpu")
    teacher = load_translator(toy_run("transformer"), device="cpu")
    data = teacher.config.data
    flipped = data.model_copy(update={"src_lang": data.tgt_lang, "tgt_lang": "xx"})
    teacher.config = teacher.config.model_copy(update={"data": flipped})
    with pytest.raises(RosettaError, match="give a teacher of the same direction"):
        nat.rescored_by(teacher, 4)


@pytest.mark.slow
def test_the_command_line_decodes_with_npd_and_shows_fertilities(
    toy_run, tmp_path, capsys
):
    from rosetta.cli import main

    source = tmp_path / "in.txt"
    source.write_text("alpha beta gamma\n\neta\n", encoding="utf-8")
    nat, teacher = str(toy_run("nat")), str(toy_run("transformer"))
    capsys.readouterr()  # the runs' training logs
    flags = ["-i", str(source), "--device", "cpu", "--format", "jsonl"]
    assert (
        main(["translate", "-m", nat, *flags, "--npd", "4", "--teacher", teacher]) == 0
    )
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [len(r["hypotheses"]) for r in records] == [1, 0, 1]
    best = records[0]["hypotheses"][0]
    assert len(best["fertilities"]) == len(best["source_tokens"])
    assert sum(best["fertilities"]) == len(best["tokens"])
    assert main(["translate", "-m", nat, *flags, "--npd", "4"]) == 2
    assert "both --npd and --teacher" in capsys.readouterr().err
    assert main(["translate", "-m", teacher, *flags, "--npd", "4"]) == 2
    assert "go with a NAT model" in capsys.readouterr().err


def train_losses(run):
    records = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    return [r["loss"] for r in records if r["kind"] == "train"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["nat", "nat-ctc"])
def test_a_nat_trains_and_decodes_in_bf16_as_in_fp32(toy_run, tmp_path, kind):
    from rosetta.jobs.training import run_training

    fp32_run = toy_run(kind)
    config, _ = toy_config(
        tmp_path,
        "train.max_epochs=null",
        "train.max_steps=60",
        "train.validate_every=30",
        "train.precision=bf16",
        model={"nat": NAT, "nat-ctc": NAT_CTC_GLANCING}[kind],
    )
    (tmp_path / "run").mkdir()
    if (fp32_run / ALIGNMENTS_FILE).exists():  # the same fertilities
        alignments = (fp32_run / ALIGNMENTS_FILE).read_text()
        (tmp_path / "run" / ALIGNMENTS_FILE).write_text(alignments)
    run_training(config, tmp_path / "run")
    losses, fp32_losses = train_losses(tmp_path / "run"), train_losses(fp32_run)
    assert losses[-1] < 0.8 * losses[0]
    assert losses[-1] == pytest.approx(fp32_losses[-1], rel=0.15)

    exact = load_translator(tmp_path / "run", device="cpu")
    half = load_translator(tmp_path / "run", device="cpu", precision="bf16")
    sources = [exact.encode("alpha beta gamma delta")]
    (found,) = exact.translate_ids(sources)
    (approximate,) = half.translate_ids(sources)
    assert approximate[0].fertilities == found[0].fertilities  # None for CTC
    if found[0].fertilities is None:  # CTC: the tokens are the length model
        assert approximate[0].token_ids == found[0].token_ids
    assert approximate[0].score == pytest.approx(found[0].score, abs=0.5)
    assert len(half.translate(["alpha beta", "", "eta"])) == 3


def test_a_length_limit_takes_the_fertilities_from_the_end_of_the_source():
    from rosetta.families.nat.search import cap_lengths

    fertilities = torch.tensor([[2, 0, 3, 1], [1, 1, 0, 0]])
    capped = cap_lengths(fertilities, torch.tensor([4, 5]))
    assert capped.tolist() == [[2, 0, 2, 0], [1, 1, 0, 0]]
    assert cap_lengths(fertilities, torch.tensor([0, 1])).tolist() == [
        [0, 0, 0, 0],
        [1, 0, 0, 0],
    ]


def test_distinct_rows_keep_the_order_of_their_first_draw():
    from rosetta.families.nat.search import unique_rows

    rows = torch.tensor([[2, 1], [1, 1], [2, 1], [0, 3], [1, 1]])
    assert unique_rows(rows).tolist() == [[2, 1], [1, 1], [0, 3]]
