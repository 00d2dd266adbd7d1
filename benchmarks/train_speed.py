"""Training throughput: Rosetta's trainer step against Hugging Face Marian.

Both engines train the same shape (the bundled Transformer config: d=256, 3+3
layers, 4 heads, FFN 1024, 8k shared SentencePiece vocabulary, tied output,
fp32) on the same Multi30k batches (2,500-token budget, one shuffled order),
with the same loss (Rosetta's label-smoothed cross-entropy on the logits),
gradient clipping at 1.0 and fused Adam. Rosetta runs its real
``Trainer.train_step``; Hugging Face a ``MarianMTModel`` built from a
``MarianConfig`` of identical shape (random init).

Each measurement is its own process, so its peak memory is its own; engines are
interleaved (Rosetta, HF, Rosetta, HF, ...), each thread count in turn. The
table gives median target tokens/s and source+target tokens/s with the spread,
peak resident memory, and the fraction of the measured fp32 matrix-product
ceiling the step reaches (model FLOPs from the padded batch shapes, 3× the
forward pass).

    python benchmarks/train_speed.py --threads 1 2 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs/multi30k-de-en-transformer.yaml"
CACHE = ROOT / "runs/bench-train-speed"  # the tokenizers, trained once


def load_batches(
    steps: int, precision: str = "fp32", config_path: Path = CONFIG, *overrides: str
):
    """Config, prepared data and the example indices of ``steps`` batches.

    Every bundled config shares the tokenizer settings, so one cached pair of
    tokenizers serves them all.
    """
    from rosetta.config import load_config
    from rosetta.data.batching import make_batches
    from rosetta.train.prepare import prepare_data

    config = load_config(config_path, [f"train.precision={precision}", *overrides])
    data = prepare_data(config, CACHE, log=lambda _: None)
    rng = np.random.default_rng(0)
    batches = make_batches(data.train, config.train.batch_tokens, rng)
    return config, data, batches[:steps]


def step_flops(batch, d: int, ffn: int, layers: int, vocab: int) -> float:
    """Matrix-product FLOPs of one training step (forward × 3) on padded shapes."""
    b, s = batch.src.shape
    t = batch.tgt_in.shape[1]
    ns, nt = b * s, b * t
    encoder = 8 * ns * d * d + 4 * ns * d * ffn + 4 * b * s * s * d
    decoder = (
        8 * nt * d * d
        + 4 * b * t * t * d  # self-attention
        + 4 * nt * d * d
        + 4 * ns * d * d
        + 4 * b * t * s * d  # cross-attention
        + 4 * nt * d * ffn
    )
    output = 2 * nt * d * vocab
    return 3.0 * (layers * (encoder + decoder) + output)


def rosetta_step(config, data):
    from rosetta.models.build import build_model
    from rosetta.train.trainer import Trainer
    from rosetta.train.translation_task import TranslationTask

    vocab = len(data.tokenizers.tgt)
    model = build_model(config.model, len(data.tokenizers.src), vocab)
    folder = Path(tempfile.mkdtemp())
    cpu = torch.device("cpu")
    task = TranslationTask(config, model, data.tokenizers, data.train, [], [], cpu)
    trainer = Trainer(config, folder, model, task, cpu)

    return trainer.train_step  # collates the batch, as in training


def marian_step(config, data):
    from transformers import MarianMTModel

    from peers import marian_config
    from rosetta.data.batching import collate
    from rosetta.data.vocab import PAD_ID
    from rosetta.precision import autocast
    from rosetta.train.loss import label_smoothed_cross_entropy
    from rosetta.train.trainer import make_adam

    m = config.model
    vocab = len(data.tokenizers.tgt)
    marian = MarianMTModel(
        marian_config(
            vocab=vocab,
            d_model=m.d_model,
            encoder_layers=m.encoder_layers,
            decoder_layers=m.decoder_layers,
            heads=m.heads,
            d_ff=m.d_ff,
            max_positions=m.max_positions,
            dropout=m.dropout,
            attention_dropout=m.attention_dropout,
        )
    )
    marian.train()
    optimizer = make_adam(marian, config.train)
    cfg = config.train

    def step(indices):
        batch = collate([data.train[i] for i in indices])
        with autocast(torch.device("cpu"), cfg.precision):
            logits = marian(
                input_ids=batch.src,
                attention_mask=batch.src_mask.long(),
                decoder_input_ids=batch.tgt_in,
                decoder_attention_mask=(batch.tgt_in != PAD_ID).long(),
            ).logits
        loss_sum, _, tokens = label_smoothed_cross_entropy(
            logits, batch.tgt_out, cfg.label_smoothing, PAD_ID
        )
        optimizer.zero_grad(set_to_none=True)
        (loss_sum / tokens).backward()
        torch.nn.utils.clip_grad_norm_(marian.parameters(), cfg.clip_norm)
        optimizer.step()

    return step


def matmul_ceiling(seconds: float = 2.0, n: int = 2048) -> float:
    """Best fp32 GFLOP/s of square matrix products at this thread count."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best, stop = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < stop:
        began = time.perf_counter()
        torch.mm(a, b)
        best = max(best, 2 * n**3 / (time.perf_counter() - began) / 1e9)
    return best


def worker(engine: str, threads: int, warmup: int, steps: int, precision: str) -> None:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    from rosetta.data.batching import collate

    config, data, batches = load_batches(warmup + steps, precision)
    step = (rosetta_step if engine == "rosetta" else marian_step)(config, data)
    m = config.model
    vocab = len(data.tokenizers.tgt)
    target = source = 0
    flops = 0.0
    for indices in batches[warmup:]:  # what the timed steps compute
        batch = collate([data.train[i] for i in indices])
        target += batch.num_tgt_tokens
        source += int(batch.src_mask.sum())
        flops += step_flops(batch, m.d_model, m.d_ff, m.encoder_layers, vocab)
    for indices in batches[:warmup]:
        step(indices)
    began = time.perf_counter()
    for indices in batches[warmup:]:
        step(indices)
    elapsed = time.perf_counter() - began
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "engine": engine,
                "threads": threads,
                "target_tokens_per_s": target / elapsed,
                "tokens_per_s": (source + target) / elapsed,
                "gflops": flops / elapsed / 1e9,
                "peak_mib": peak_mib,
                "seconds": elapsed,
            }
        )
    )


def run_worker(engine: str, threads: int, args) -> dict:
    command = [
        sys.executable,
        __file__,
        "--worker",
        engine,
        "--threads",
        str(threads),
        "--warmup",
        str(args.warmup),
        "--steps",
        str(args.steps),
        "--precision",
        args.precision,
    ]
    env = os.environ | {"OMP_NUM_THREADS": str(threads)}
    if args.preload:
        env["LD_PRELOAD"] = args.preload
    output = subprocess.run(
        command, env=env, capture_output=True, text=True, check=False
    )
    if output.returncode != 0:
        raise SystemExit(f"{engine} worker failed:\n{output.stderr[-3000:]}")
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument(
        "--preload", default=None, help="LD_PRELOAD for both, e.g. jemalloc"
    )
    parser.add_argument(
        "--worker", choices=["rosetta", "marian"], help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--precision",
        choices=["fp32", "bf16"],
        default="fp32",
        help="both engines: bf16 runs the forward pass under torch.autocast",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.threads[0], args.warmup, args.steps, args.precision)
        return

    from quality_multi30k import cpu_name

    load_batches(1)  # trains the tokenizers once, outside the timed runs
    results: dict[int, dict[str, list[dict]]] = {}
    ceilings: dict[int, float] = {}
    for threads in args.threads:
        torch.set_num_threads(threads)
        ceilings[threads] = matmul_ceiling()
        results[threads] = {"rosetta": [], "marian": []}
        for repeat in range(args.repeats):
            for engine in ("rosetta", "marian"):
                result = run_worker(engine, threads, args)
                results[threads][engine].append(result)
                print(
                    f"threads {threads}, repeat {repeat + 1}, {engine}: "
                    f"{result['target_tokens_per_s']:.0f} target tokens/s",
                    file=sys.stderr,
                    flush=True,
                )

    print(
        f"\n{cpu_name()}; {args.steps} timed steps after {args.warmup} warm-up, "
        f"median of {args.repeats} (spread); allocator: {args.preload or 'glibc'}; "
        f"precision {args.precision}\n"
    )
    print(
        "| threads | engine | target tok/s | src+tgt tok/s | peak MiB "
        "| GFLOP/s | of ceiling | Rosetta ÷ HF |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for threads, by_engine in results.items():
        medians = {
            engine: statistics.median(r["target_tokens_per_s"] for r in runs)
            for engine, runs in by_engine.items()
        }
        for engine, runs in by_engine.items():
            rates = [r["target_tokens_per_s"] for r in runs]
            gflops = statistics.median(r["gflops"] for r in runs)
            ratio = (
                f"{medians['rosetta'] / medians['marian']:.2f}"
                if engine == "rosetta"
                else ""
            )
            print(
                f"| {threads} | {'Rosetta' if engine == 'rosetta' else 'HF Marian'} "
                f"| {medians[engine]:.0f} ({min(rates):.0f}–{max(rates):.0f}) "
                f"| {statistics.median(r['tokens_per_s'] for r in runs):.0f} "
                f"| {statistics.median(r['peak_mib'] for r in runs):.0f} "
                f"| {gflops:.1f} | {gflops / ceilings[threads]:.0%} | {ratio} |"
            )
    ceiling_text = ", ".join(f"{t} thread(s) {c:.0f}" for t, c in ceilings.items())
    print(f"\nfp32 matrix-product ceiling (2048² products), GFLOP/s: {ceiling_text}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"ceilings": ceilings, "results": results}, indent=2)
        )


if __name__ == "__main__":
    main()
