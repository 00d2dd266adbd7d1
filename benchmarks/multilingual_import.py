"""NLLB-200 in Rosetta: how fast and in how much memory an NLLB-600M-shaped
model imports, and how fast Rosetta translates with it against Hugging Face
transformers' ``generate()`` on the same model, in the same run.

The model has NLLB-200-distilled-600M's shape (12 + 12 layers, d_model 1024,
16 heads, d_ff 4096, a vocabulary of 256,206; ``multilingual_model.py
--nllb-600m``) and random weights. ``rosetta import hf`` runs as a child
process: its wall time and peak resident memory (goal: <= 20 s, <= 4 GB).
Then both translate the first ``--sentences`` of Multi30k test_2016 from
German into French in batches of ``--batch-size``, the same batches (sorted
by length) on both sides, greedy or beam 5 (length penalty 1, k live
prefixes, stop once k have ended), the target language forced first. A
random model has no sense of when to stop, so ``</s>`` is made unlikely and
every translation is ``--tokens`` long on both sides (``--lengths fixed``:
the same work), or as long as its source in pieces (``--lengths source``:
lengths that vary as translations' do; ``generate()`` computes the rows
that have ended until its batch's last one ends, Rosetta drops them). Runs
are interleaved and repeated; Rosetta decodes as ``rosetta translate`` does
by default (``--workers auto``) and with one worker. The table gives the
median sentences/s (spread min-max), Rosetta's ratio to ``generate()``
(goal: >= 1.2 at batch 32) and the share of identical outputs. ``--busy
N``: every timing again beside N CPU-bound processes.

    python benchmarks/multilingual_import.py
    python benchmarks/multilingual_import.py --beams 1 5 --busy 2
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
import warnings
from contextlib import nullcontext
from pathlib import Path

import torch

from harness import ROOT, competing_load, spread, write_json
from marian_import import timed_import
from marian_model import same_search, sentences
from multilingual_model import hf_search, load_reference, make_multilingual
from rosetta.jobs.loading import load_translator

NLLB_600M = {"d_model": 1024, "layers": 12, "heads": 16, "d_ff": 4096}
NLLB_600M |= {"vocab_size": 256206, "pieces": 4000, "init_std": 0.02}
NLLB_600M |= {"max_positions": 1024, "eos_bias": -30.0}


def measure(args: argparse.Namespace, work: Path) -> dict:
    model = work / "nllb-600m"
    if not (model / "model.safetensors").is_file():
        make_multilingual("nllb", model, **NLLB_600M)
    imports = [timed_import(model, work / f"run{i}") for i in range(args.imports)]
    seconds = [i["seconds"] for i in imports]
    peak = max(i["peak_gb"] for i in imports)
    print(f"import: {spread(seconds)} s, peak {peak:.2f} GB (goal: <= 20 s, <= 4 GB)")
    hf_model, tokenizer = load_reference(model)
    translator = load_translator(work / "run0", "cpu")
    translator = translator.from_language("deu_Latn").for_language("fra_Latn")
    texts = sentences("de", args.sentences, "test_2016_flickr")
    sources = [translator.encode(text) for text in texts]
    order = sorted(range(len(texts)), key=lambda i: len(sources[i]))
    batches = [
        order[s : s + args.batch_size] for s in range(0, len(order), args.batch_size)
    ]
    rows = []
    for load, lengths, beams in itertools.product(
        [0, *([args.busy] if args.busy else [])], args.lengths, args.beams
    ):
        per_source = 1.0 if lengths == "source" else 0.0
        options = same_search(beams, args.tokens, per_source)
        times: dict[str, list[float]] = {"auto": [], "one": [], "generate": []}
        outputs: dict[str, list] = {}
        context = competing_load(load) if load else nullcontext()
        with context, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(args.repeats):
                for name, workers in (("auto", "auto"), ("one", 1)):
                    start = time.perf_counter()
                    found = translator.translate_ids(
                        sources, options, batch_size=args.batch_size, workers=workers
                    )
                    times[name].append(time.perf_counter() - start)
                    outputs[name] = [f[0].tokens for f in found]
                start = time.perf_counter()
                theirs: dict[int, list[str]] = {}
                for batch in batches:
                    out = hf_search(
                        hf_model,
                        tokenizer,
                        [texts[i] for i in batch],
                        "deu_Latn",
                        "fra_Latn",
                        beams,
                        args.tokens,
                        per_source,
                    )
                    theirs |= dict(zip(batch, out, strict=True))
                times["generate"].append(time.perf_counter() - start)
                outputs["generate"] = [theirs[i] for i in range(len(texts))]
        same = statistics.mean(
            a == b for a, b in zip(outputs["auto"], outputs["generate"], strict=True)
        )
        speed = {k: [len(texts) / t for t in v] for k, v in times.items()}
        row = {
            "busy": load,
            "lengths": lengths,
            "beam": beams,
            "sentences_per_s": {k: statistics.median(v) for k, v in speed.items()},
            "spread": {k: str(spread(v)) for k, v in speed.items()},
            "vs_generate": statistics.median(times["generate"])
            / statistics.median(times["auto"]),
            "vs_generate_one_worker": statistics.median(times["generate"])
            / statistics.median(times["one"]),
            "identical": same,
        }
        rows.append(row)
        r = row["spread"]
        print(
            f"| {load} | {lengths} | {beams} | {r['auto']} | {r['one']} | "
            f"{r['generate']} | {row['vs_generate']:.2f}x | "
            f"{row['vs_generate_one_worker']:.2f}x | {same:.0%} |",
            flush=True,
        )
    return {"import": imports, "rows": rows, "settings": vars(args)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=20, help="output length")
    parser.add_argument("--beams", type=int, nargs="+", default=[1])
    parser.add_argument(
        "--lengths",
        nargs="+",
        choices=("fixed", "source"),
        default=["fixed", "source"],
        help="fixed: every translation --tokens long; source: as long as its "
        "source (in pieces, </s> and the language token counted)",
    )
    parser.add_argument("--imports", type=int, default=2, help="import runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", type=int, default=0, help="competing processes")
    parser.add_argument("--work", default=None, help="keep the model here")
    parser.add_argument(
        "--json", default=str(ROOT / "benchmarks/results/multilingual-import.json")
    )
    args = parser.parse_args()
    print(f"torch threads: {torch.get_num_threads()}")
    print(
        "| busy | lengths | beam | Rosetta sent/s (auto) | Rosetta (1 worker) "
        "| generate | ratio | ratio (1 worker) | identical |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    if args.work is not None:
        Path(args.work).mkdir(parents=True, exist_ok=True)
        write_json(args.json, measure(args, Path(args.work)))
        return
    with tempfile.TemporaryDirectory() as work:
        write_json(args.json, measure(args, Path(work)))


if __name__ == "__main__":
    main()
