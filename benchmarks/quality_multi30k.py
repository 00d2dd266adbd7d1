"""Translation quality of a configuration on its test set (Multi30k test_2016).

Trains the configuration (or resumes/reuses the run folder), translates the
test set with greedy and beam search and prints a table with sacreBLEU (cased,
detokenized), the tokenized lower-cased BLEU that published Multi30k results
use, chrF, training time, epochs and the machine, and, for the best and the
last checkpoint, the validation BLEU training recorded beside that of the
checkpoint loaded afresh (they must be equal). Writes the same as JSON.

    python benchmarks/quality_multi30k.py \
        --config configs/multi30k-de-en-transformer.yaml
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from rosetta import Translator
from rosetta.data.corpus import read_corpus
from rosetta.evaluate import chrf_score, sacrebleu_score, tokenized_lowercase_bleu
from rosetta.jobs.loading import load_translator
from rosetta.jobs.run_config import load_config
from rosetta.jobs.training import pick_device, run_training
from rosetta.runs.checkpoint import read_index, read_meta, resolve_checkpoint
from rosetta.search.options import SearchOptions


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def device_name(device: torch.device) -> str:
    """The processor a benchmark ran on, as its tables name it."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return cpu_name()


def beam_rows(
    translator: Translator, sources: list[str], references: list[str], beam: int
) -> dict[str, float]:
    """BLEU of beam search (α = 0.75) on the same sentences, and its time."""
    if beam <= 1:
        return {}
    started = time.perf_counter()
    hypotheses = translator.translate(sources, SearchOptions(beam_size=beam))
    seconds = time.perf_counter() - started
    return {
        f"sacrebleu_beam{beam}": round(
            sacrebleu_score(hypotheses, references).value, 2
        ),
        f"bleu_tok_lc_beam{beam}": round(
            tokenized_lowercase_bleu(hypotheses, references).value, 2
        ),
        f"chrf_beam{beam}": round(chrf_score(hypotheses, references).value, 2),
        f"decode_seconds_beam{beam}": round(seconds, 1),
    }


def validation_check(run_dir: Path, config, names: list[str]) -> dict[str, float]:
    """The validation BLEU training recorded for each named checkpoint beside
    the BLEU of that checkpoint loaded afresh: they must be equal."""
    if config.data.valid is None:
        return {}
    recorded = {
        record["step"]: record["bleu"]
        for record in map(json.loads, (run_dir / "metrics.jsonl").open())
        if record["kind"] == "valid" and "bleu" in record
    }
    pairs = read_corpus(config.data.valid)
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    result = {}
    for name in names:
        folder = resolve_checkpoint(run_dir, name)
        step = read_meta(folder)["trainer"]["step"]
        if step not in recorded:
            continue
        translator = load_translator(  # as the trainer's validation decodes
            folder,
            device=pick_device(config.train.device),
            precision=config.train.precision,
        )
        fresh = sacrebleu_score(translator.translate(sources), references).value
        result[f"valid_bleu_{name}_recorded"] = round(recorded[step], 2)
        result[f"valid_bleu_{name}_fresh_load"] = round(fresh, 2)
        if fresh != recorded[step]:
            print(
                f"WARNING: step {step}: training recorded validation BLEU "
                f"{recorded[step]}, the checkpoint loaded afresh scores {fresh}"
            )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/multi30k-de-en-transformer.yaml")
    parser.add_argument("--run-dir", help="default: runs/quality-CONFIG_NAME")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--no-train", action="store_true", help="only evaluate an existing run folder"
    )
    parser.add_argument(
        "--beam", type=int, default=5, help="also score beam search (0: greedy only)"
    )
    parser.add_argument("--json", default="benchmarks/results/quality.json")
    args = parser.parse_args()

    config = load_config(args.config, args.set)
    run_dir = Path(args.run_dir or f"runs/quality-{Path(args.config).stem}")
    if not args.no_train:
        run_training(
            config, run_dir, resume=read_index(run_dir).get("latest") is not None
        )
    checkpoint = resolve_checkpoint(run_dir, "best")
    trainer = read_meta(resolve_checkpoint(run_dir, "latest"))["trainer"]
    best_step = read_meta(checkpoint)["trainer"]["step"]

    assert config.data.test is not None, "the config names no test set"
    pairs = read_corpus(config.data.test)
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    translator = load_translator(checkpoint, device="cpu")
    started = time.perf_counter()
    hypotheses = translator.translate(sources)
    seconds = time.perf_counter() - started

    rows = {
        "config": args.config,
        "checkpoint": str(checkpoint),
        "arch": config.model.arch,
        "parameters_millions": round(
            sum(p.numel() for p in translator.model.parameters()) / 1e6, 2
        ),
        "best_step": best_step,
        "steps": trainer["step"],
        "epochs_completed": trainer["epoch"],
        "train_minutes": round(trainer["elapsed_seconds"] / 60, 1),
        "test_sentences": len(sources),
        "sacrebleu": round(sacrebleu_score(hypotheses, references).value, 2),
        "bleu_tok_lc": round(tokenized_lowercase_bleu(hypotheses, references).value, 2),
        "chrf": round(chrf_score(hypotheses, references).value, 2),
        "decode_seconds_greedy": round(seconds, 1),
        **beam_rows(translator, sources, references, args.beam),
        **validation_check(run_dir, config, ["best", "latest"]),
        "machine": f"{cpu_name()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads",
        "signature": sacrebleu_score(hypotheses[:1], references[:1]).signature,
    }
    width = max(len(k) for k in rows)
    print("\n| metric | value |\n|---|---|")
    for key, value in rows.items():
        print(f"| {key:<{width}} | {value} |")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
