"""Search options: one set of defaults, whichever way a search is asked for."""

import pytest
import torch

from rosetta import SearchOptions
from rosetta.cli import build_parser
from rosetta.cli.common import search_options
from rosetta.config.sections import DecodeConfig
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.search.beam import length_penalty
from rosetta.serve.schemas import TranslateRequest


def test_the_cli_and_the_server_default_to_the_options_defaults():
    args = build_parser().parse_args(["translate", "-m", "run"])
    assert search_options(args) == SearchOptions()
    assert TranslateRequest(sentences=["a"]).search_options() == SearchOptions()


def test_the_cli_and_the_server_build_the_same_options():
    flags = ["--beam", "4", "--alpha", "1.0", "--penalty", "gnmt", "--refill"]
    flags += ["--stopping", "k_finished", "--max-len-a", "2", "--max-len-b", "3"]
    args = build_parser().parse_args(["translate", "-m", "run", *flags])
    request = TranslateRequest(
        sentences=["a"],
        beam_size=4,
        alpha=1.0,
        penalty="gnmt",
        refill=True,
        stopping="k_finished",
        max_len_a=2,
        max_len_b=3,
    )
    expected = SearchOptions(
        beam_size=4,
        alpha=1.0,
        penalty="gnmt",
        refill=True,
        stopping="k_finished",
        max_len_a=2.0,
        max_len_b=3,
    )
    assert search_options(args) == expected
    assert request.search_options() == expected


def test_an_unset_length_limit_is_the_models():
    decode = DecodeConfig(max_len_a=2.5, max_len_b=4)
    assert SearchOptions().with_length_limit(decode).max_len_a == 2.5
    assert SearchOptions(max_len_b=7).with_length_limit(decode).max_len_b == 7


def test_bad_flags_are_an_error_naming_the_flag_to_change():
    args = build_parser().parse_args(["translate", "-m", "run", "--beam", "2"])
    args.nbest = 3  # each flag is valid alone; together they are not
    with pytest.raises(RosettaError, match=r"^nbest \(3\) must be between.*--beam"):
        search_options(args, nbest=3)


@pytest.mark.parametrize(
    "options",
    [
        SearchOptions(),
        SearchOptions(alpha=1.0, penalty="gnmt"),
        SearchOptions(max_len_a=0.0, max_len_b=1),  # cut by the limit: no <eos>
        SearchOptions(sample=True, seed=3),
    ],
    ids=["greedy", "greedy-gnmt", "greedy-cut", "sampling"],
)
def test_every_search_reports_its_normalised_score(toy_run, options):
    """Greedy search and sampling rank nothing, but report the score beam
    search would rank them by: log P over the penalty of the scored length."""
    translator = load_translator(toy_run("transformer"), device="cpu")
    options = translator.complete(options)
    for [found] in translator.translate_nbest(["alpha beta gamma", "zeta"], options):
        source_length = len(found.source_tokens)  # with <eos>
        limit = max(1, int(options.max_len_a * source_length + options.max_len_b))
        length = len(found.token_ids) + (len(found.token_ids) < limit)  # + <eos>
        divisor = length_penalty(torch.tensor(length), options.alpha, options.penalty)
        assert found.normalized_score == pytest.approx(found.score / float(divisor))
