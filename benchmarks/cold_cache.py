"""What a decoding step's small operations cost on this CPU, and why the packed
step lays its weights out as it does.

1. A 64 KB ``sum``: warm; right after 26 MB (a decoder's weights) were streamed
   through the cache; and after that stream followed by the same operation on
   other data (its code fetched again, its own data still cold).
2. Products at 32 rows with 256 x 256-1024 weights, warm: ``F.linear`` (weight
   stored (d_out, d_in)) against ``addmm`` on the weight stored transposed and
   contiguous, the packed step's layout.
3. The 8000 x 256 vocabulary product after the 26 MB stream: ``x W^T`` against
   ``W x^T`` transposed back, at 8, 32 and 64 rows.

Medians of interleaved repeats, one thread.

    python benchmarks/cold_cache.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from quality_multi30k import cpu_name

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


def main() -> None:
    torch.set_num_threads(1)
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
    print(f"{cpu_name()}, one thread, medians of {REPEATS}\n")
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

    vocab = torch.randn(8000, 256)
    print("\n| vocabulary product, cold | x Wᵀ, µs | (W xᵀ)ᵀ, µs | ratio |")
    print("|---|---|---|---|")
    for n in [8, 32, 64]:
        x = torch.randn(n, 256)
        us = median_us(
            {
                "x W^T": lambda x=x: F.linear(x, vocab),
                "W x^T": lambda x=x: (
                    torch.mm(vocab, x.t().contiguous()).t().contiguous()
                ),
            },
            stream,
        )
        print(
            f"| {n} rows | {us['x W^T']:.0f} | {us['W x^T']:.0f} "
            f"| {us['x W^T'] / us['W x^T']:.2f}× |"
        )


if __name__ == "__main__":
    main()
