"""MarianMT models in Rosetta: how fast an OPUS-MT-sized model imports, and
how fast Rosetta translates with it against Hugging Face transformers'
``generate`` on the same model, in the same run.

The model has an OPUS-MT model's shape (6 + 6 layers, d_model 512, 8 heads,
d_ff 2048, a vocabulary of 58,101; ``marian_model.py --full-size``) and
random weights. ``rosetta import hf`` runs as a child process: its wall time
and peak resident memory. Then both engines translate the first
``--sentences`` of Multi30k test_2016, sorted by length and cut into the
same batches (Rosetta's sources encoded before the clock starts,
``generate``'s tokenized on the clock: a few milliseconds a batch, against
seconds of search), greedy and beam 5 (length penalty 1,
k live prefixes, stop when k have ended: ``generate(num_beams=5,
early_stopping=True)``). A random model has no sense of when to stop, so
``</s>`` is made unlikely (a logit bias of -30) and every translation is
``--tokens`` long on both sides (``--lengths fixed``: the same work,
counted the same way), or as long as its source in pieces (``--lengths
source``: lengths that vary as translations' do; ``generate`` computes the
rows that have ended until its batch's last one ends, as it does with any
model, Rosetta drops them).
Rosetta decodes as ``rosetta translate`` does by default (``--workers
auto``) and with one worker. Runs are interleaved and repeated; the table
gives the median sentences/s (spread min-max), Rosetta's ratio to
``generate``, and the share of identical translations. With ``--busy N``
every timing is taken again beside N CPU-bound processes.

    python benchmarks/marian_import.py
    python benchmarks/marian_import.py --sentences 1000 --busy 2
"""

from __future__ import annotations

import argparse
import itertools
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from contextlib import nullcontext
from pathlib import Path

import torch

from harness import ROOT, competing_load, spread, write_json
from marian_model import hf_generate, make_marian, same_search, sentences
from rosetta.jobs.loading import load_translator

FULL_SIZE = {"d_model": 512, "layers": 6, "heads": 8, "d_ff": 2048}
FULL_SIZE |= {"vocab_size": 58101, "pieces": (4000, 4000), "max_positions": 512}


def timed_import(model: Path, run: Path) -> dict[str, float]:
    """``rosetta import hf`` in a child process: seconds and peak GB."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "rosetta", "import", "hf", str(model), "-o", str(run)],
        check=True,
        capture_output=True,
    )
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"seconds": seconds, "peak_gb": peak_kb / 1024**2}


def batches_of(lengths: list[int], size: int) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[s : s + size] for s in range(0, len(order), size)]


def run_generate(model, tokenizer, texts, batches, beams, tokens, per_source):
    """``hf_generate`` over ``batches`` (lists of indices), in input order."""
    found: dict[int, str] = {}
    for batch in batches:
        chosen = [texts[i] for i in batch]
        out = hf_generate(model, tokenizer, chosen, beams, tokens, per_source)
        found |= dict(zip(batch, out, strict=True))
    return [found[i] for i in range(len(texts))]


def measure(args: argparse.Namespace, work: Path) -> dict:
    model = make_marian(work / "opus-mt-full", eos_bias=-30.0, **FULL_SIZE)
    imported = timed_import(model, work / "run")
    print(
        f"import: {imported['seconds']:.1f} s, peak {imported['peak_gb']:.2f} GB "
        "(goal: <= 10 s, <= 1.5 GB)"
    )
    from transformers import MarianMTModel, MarianTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf_model = MarianMTModel.from_pretrained(model).eval()
        tokenizer = MarianTokenizer.from_pretrained(model)
    translator = load_translator(work / "run", "cpu")
    texts = sentences("de", args.sentences, "test_2016_flickr")
    sources = [translator.encode(text) for text in texts]
    batches = batches_of([len(s) for s in sources], args.batch_size)
    rows = []
    for load, lengths, beams in itertools.product(
        [0, *([args.busy] if args.busy else [])], args.lengths, (1, 5)
    ):
        per_source = 1.0 if lengths == "source" else 0.0
        options = same_search(beams, args.tokens, per_source)
        times: dict[str, list[float]] = {"auto": [], "one": [], "hf": []}
        outputs: dict[str, list[str]] = {}
        context = competing_load(load) if load else nullcontext()
        with context, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(args.repeats):
                for name, workers in (("auto", "auto"), ("one", 1)):
                    start = time.perf_counter()
                    found = translator.translate_ids(
                        sources,
                        options,
                        batch_size=args.batch_size,
                        workers=workers,
                    )
                    times[name].append(time.perf_counter() - start)
                    outputs[name] = [f[0].text if f else "" for f in found]
                start = time.perf_counter()
                outputs["hf"] = run_generate(
                    hf_model, tokenizer, texts, batches, beams, args.tokens, per_source
                )
                times["hf"].append(time.perf_counter() - start)
        same = statistics.mean(
            a == b for a, b in zip(outputs["auto"], outputs["hf"], strict=True)
        )
        speed = {k: [len(texts) / t for t in v] for k, v in times.items()}
        row = {
            "busy": load,
            "lengths": lengths,
            "beam": beams,
            "sentences_per_s": {k: statistics.median(v) for k, v in speed.items()},
            "spread": {k: str(spread(v)) for k, v in speed.items()},
            "vs_generate": statistics.median(times["hf"])
            / statistics.median(times["auto"]),
            "vs_generate_one_worker": statistics.median(times["hf"])
            / statistics.median(times["one"]),
            "identical": same,
        }
        rows.append(row)
        print_row(row)
    return {"import": imported, "rows": rows, "settings": vars(args)}


def print_row(row: dict) -> None:
    r = row["spread"]  # median (min-max)
    print(
        f"| {row['busy']} | {row['lengths']} | {row['beam']} | {r['auto']} | "
        f"{r['one']} | {r['hf']} | "
        f"{row['vs_generate']:.2f}x | {row['vs_generate_one_worker']:.2f}x | "
        f"{row['identical']:.0%} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--tokens", type=int, default=20, help="output length (lengths fixed)"
    )
    parser.add_argument(
        "--lengths",
        nargs="+",
        choices=("fixed", "source"),
        default=["fixed", "source"],
        help="fixed: every translation --tokens long; source: as long as its "
        "source (in pieces, </s> counted)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", type=int, default=0, help="competing processes")
    parser.add_argument(
        "--json", default=str(ROOT / "benchmarks/results/marian-import.json")
    )
    args = parser.parse_args()
    print(f"torch threads: {torch.get_num_threads()}")
    print(
        "| busy | lengths | beam | Rosetta sent/s (auto) | Rosetta (1 worker) "
        "| generate | ratio | ratio (1 worker) | identical |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        results = measure(args, Path(work))
    write_json(args.json, results)


if __name__ == "__main__":
    main()
