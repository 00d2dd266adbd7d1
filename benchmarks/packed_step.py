"""The Transformer's packed one-token step against its layers' path, end to end.

Decodes Multi30k test_2016 with a trained model twice per round: with the
decoder's one-token step on packed weights (``pack_for_inference(model)``,
what ``Translator`` decodes with) and through the decoder layers (the model
itself), in the same process, interleaved (packed, layers, packed, ...). The
search is the decode benchmark's (greedy, or beam 5 keeping 5 live prefixes), batch 32.
Prints the median sentences/s of each, the spread, the ratio, and checks that
both give the same translations. ``--precision bf16`` runs both under bf16
autocast (the packed weights are then bf16, converted once); bf16 rounds in a
different order in each path, so it counts the sentences translated
differently instead.

    python benchmarks/packed_step.py --run-dir runs/quality-de-en --threads 1 2
    python benchmarks/packed_step.py --run-dir runs/quality-de-en --precision bf16
    python benchmarks/packed_step.py --device cuda --threads 1

With ``--device cuda`` both paths decode on the GPU and the clocks are read
after ``torch.cuda.synchronize()``: whether the packed step pays there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from decode_speed import SEARCH, synchronize
from quality_multi30k import device_name
from rosetta.data.corpus import read_corpus
from rosetta.families.transformer.fast.packed import pack_for_inference
from rosetta.jobs.loading import load_translator
from rosetta.jobs.run_config import load_config
from rosetta.runtime.precision import autocast
from rosetta.search.batched import decode_in_batches
from rosetta.search.options import SearchOptions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="runs/quality-multi30k-de-en-transformer")
    parser.add_argument("--config", default="configs/multi30k-de-en-transformer.yaml")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sentences", type=int, default=320, help="first N")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--json", default=None, help="default: results/packed_step-P")
    args = parser.parse_args()
    stem = args.precision if args.device == "cpu" else f"{args.device}-{args.precision}"
    args.json = args.json or f"benchmarks/results/packed_step-{stem}.json"

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: this PyTorch sees no CUDA GPU")
    translator = load_translator(args.run_dir, device=device, packed=False)
    pairs = read_corpus(load_config(args.config).data.test)[: args.sentences]
    sources = [translator.tokenizers.src.encode(s) for s, _ in pairs]
    dtype = torch.bfloat16 if args.precision == "bf16" else None
    models = {
        True: pack_for_inference(translator.model, dtype),
        False: translator.model,
    }

    def decode(packed: bool, beam: int) -> list[list[int]]:
        options = SearchOptions(beam_size=beam, **SEARCH)
        with autocast(device, args.precision):
            found = decode_in_batches(
                models[packed], sources, device, batch_size=32, options=options
            )
        return [hypotheses[0].tokens for hypotheses in found]

    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        for beam in args.beams:
            seconds: dict[bool, list[float]] = {True: [], False: []}
            outputs = {packed: decode(packed, beam) for packed in (True, False)}
            differing = sum(a != b for a, b in zip(*outputs.values(), strict=True))
            if differing and args.precision == "fp32":
                raise SystemExit(f"beam {beam}: the two paths translate differently")
            for _ in range(args.rounds):
                for packed in (True, False):
                    synchronize(device)
                    began = time.perf_counter()
                    decode(packed, beam)
                    synchronize(device)
                    seconds[packed].append(time.perf_counter() - began)
            row = {
                "precision": args.precision,
                "threads": threads,
                "beam": beam,
                "sentences": len(sources),
                "translated_differently": differing,
            }
            for packed, name in ((True, "packed"), (False, "layers")):
                median = statistics.median(seconds[packed])
                row[f"{name}_sentences_per_s"] = round(len(sources) / median, 1)
                row[f"{name}_seconds"] = [round(s, 3) for s in seconds[packed]]
            row["ratio"] = round(
                row["packed_sentences_per_s"] / row["layers_sentences_per_s"], 3
            )
            rows.append(row)
            print(row, flush=True)

    print(
        f"\n{device_name(device)}, torch {torch.__version__}, {args.precision}, "
        f"batch 32, {args.rounds} rounds"
    )
    print(
        "| threads | beam | packed, sent/s (spread, s) "
        "| layers, sent/s (spread, s) | ratio | translated differently |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        cells = [
            f"{row[f'{name}_sentences_per_s']} ({min(row[f'{name}_seconds'])}–"
            f"{max(row[f'{name}_seconds'])})"
            for name in ("packed", "layers")
        ]
        print(
            f"| {row['threads']} | {row['beam']} | {cells[0]} | {cells[1]} "
            f"| {row['ratio']:.2f}× | {row['translated_differently']} |"
        )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
