"""Context fragmentation, measured: a Transformer-XL language model scored
with more and less memory, beside the same model trained without memory, and
the cost of scoring with the cached memory against recomputing the context.

Table 1: validation loss (nats per character) and bits per character of the
whole validation text, read in order (one stream), with memory 0, L, 2L, 4L
and 8L positions per layer, for the XL run and the baseline run.

Table 2: scoring speed on the first ``--speed-chars`` characters, for
contexts of M = L and 4L positions. The cached path reads each segment of L
once and attends to the memory the previous segment left (M positions). A
Transformer without recurrence must recompute that context: for every
segment it reads the M + L characters that end it and scores the last L.
Same model, same context length, interleaved repeats, medians.

    python benchmarks/lm_memory.py --run-dir runs/tinyshakespeare-char-xl-cpu \\
        --baseline runs/tinyshakespeare-char-xl-cpu-nomem
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from torch.nn import functional as F

from quality_multi30k import cpu_name
from rosetta import LanguageModel
from rosetta.data.text import encode_text, read_text
from rosetta.inference.text_scoring import score_text
from rosetta.jobs.loading import load_language_model

VALID = Path(__file__).parent.parent / "data/tinyshakespeare/valid.txt.gz"


@torch.no_grad()
def score_recomputing(model: LanguageModel, ids: list[int], memory: int) -> float:
    """Mean loss when every segment is read with its M preceding tokens
    recomputed from scratch, no cache: what a plain Transformer does."""
    length = model.lm.segment_length
    tokens = torch.tensor(ids, device=model.device)
    nll, count = 0.0, 0
    for start in range(0, len(ids) - 1, length):
        end = min(start + length, len(ids) - 1)
        first = max(0, start - memory)
        features, _ = model.model(tokens[None, first:end], None, 0)
        logits = model.model.output_proj(features[0, start - first :]).float()
        nll += float(
            F.cross_entropy(logits, tokens[start + 1 : end + 1], reduction="sum")
        )
        count += end - start
    return nll / count


def timed(function) -> tuple[float, float]:
    began = time.perf_counter()
    value = function()
    return value, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True, help="the Transformer-XL run")
    parser.add_argument("--baseline", help="the same model trained without memory")
    parser.add_argument("--text", default=str(VALID), help="text to score")
    parser.add_argument(
        "--multiples",
        type=int,
        nargs="*",
        default=[0, 1, 2, 4, 8],
        help="memories to score with, in segments (none: only the speed)",
    )
    parser.add_argument("--speed-chars", type=int, default=20000)
    parser.add_argument(
        "--speed-multiples",
        type=int,
        nargs="+",
        default=[1, 4],
        help="contexts to time, in segments",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", default="benchmarks/results/lm_memory.json")
    parser.add_argument("--plot", default="docs/images/lm-memory.png")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    text = read_text(Path(args.text))
    runs = {"transformer-xl": args.run_dir}
    if args.baseline:
        runs["no memory"] = args.baseline
    rows = []
    print("| model | memory | loss (nats/char) | bpc |\n|---|---|---|---|")
    for name, run in runs.items():
        model = load_language_model(run, device="cpu")
        length = model.lm.segment_length
        for multiple in args.multiples:
            score = model.score(text, memory_length=multiple * length)
            row = {
                "model": name,
                "trained_memory": model.lm.memory_length,
                "memory": multiple * length,
                "loss": round(score.loss, 4),
                "bpc": round(score.bits_per_token, 4),
            }
            rows.append(row)
            print(
                f"| {name} (trained with {row['trained_memory']}) | "
                f"{row['memory']} ({multiple}L) | {row['loss']:.4f} | "
                f"{row['bpc']:.4f} |",
                flush=True,
            )

    model = load_language_model(args.run_dir, device="cpu")
    length = model.lm.segment_length
    ids = encode_text(model.tokenizer, text[: args.speed_chars])
    chars = len(ids) - 1
    speed = []
    print(
        f"\nscoring {chars:,} characters, segment {length}, "
        f"{args.repeats} interleaved repeats, median [min-max]:\n"
        "| context before each segment | cached memory s | recomputed window s "
        "| cached chars/s | ratio | loss cached / recomputed |\n"
        "|---|---|---|---|---|---|"
    )
    for multiple in args.speed_multiples:
        memory = multiple * length
        cached_times, recomputed_times = [], []
        for _ in range(args.repeats):  # interleaved
            cached, seconds = timed(
                lambda m=memory: (
                    score_text(model.model, ids, length, m, model.device).loss
                )
            )
            cached_times.append(seconds)
            recomputed, seconds = timed(
                lambda m=memory: score_recomputing(model, ids, m)
            )
            recomputed_times.append(seconds)
        cached_s = statistics.median(cached_times)
        recomputed_s = statistics.median(recomputed_times)
        speed.append(
            {
                "context": memory,
                "cached_seconds": cached_times,
                "recomputed_seconds": recomputed_times,
                "ratio": recomputed_s / cached_s,
                "cached_loss": cached,
                "recomputed_loss": recomputed,
            }
        )
        print(
            f"| {memory} ({multiple}L) | {cached_s:.2f} "
            f"[{min(cached_times):.2f}-{max(cached_times):.2f}] | "
            f"{recomputed_s:.2f} "
            f"[{min(recomputed_times):.2f}-{max(recomputed_times):.2f}] | "
            f"{chars / cached_s:,.0f} | {recomputed_s / cached_s:.2f}x | "
            f"{cached:.4f} / {recomputed:.4f} |",
            flush=True,
        )
    result = {
        "machine": f"{cpu_name()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads",
        "text": args.text,
        "rows": rows,
        "speed": {"characters": chars, "segment": length, "rows": speed},
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1))
    if rows:
        plot(rows, Path(args.plot))
    print(f"\n{args.json}, {args.plot}")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.6))
    for name in dict.fromkeys(row["model"] for row in rows):
        mine = [row for row in rows if row["model"] == name]
        axes.plot(
            [row["memory"] for row in mine],
            [row["loss"] for row in mine],
            marker="o",
            label=f"{name} (trained with memory {mine[0]['trained_memory']})",
        )
    axes.set_xlabel("memory when scoring (positions per layer)")
    axes.set_ylabel("validation loss (nats/char)")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
