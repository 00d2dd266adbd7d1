"""What a decoding step's small operations cost on this CPU, and why the packed
step lays its weights out as it does.

1. A 64 KB ``sum``: warm; right after 26 MB (a decoder's weights) were streamed
   through the cache; and after that stream followed by the same operation on
   other data (its code fetched again, its own data still cold).
2. Products at 32 rows with 256 x 256-1024 weights, warm: ``F.linear`` (weight
   stored (d_out, d_in)) against ``addmm`` on the weight stored transposed and
   contiguous, the packed step's layout.
3. Every product of the decoder step after the 26 MB stream, by row count:
   ``F.linear`` on W as stored, ``addmm`` on W^T stored, and for the 8000 x 256
   vocabulary ``W x^T`` transposed back; which the packed step takes at that
   row count (``rosetta.families.transformer.fast.step``), and which was fastest.

Medians of interleaved repeats, one thread (``--threads`` for more).

    python benchmarks/cold_cache.py [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from quality_multi30k import cpu_name
from rosetta.families.transformer.fast.step import PackedVocabulary

ROW_COUNTS = [1, 2, 3, 4, 8, 16, 32, 64, 160]
VOCABULARY = 8000  # words: the vocabulary product's output width

REPEATS = 101


def median_us(
    functions: dict[str, Callable[[], object]], before: Callable[[], object]
) -> dict[str, float]:
    """Median microseconds of each function, interleaved, ``before`` untimed."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(REPEATS):
        for name, function in functions.items():
            before()
            began = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - began)
    return {name: statistics.median(t) * 1e6 for name, t in times.items()}


def step_takes(d_out: int, rows: int) -> str:
    """The layout the packed step uses for this product at this row count."""
    if d_out != VOCABULARY or rows == 1:
        return "addmm"
    return "W xᵀ" if rows in PackedVocabulary.TRANSPOSED_ROWS else "F.linear"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    threads = parser.parse_args().threads
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    weights = torch.randn(26 * 2**20 // 4)  # 26 MB

    def stream() -> None:
        weights.add_(1.0)

    small, other = torch.randn(16 * 1024), torch.randn(16 * 1024)  # 64 KB each
    rows = [("64 KB sum, warm", median_us({"": small.sum}, lambda: None)[""])]
    rows.append(
        ("64 KB sum, after 26 MB streamed", median_us({"": small.sum}, stream)[""])
    )
    rows.append(
        (
            "64 KB sum, after 26 MB streamed and a sum of other data",
            median_us({"": small.sum}, lambda: (stream(), other.sum()))[""],
        )
    )
    print(f"{cpu_name()}, {threads} thread(s), medians of {REPEATS}\n")
    print("| operation | µs |")
    print("|---|---|")
    for name, us in rows:
        print(f"| {name} | {us:.1f} |")

    print("\n| product, 32 rows, warm | F.linear, µs | addmm on Wᵀ, µs | ratio |")
    print("|---|---|---|---|")
    for d_out, d_in in [(256, 256), (768, 256), (1024, 256), (256, 1024)]:
        x, weight, bias = (
            torch.randn(32, d_in),
            torch.randn(d_out, d_in),
            torch.randn(d_out),
        )
        weight_t = weight.t().contiguous()
        us = median_us(
            {
                "linear": lambda x=x, w=weight, b=bias: F.linear(x, w, b),
                "addmm": lambda x=x, w=weight_t, b=bias: torch.addmm(b, x, w),
            },
            lambda: None,
        )
        print(
            f"| {d_in} → {d_out} | {us['linear']:.0f} | {us['addmm']:.0f} "
            f"| {us['linear'] / us['addmm']:.2f}× |"
        )

    print(
        "\n| product, weights cold | rows | F.linear, µs | addmm on Wᵀ, µs "
        "| (W xᵀ)ᵀ, µs | fastest | the step takes |"
    )
    print("|---|---|---|---|---|---|---|")
    for d_out, d_in in [(768, 256), (1024, 256), (256, 1024), (VOCABULARY, 256)]:
        weight, bias = torch.randn(d_out, d_in), torch.randn(d_out)
        weight_t = weight.t().contiguous()
        for n in ROW_COUNTS:
            x = torch.randn(n, d_in)
            functions = {
                "F.linear": lambda x=x, w=weight, b=bias: F.linear(x, w, b),
                "addmm": lambda x=x, w=weight_t, b=bias: torch.addmm(b, x, w),
            }
            if d_out == VOCABULARY:
                functions["W xᵀ"] = lambda x=x, w=weight, b=bias: (
                    torch.mm(w, x.t().contiguous()).t().contiguous().add_(b)
                )
            us = median_us(functions, stream)
            transposed = f"{us['W xᵀ']:.0f}" if "W xᵀ" in us else ""
            print(
                f"| {d_in} → {d_out} | {n} | {us['F.linear']:.0f} | {us['addmm']:.0f} "
                f"| {transposed} | {min(us, key=us.__getitem__)} "
                f"| {step_takes(d_out, n)} |"
            )


if __name__ == "__main__":
    main()
