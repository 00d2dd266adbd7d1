"""Time one Adam update on the default Transformer: per-parameter loop, foreach,
and the fused kernel the trainer uses. Runs are interleaved; medians and spread.

    python benchmarks/adam_step.py --repeats 8 --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from rosetta.families.transformer.build import build_transformer
from rosetta.families.transformer.config import TransformerConfig
from rosetta.families.transformer.positions.base import scheme_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    section = TransformerConfig()  # the default sizes, shared embeddings
    model = build_transformer(section, scheme_of(section.positions), 8000, 8000)
    for parameter in model.parameters():
        parameter.grad = torch.randn_like(parameter)
    optimizers = {
        "loop": torch.optim.Adam(model.parameters(), foreach=False),
        "foreach": torch.optim.Adam(model.parameters(), foreach=True),
        "fused": torch.optim.Adam(model.parameters(), fused=True),
    }
    for optimizer in optimizers.values():  # allocate the moments first
        optimizer.step()
    times: dict[str, list[float]] = {name: [] for name in optimizers}
    for _ in range(args.repeats):
        for name, optimizer in optimizers.items():
            started = time.perf_counter()
            optimizer.step()
            times[name].append((time.perf_counter() - started) * 1000)

    loop = statistics.median(times["loop"])
    print(
        f"Adam update, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M "
        f"parameters, {args.threads} thread(s), {args.repeats} interleaved runs\n"
    )
    print("| implementation | median ms | min ms | max ms | speed-up vs loop |")
    print("|---|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"| {name} | {median:.1f} | {min(values):.1f} | {max(values):.1f} "
            f"| {loop / median:.2f}x |"
        )


if __name__ == "__main__":
    main()
