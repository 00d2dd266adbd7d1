"""Where a model with positions inside numbers fails: new places, or longer numbers.

An ``abacus`` or ``coupled`` model trained on numbers of up to n digits has
seen every place up to n + ``model.number_offset`` (training moves every
digit of a pair by one drawn offset). A longer test number fails either
because its places are new to the model or because the number is longer:
more digits to attend over, and places further apart than any two that
stood in one training number. This benchmark tells the two apart. It reads
a run of ``length_generalisation.py`` and its test sets, moves every digit
of every test pair (source and target) by each ``--offsets`` value, as
training does, and scores the model teacher-forced: a pair is exact when
every output token is the model's first choice given the right ones before
it, which is when greedy search writes it exactly (the ``greedy`` column,
at offset 0, checks this). Short sums at a large offset sit at the places
of the long sums' last digits, with the short sums' length.

    python benchmarks/number_places.py runs/length-generalisation/RUN \\
        --data runs/length-generalisation/data/TASK --offsets 0 20 40 80

(``RUN`` and ``TASK``: the run's and its data's folders, as
``length_generalisation.py`` names them.)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from rosetta.config.sections import CorpusFiles
from rosetta.data.batching import Example, collate
from rosetta.data.corpus import read_corpus
from rosetta.data.synthetic import accuracy
from rosetta.data.vocab import PAD_ID
from rosetta.families.transformer.model import Transformer
from rosetta.families.transformer.positions.numbers import shifted
from rosetta.jobs.loading import load_translator
from rosetta.search.options import SearchOptions


def teacher_forced(
    model: Transformer, pairs: list[Example], offset: int
) -> tuple[float, float]:
    """Exact % and per-token % of ``pairs`` teacher-forced with every digit
    moved by ``offset``: the training forward at a chosen offset."""
    batch = collate(pairs)
    src_mask = batch.src_mask
    tgt_mask = batch.tgt_out != PAD_ID
    moved = torch.full((len(pairs), 1), offset)
    source = shifted(model.encoder.positions.numbers(batch.src, real=src_mask), moved)
    target = shifted(model.decoder.positions.numbers(batch.tgt_in), moved)
    with torch.no_grad():
        features = model.forward_placed(
            batch.src, src_mask, batch.tgt_in, source, target, tgt_mask
        )
        right = (model.output_proj(features).argmax(-1) == batch.tgt_out) | ~tgt_mask
    exact = right.all(1).float().mean().item()
    tokens = (right & tgt_mask).sum().item() / tgt_mask.sum().item()
    return 100 * exact, 100 * tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a trained abacus or coupled run")
    parser.add_argument("--data", type=Path, required=True, help="its task folder")
    parser.add_argument("--offsets", type=int, nargs="+", default=[0, 40, 80])
    parser.add_argument("--splits", nargs="+", default=None, help="default: all")
    parser.add_argument("--which", choices=("best", "latest"), default="best")
    args = parser.parse_args()
    translator = load_translator(args.run, device="cpu", which=args.which)
    model = translator.model
    if not isinstance(model, Transformer) or not model.scheme.needs_digits:
        raise SystemExit(f"{args.run}: not a model with positions inside numbers")
    model.eval()
    splits = args.splits or sorted(
        (p.stem for p in args.data.glob("test*.src")),
        key=lambda name: (name != "test", len(name), name),
    )
    tokenizers = translator.tokenizers
    print(f"exact % (per-token %), teacher-forced; {args.run.name}, {args.which}")
    offsets = " | ".join(f"offset {o}" for o in args.offsets)
    print(f"| split | greedy, offset 0 | {offsets} |")
    print("|---|---|" + "---|" * len(args.offsets))
    for split in splits:
        files = CorpusFiles(
            src=args.data / f"{split}.src", tgt=args.data / f"{split}.tgt"
        )
        pairs = read_corpus(files)
        outputs = translator.translate([s for s, _ in pairs], SearchOptions())
        greedy = accuracy(outputs, [t for _, t in pairs])
        examples = [
            Example(tokenizers.src.encode(s), tokenizers.tgt.encode(t))
            for s, t in pairs
        ]
        cells = []
        for offset in args.offsets:
            exact, tokens = teacher_forced(model, examples, offset)
            cells.append(f"{exact:.1f} ({tokens:.1f})")
        print(
            f"| {split} | {100 * greedy.exact:.1f} ({100 * greedy.per_token:.1f}) "
            f"| {' | '.join(cells)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
