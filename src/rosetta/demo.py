"""``make demo``: train the bundled default on the CPU for a fixed time budget,
translate Multi30k test_2016, score it and show a few translations."""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from rosetta.config import load_config
from rosetta.data.corpus import read_corpus
from rosetta.evaluate.corpus import evaluate_all
from rosetta.train.run import run_training
from rosetta.translator import Translator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", default="configs/multi30k-de-en-transformer.yaml")
    parser.add_argument(
        "--minutes", type=float, default=10.0, help="training time budget"
    )
    parser.add_argument("--output", default="runs/demo")
    args = parser.parse_args()

    run_dir = Path(args.output)
    shutil.rmtree(run_dir, ignore_errors=True)
    config = load_config(args.config, [f"train.max_minutes={args.minutes}"])
    started = time.perf_counter()
    print(f"Training {args.config} for {args.minutes:g} minutes on the CPU ...")
    run_training(config, run_dir)

    assert config.data.test is not None, "the demo config names a test set"
    pairs = read_corpus(config.data.test)
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    print(f"\nTranslating {len(sources)} test sentences ...")
    hypotheses = Translator.load(run_dir).translate(sources)
    print()
    for source, hypothesis, reference in list(
        zip(sources, hypotheses, references, strict=True)
    )[:6]:
        print(
            f"  source     {source}\n  rosetta    {hypothesis}\n"
            f"  reference  {reference}\n"
        )
    for score in evaluate_all(hypotheses, references):
        print(score)
    print(f"\nTotal {(time.perf_counter() - started) / 60:.1f} min. Model: {run_dir}")


if __name__ == "__main__":
    main()
