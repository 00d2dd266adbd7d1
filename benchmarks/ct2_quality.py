"""test_2016 BLEU of a trained Transformer through the CTranslate2 engine, in
each compute type, beside Rosetta's own engine: what quantization costs.

    python benchmarks/ct2_quality.py --run-dir runs/quality-multi30k-de-en-transformer
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from harness import ROOT
from rosetta import SearchOptions
from rosetta.data.corpus import read_lines
from rosetta.evaluate import chrf_score, sacrebleu_score
from rosetta.jobs.loading import load, load_translator

TEST = ROOT / "data/multi30k/test_2016_flickr"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", default="runs/quality-multi30k-de-en-transformer")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "int8"])
    args = parser.parse_args()
    sources = [line for _, line in read_lines(Path(f"{TEST}.de.gz"))]
    references = [line for _, line in read_lines(Path(f"{TEST}.en.gz"))]
    searches = {
        "greedy": SearchOptions(),
        "beam 5 refill": SearchOptions(beam_size=5, refill=True, stopping="k_finished"),
    }
    engines = {"rosetta fp32": load_translator(args.run_dir, device="cpu")}
    for precision in args.precisions:
        engines[f"ctranslate2 {precision}"] = load(
            args.run_dir, device="cpu", precision=precision, engine="ctranslate2"
        )
    print("| engine | search | sacreBLEU | chrF | seconds |")
    print("|---|---|---|---|---|")
    for name, translator in engines.items():
        for search, options in searches.items():
            started = time.perf_counter()
            hypotheses = translator.translate(sources, options)
            seconds = time.perf_counter() - started
            bleu = sacrebleu_score(hypotheses, references).value
            chrf = chrf_score(hypotheses, references).value
            print(f"| {name} | {search} | {bleu:.2f} | {chrf:.2f} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
