"""Recurrent models: training speed of the fused path against the reference path.

``rnn_impl: fused`` runs torch's fused GRU/LSTM kernels (oneDNN on the CPU,
cuDNN on a GPU) over packed sequences; ``rnn_impl: reference`` runs the cells
written from their equations, step by step in Python. Both train the same model (the
bundled recurrent configs, torch's GRU form) with the real ``Trainer.train_step``
on the same Multi30k batches (2,500-token budget, one shuffled order). Runs
are interleaved (fused, reference, fused, ...); the table gives median target
tokens/s, the spread, and fused ÷ reference.

    python benchmarks/rnn_speed.py --threads 1 --steps 4 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from quality_multi30k import cpu_name
from rosetta.data.batching import collate
from rosetta.data.encoded_pairs import EncodedPairs
from rosetta.families import build_model, family_of
from rosetta.train.trainer import Trainer
from rosetta.train.translation_task import TranslationTask
from train_speed import ROOT, load_batches

CONFIGS = ["multi30k-de-en-gru", "multi30k-de-en-lstm", "multi30k-de-en-gru-attention"]


def target_tokens_per_s(prepared, impl: str, warmup: int) -> float:
    """Train on ``prepared`` (config, data, batches) with ``model.rnn_impl=impl``."""
    loaded, data, batches = prepared
    config = loaded.model_copy(
        update={"model": loaded.model.model_copy(update={"rnn_impl": impl})}
    )
    torch.manual_seed(0)
    vocab = len(data.tokenizers.tgt)
    model = build_model(config.model, len(data.tokenizers.src), vocab)
    cpu = torch.device("cpu")
    translator = family_of(config.model).inference
    no_pairs = EncodedPairs.from_examples([])
    task = TranslationTask(
        config, model, replace(data, valid=no_pairs, valid_pairs=[]), cpu, translator
    )
    trainer = Trainer(config, Path(tempfile.mkdtemp()), model, task, cpu)
    for indices in batches[:warmup]:
        trainer.train_step([indices])
    tokens = sum(
        collate([data.train[i] for i in b]).num_tgt_tokens for b in batches[warmup:]
    )
    began = time.perf_counter()
    for indices in batches[warmup:]:
        trainer.train_step([indices])
    return tokens / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=CONFIGS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    rows = []
    for name in args.configs:
        config_path = ROOT / "configs" / f"{name}.yaml"
        prepared = load_batches(args.warmup + args.steps, "fp32", config_path)
        rates: dict[str, list[float]] = {"fused": [], "reference": []}
        for repeat in range(args.repeats):
            for impl in rates:
                rates[impl].append(target_tokens_per_s(prepared, impl, args.warmup))
                print(
                    f"{name} {impl} repeat {repeat + 1}: {rates[impl][-1]:.0f} tok/s",
                    flush=True,
                )
        rows.append((name, rates))

    print(
        f"\n{cpu_name()}, {args.threads} thread(s), {args.steps} timed steps "
        f"after {args.warmup}, median of {args.repeats} (spread)\n"
    )
    print("| config | fused tok/s | reference tok/s | fused ÷ reference |")
    print("|---|---|---|---|")
    for name, rates in rows:
        fused, reference = (statistics.median(rates[k]) for k in ("fused", "reference"))
        cells = [
            f"{statistics.median(v):.0f} ({min(v):.0f}–{max(v):.0f})"
            for v in (rates["fused"], rates["reference"])
        ]
        print(f"| `{name}` | {cells[0]} | {cells[1]} | {fused / reference:.1f}× |")


if __name__ == "__main__":
    main()
