"""How cost grows with sentence length: Transformer against recurrent models.

The textbook complexity table: self-attention costs O(L²·d) per layer and an RNN
O(L·d²), but the RNN's L steps are sequential. For each bundled model shape
(random weights; speed only) and each length L from 8 to 512, this measures:

- the time of one training step (forward, backward, Adam) on a batch of
  ``--batch`` pairs with L source and L target tokens, and that time per
  target token;
- the time per generated token when decoding L tokens step by step (the
  Transformer with its key/value cache, the RNNs with their state), forcing
  all L steps (no early ``</s>``), on ``--batch`` sentences of L source tokens.

It prints a table, writes JSON and a log-log plot.

    python benchmarks/length_scaling.py --threads 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from matplotlib.figure import Figure

from harness import ROOT
from quality_multi30k import cpu_name
from rosetta.data.vocab import BOS_ID, PAD_ID
from rosetta.families import build_model
from rosetta.jobs.run_config import load_config
from rosetta.train.loss import label_smoothed_cross_entropy

MODELS = {
    "Transformer": "multi30k-de-en-transformer",
    "GRU + attention": "multi30k-de-en-gru-attention",
    "LSTM": "multi30k-de-en-lstm",
}
VOCAB = 8000


def timed(function, repeats: int) -> float:
    """Median seconds of ``function()`` over ``repeats`` calls, after one warm-up."""
    function()
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        function()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def training_step(model, optimizer, batch: int, length: int):
    src = torch.randint(4, VOCAB, (batch, length))
    tgt = torch.randint(4, VOCAB, (batch, length + 1))
    tgt[:, 0] = BOS_ID
    src_mask = torch.ones(batch, length, dtype=torch.bool)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]

    def step():
        model.train()
        logits = model.output_proj(model(src, src_mask, tgt_in, tgt_in != PAD_ID))
        loss_sum, _, tokens = label_smoothed_cross_entropy(logits, tgt_out, 0.1, PAD_ID)
        optimizer.zero_grad(set_to_none=True)
        (loss_sum / tokens).backward()
        optimizer.step()

    return step


def decoding(model, batch: int, length: int):
    src = torch.randint(4, VOCAB, (batch, length))
    src_mask = torch.ones(batch, length, dtype=torch.bool)

    @torch.no_grad()
    def decode():
        model.eval()
        state = model.init_state(model.encode(src, src_mask), src_mask)
        prev = torch.full((batch,), BOS_ID)
        for _ in range(length):
            log_probs, state = model.step(prev, state)
            prev = log_probs.argmax(dim=-1)

    return decode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lengths", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256, 512]
    )
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks/results")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as `rosetta train` does (train.flush_denormals)
    torch.manual_seed(0)

    results = []
    for name, config_name in MODELS.items():
        config = load_config(ROOT / "configs" / f"{config_name}.yaml")
        model = build_model(config.model, VOCAB, VOCAB)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        parameters = sum(p.numel() for p in model.parameters())
        for length in args.lengths:
            # Fewer repeats where a run is long; the median needs at least one.
            repeats = max(1, args.repeats if length <= 128 else args.repeats // 2)
            train = timed(training_step(model, optimizer, args.batch, length), repeats)
            decode = timed(decoding(model, args.batch, length), repeats)
            row = {
                "model": name,
                "parameters": parameters,
                "length": length,
                "train_step_ms": train * 1000,
                "train_ms_per_token": train * 1000 / (args.batch * length),
                "decode_ms_per_token": decode * 1000 / length,
            }
            results.append(row)
            print(
                f"{name:16} L={length:4}: step {row['train_step_ms']:9.1f} ms, "
                f"decode {row['decode_ms_per_token']:7.2f} ms/token",
                flush=True,
            )

    print(
        f"\n{cpu_name()}, {args.threads} thread(s), batch {args.batch}, "
        f"random weights of the bundled shapes, medians\n"
    )
    lengths = args.lengths
    print("| model | measure | " + " | ".join(f"L={n}" for n in lengths) + " |")
    print("|---|---|" + "---|" * len(lengths))
    for name in MODELS:
        rows = [r for r in results if r["model"] == name]
        for key, label in (
            ("train_step_ms", "train step, ms"),
            ("train_ms_per_token", "train, µs per target token"),
            ("decode_ms_per_token", "decode, ms per token"),
        ):
            scale = 1000 if key == "train_ms_per_token" else 1
            cells = " | ".join(f"{r[key] * scale:.1f}" for r in rows)
            print(f"| {name} | {label} | {cells} |")

    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "length_scaling.json").write_text(
        json.dumps(
            {"settings": vars(args) | {"output": str(args.output)}, "results": results},
            indent=2,
        )
    )
    figure = Figure(figsize=(11, 4))
    train_axes, decode_axes = figure.subplots(1, 2)
    for name in MODELS:
        rows = [r for r in results if r["model"] == name]
        xs = [r["length"] for r in rows]
        train_axes.plot(
            xs, [r["train_ms_per_token"] * 1000 for r in rows], marker="o", label=name
        )
        decode_axes.plot(
            xs, [r["decode_ms_per_token"] for r in rows], marker="o", label=name
        )
    train_axes.set_title("training: time per target token")
    train_axes.set_ylabel("µs per token")
    decode_axes.set_title("decoding: time per generated token")
    decode_axes.set_ylabel("ms per token")
    for axes in (train_axes, decode_axes):
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel("sentence length L (tokens)")
        axes.grid(alpha=0.3, which="both")
        axes.legend()
    figure.savefig(args.output / "length_scaling.png", dpi=130, bbox_inches="tight")
    print(f"\nwrote {args.output / 'length_scaling.png'} and length_scaling.json")


if __name__ == "__main__":
    main()
