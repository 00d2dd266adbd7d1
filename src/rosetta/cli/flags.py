"""The flags several verbs share: search, precision, threads, batching,
engines. Only what the parser needs is imported here (no PyTorch), so that
``rosetta COMMAND --help`` answers at once."""

from __future__ import annotations

import argparse
from dataclasses import fields

from rosetta.families import ENGINES
from rosetta.runtime import limits
from rosetta.runtime.limits import Count, Positive, number_flag
from rosetta.runtime.precisions import PRECISIONS
from rosetta.search.options import KINDS, SearchOptions

# the options' defaults, read without building options (which loads the search)
DEFAULT = {field.name: field.default for field in fields(SearchOptions)}


def add_search_flags(
    verb: argparse.ArgumentParser, beam: str = f"{DEFAULT['beam_size']}: greedy"
) -> None:
    """One flag per ``SearchOptions`` field, its default shown, not repeated;
    ``beam`` is the default beam size the verb uses when none is given."""
    group = verb.add_argument_group("search")
    add_beam_flags(group, beam)
    add_length_flags(group)
    add_sampling_flags(group)
    add_control_flags(group)


def add_beam_flags(group: argparse._ArgumentGroup, beam: str) -> None:
    """How beam search runs: its size, length normalisation and stopping."""
    number_flag(
        group,
        "--beam",
        KINDS["beam_size"],
        f"beam size (default {beam})",
        dest="beam_size",
        metavar="K",
    )
    number_flag(
        group,
        "--alpha",
        KINDS["alpha"],
        f"length normalisation exponent (default {DEFAULT['alpha']})",
    )
    group.add_argument(
        "--penalty",
        choices=["power", "gnmt"],
        help="divide Σ log P by L^α (power) or ((5+L)/6)^α (gnmt) "
        f"(default {DEFAULT['penalty']})",
    )
    group.add_argument(
        "--stopping",
        choices=["exact", "k_finished", "max_length"],
        help=f"when a sentence's beam search ends (default {DEFAULT['stopping']})",
    )
    group.add_argument(
        "--refill",
        action="store_true",
        default=None,
        help="keep beam-size live prefixes: ended candidates leave the beam and "
        "the next best expansions take their places (fairseq, Hugging Face, "
        "CTranslate2); without it the beam holds the k best expansions, ended "
        "or not (the textbook beam)",
    )


def add_length_flags(group: argparse._ArgumentGroup) -> None:
    """The output limit ``a·S + b``."""
    number_flag(
        group,
        "--max-len-a",
        limits.LengthRatio,
        "output limit a·S + b (default: the model's decode.max_len_a)",
    )
    number_flag(
        group,
        "--max-len-b",
        limits.LengthOffset,
        "(default: the model's decode.max_len_b)",
    )


def add_sampling_flags(group: argparse._ArgumentGroup) -> None:
    """Sampling instead of search, and how it draws."""
    group.add_argument(
        "--sample", action="store_true", default=None, help="sample instead"
    )
    number_flag(
        group,
        "--temperature",
        KINDS["temperature"],
        f"(default {DEFAULT['temperature']})",
    )
    number_flag(
        group, "--top-k", KINDS["top_k"], "sampling: the k best only (default 0: all)"
    )
    number_flag(
        group,
        "--top-p",
        KINDS["top_p"],
        f"sampling: nucleus probability (default {DEFAULT['top_p']})",
    )
    number_flag(group, "--seed", limits.Seed, "sampling seed")


def add_control_flags(group: argparse._ArgumentGroup) -> None:
    """What no translation may do, whichever search finds it."""
    number_flag(
        group,
        "--min-len",
        KINDS["min_length"],
        "no translation ends before this many target tokens: subword pieces, "
        "not words, so a short sentence forced past its end is padded with "
        "whatever the model finds likeliest (default 0)",
        dest="min_length",
    )
    number_flag(
        group,
        "--no-repeat-ngram",
        KINDS["no_repeat_ngram"],
        "no n-gram of this many tokens twice in a translation (default 0: off)",
    )
    group.add_argument(
        "--ban",
        action="append",
        metavar="PHRASE",
        help="a word or phrase no translation holds, in any casing and any "
        "way the target vocabulary spells it (repeat for several)",
    )
    group.add_argument(
        "--ban-forms",
        action="store_true",
        default=None,
        help="--ban also bans every word that starts with a phrase's last word "
        "(dog: dogs, dog's, but also dogma)",
    )


def add_precision_flag(verb: argparse.ArgumentParser) -> None:
    """``--precision``: fp32, bf16 or int8."""
    verb.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="fp32",
        help="bf16: bfloat16 matrix products, faster where the hardware has them; "
        "int8: int8 linear layers (CPU)",
    )


def workers_count(text: str) -> int | str:
    """``--workers``: a whole number of at least 1, or ``auto``."""
    if text == "auto":
        return text
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number or 'auto', got {text!r}"
        ) from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {count}")
    return count


def threads_count(text: str) -> int | None:
    """``--threads``: ``auto`` (None: the thread policy's choice) or a whole
    number of at least 1."""
    count = workers_count(text)
    return None if count == "auto" else int(count)


def add_threads_flag(verb: argparse.ArgumentParser) -> None:
    """``--threads``, with one meaning in every command
    (``rosetta.runtime.threads``)."""
    verb.add_argument(
        "--threads",
        type=threads_count,
        default=None,
        help="CPU threads: a number, or auto (default): the cores other work "
        "leaves free when the command starts",
    )


def add_batching_flags(verb: argparse.ArgumentParser) -> None:
    """``--batch-size`` and ``--workers``."""
    number_flag(
        verb,
        "--batch-size",
        Count,
        "sentences per batch (default: the model's decode.batch_size)",
    )
    verb.add_argument(
        "--workers",
        type=workers_count,
        default="auto",
        help="CPU: decode this many batches at once, sharing the threads; auto "
        "(default): one one-thread worker per core (per thread with --threads "
        "N), one when sampling or on a GPU",
    )


def add_overwrite_flag(verb: argparse.ArgumentParser, what: str) -> None:
    """``--overwrite``: replace ``what`` at the output place (never an input,
    a training run or one of its checkpoints)."""
    verb.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace {what} at the output place (never an input, a training "
        "run or a checkpoint)",
    )


def add_models_flags(
    verb: argparse.ArgumentParser, meaning: str, required: bool = True
) -> None:
    """``-m`` (``args.models``, a list: repeated, an ensemble) and
    ``--ensemble-weights``."""
    verb.add_argument(
        "-m",
        "--model",
        dest="models",
        action="append",
        required=required,
        metavar="MODEL",
        help=f"{meaning}; repeated (-m A -m B), an ensemble: the models' "
        "log-probabilities averaged at every step (they share vocabularies)",
    )
    number_flag(
        verb,
        "--ensemble-weights",
        Positive,
        "an ensemble's weights, one per -m in order (default: equal)",
        nargs="+",
        metavar="W",
    )


def add_engine_flags(verb: argparse.ArgumentParser) -> None:
    """``--engine``, ``--device``, ``--precision`` and ``--threads``: what
    runs the model."""
    verb.add_argument(
        "--engine",
        choices=ENGINES,
        default="rosetta",
        help="rosetta (default): the PyTorch model; ctranslate2: its CTranslate2 "
        "export (-m an exported folder, or a run exported on first use)",
    )
    verb.add_argument("--device", default=None, help="cpu, cuda (default: auto)")
    verb.add_argument(
        "--source-lang",
        metavar="CODE",
        help="the language of the input, for a model told it (NLLB-200 "
        "deu_Latn, M2M100 de, mBART-50 de_DE)",
    )
    verb.add_argument(
        "--target-lang",
        metavar="CODE",
        help="a multilingual model's target language (fra_Latn, fr, fr_XX; "
        "a MarianMT model's fra: each sentence starts with >>fra<<)",
    )
    add_precision_flag(verb)
    verb.add_argument(
        "--compile",
        dest="compiled",
        choices=("auto", "true", "false"),
        default="auto",
        help="decode with a compiled step (torch.compile; on a GPU, CUDA graphs): "
        "auto (default) on a GPU; the first batch waits for the compiler",
    )
    add_threads_flag(verb)


def add_npd_flags(verb: argparse.ArgumentParser) -> None:
    """``--npd`` and ``--teacher``: noisy parallel decoding of a NAT model."""
    group = verb.add_argument_group("non-autoregressive models (arch nat)")
    number_flag(
        group,
        "--npd",
        limits.Candidates,
        "noisy parallel decoding: S fertility sequences per sentence (the "
        "most likely and S-1 drawn), the one the teacher scores best kept",
        default=0,
        metavar="S",
    )
    group.add_argument(
        "--teacher", help="the autoregressive run that scores the --npd candidates"
    )
