"""``rosetta perplexity`` and ``rosetta generate``: a trained language model
scores a text or continues a prompt."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from rosetta.cli.flags import add_threads_flag
from rosetta.errors import one_line
from rosetta.runtime.limits import Count, Seed, Size, Temperature, number_flag

if TYPE_CHECKING:
    from rosetta import LanguageModel  # the public name


def load(args: argparse.Namespace) -> LanguageModel:
    from rosetta.jobs.loading import load_language_model
    from rosetta.runs import checkpoint as ckpt
    from rosetta.runtime.threads import use_threads

    use_threads(args.threads)
    folder, reason = ckpt.choose_checkpoint(Path(args.model))
    print(f"model: {one_line(folder)} ({reason})", file=sys.stderr)
    return load_language_model(folder, device=args.device)


def add_model_flags(verb: argparse.ArgumentParser) -> None:
    verb.add_argument(
        "-m", "--model", required=True, help="run folder (its best) or checkpoint"
    )
    verb.add_argument("--device", default=None, help="cpu, cuda (default: auto)")
    add_threads_flag(verb)


def warn_unknown(model: LanguageModel, text: str, what: str) -> None:
    """Say how much of ``text`` the model cannot read: those tokens are all
    ``<unk>`` to it, which a score or a continuation silently absorbs."""
    unknown, total = model.unknown_tokens(text)
    if unknown:
        unit = "characters" if model.reads_characters else "tokens"
        warnings.warn(
            f"{what}: {unknown} of {total} {unit} ({unknown / total:.1%}) are "
            "unknown to the model and read as <unk> (never seen in training)",
            stacklevel=2,
        )


def cmd_perplexity(args: argparse.Namespace) -> None:
    from rosetta.data.text import read_text

    model = load(args)
    text = read_text(Path(args.text), lines_only=not model.reads_characters)
    warn_unknown(model, text, args.text)
    score = model.score(text, args.memory, args.streams, progress=True)
    line = f"loss = {score.loss:.4f} nats/token  ppl = {score.perplexity:.3f}"
    if model.reads_characters:
        line += f"  bpc = {score.bits_per_token:.4f}"
    print(line)


def cmd_generate(args: argparse.Namespace) -> None:
    model = load(args)
    prompt = args.prompt.replace("\\n", "\n")
    warn_unknown(model, prompt, "the prompt")
    text = model.generate(
        prompt,
        tokens=args.tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        seed=args.seed,
    )
    print(text)


def add_parsers(verbs: argparse._SubParsersAction) -> None:
    perplexity = verbs.add_parser(
        "perplexity", help="a language model's loss, perplexity and bpc on a text"
    )
    add_model_flags(perplexity)
    perplexity.add_argument(
        "--text", required=True, help="the text to score (gzip if .gz)"
    )
    number_flag(
        perplexity,
        "--memory",
        Size,
        "positions of memory per layer (default: the model's evaluation "
        "memory; 0: every segment alone)",
    )
    number_flag(
        perplexity,
        "--streams",
        Count,
        "read the text as this many stretches side by side, each warmed up on "
        "the text before it: the score of reading it in order, faster (1: in "
        "order)",
        default=16,
    )
    perplexity.set_defaults(run=cmd_perplexity)

    generate = verbs.add_parser(
        "generate", help="continue a prompt with a language model"
    )
    add_model_flags(generate)
    generate.add_argument(
        "--prompt", required=True, help="the text to continue (\\n: a line break)"
    )
    number_flag(generate, "--tokens", Count, "tokens to add", default=200)
    number_flag(
        generate,
        "--temperature",
        Temperature,
        "divides the logits: lower is more conservative",
        default=1.0,
    )
    number_flag(
        generate,
        "--top-k",
        Count,
        "sample among the k likeliest tokens only (default: all; 1: greedy)",
    )
    number_flag(generate, "--seed", Seed, "seed of the sampling (default: random)")
    generate.set_defaults(run=cmd_generate)
