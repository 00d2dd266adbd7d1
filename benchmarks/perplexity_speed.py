"""Scoring a text: one row in order against stretches read side by side.

``rosetta perplexity`` reads the text as ``--streams`` stretches side by
side, each first reading, unscored, the segments that rebuild the memory
reading in order would have left (``rosetta.inference.text_scoring``).
This measures both on the tiny Shakespeare validation text (111,540
characters) with the laptop language model's shape
(``configs/tinyshakespeare-char-xl-cpu.yaml``: 4 layers of width 192,
segments and memory of 64). The weights are freshly initialised unless
``--run`` names a trained run: the time does not depend on them, and the
loss is compared between the two ways, not judged. Settings are
interleaved, ``--repeats`` times each; the median and the range are printed.

    python benchmarks/perplexity_speed.py
    python benchmarks/perplexity_speed.py --busy 2
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import time

import torch

from harness import ROOT, competing_load
from rosetta.data.text import encode_text
from rosetta.data.tokenizer import CharacterTokenizer
from rosetta.families import build_model
from rosetta.inference.text_scoring import score_text
from rosetta.jobs.run_config import load_config

CONFIG = ROOT / "configs" / "tinyshakespeare-char-xl-cpu.yaml"
SHAKESPEARE = ROOT / "data" / "tinyshakespeare"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="a trained language model's run folder")
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--busy", type=int, default=0, help="CPU-bound processes beside"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    with gzip.open(SHAKESPEARE / "valid.txt.gz", "rt", encoding="utf-8") as handle:
        text = handle.read()
    if args.run:
        from rosetta.jobs.loading import load_language_model

        language_model = load_language_model(args.run, device="cpu")
        model, tokenizer = language_model.model, language_model.tokenizer
        segment, memory = (
            language_model.lm.segment_length,
            language_model.lm.scoring_memory,
        )
    else:
        config = load_config(CONFIG)
        with gzip.open(SHAKESPEARE / "train.txt.gz", "rt", encoding="utf-8") as handle:
            tokenizer = CharacterTokenizer.train([handle.read()])
        torch.manual_seed(0)
        model = build_model(config.model, len(tokenizer), len(tokenizer))
        segment, memory = config.model.segment_length, config.model.scoring_memory
    ids = encode_text(tokenizer, text)
    cpu = torch.device("cpu")
    seconds: dict[int, list[float]] = {streams: [] for streams in args.streams}
    losses: dict[int, float] = {}
    with competing_load(args.busy):
        for _ in range(args.repeats):
            for streams in args.streams:
                began = time.perf_counter()
                score = score_text(model, ids, segment, memory, cpu, streams=streams)
                seconds[streams].append(time.perf_counter() - began)
                losses[streams] = score.loss
    if args.busy:
        print(f"measured beside {args.busy} CPU-bound processes")
    first = args.streams[0]
    print(f"{len(ids):,} tokens, threads {torch.get_num_threads()}")
    print("| streams | seconds (median, min–max) | loss (nats/token) | speed-up |")
    print("|---|---|---|---|")
    for streams in args.streams:
        runs = seconds[streams]
        median = statistics.median(runs)
        print(
            f"| {streams} | {median:.1f} ({min(runs):.1f}–{max(runs):.1f}) | "
            f"{losses[streams]:.6f} | "
            f"{statistics.median(seconds[first]) / median:.1f}× |"
        )


if __name__ == "__main__":
    main()
