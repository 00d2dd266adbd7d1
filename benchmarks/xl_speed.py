"""Transformer-XL against a plain causal Transformer: time per training update.

Both language models have the shape of ``configs/tinyshakespeare-char-xl-cpu.yaml``
(4 pre-norm layers of width 192, 4 heads, feed-forward 768, a 65-character
vocabulary, tied output) and train on the same number of tokens per update
(16 rows of 64). The plain model is the usual causal Transformer (nanoGPT's
shape): learned absolute positions, each 64-token row read alone, attention
through PyTorch's ``scaled_dot_product_attention`` with its causal mask. The
XL is Rosetta's: relative attention over the row and the 64 positions before
it (memory), so each query sees up to twice as many keys, and the memory's
keys and values are projected in every layer.

An update is the whole step: forward, the summed cross-entropy, backward,
gradient clipping at 1.0 and fused Adam. The models take turns in blocks of
``--updates`` updates, ``--rounds`` times; the table gives the median
milliseconds per update with the range and the XL's time as a multiple of
the plain model's (the goal: at most 1.1). A second table counts each
update's arithmetic (forward and backward, ``torch.utils.flop_counter``):
the time ratio no implementation of these models can go below.

    python benchmarks/xl_speed.py --threads 1 2
    python benchmarks/xl_speed.py --threads 1 --busy 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from harness import competing_load
from rosetta.families.transformer_xl.model import MemoryTransformerLM
from rosetta.nn.feedforward import PositionwiseFeedForward
from rosetta.nn.init import xavier_linear_layers

VOCAB, LAYERS, WIDTH, HEADS, D_FF = 65, 4, 192, 4, 768
ROWS, LENGTH = 16, 64


class CausalLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH, bias=False)
        self.out = nn.Linear(WIDTH, WIDTH, bias=False)
        self.ffn = PositionwiseFeedForward(WIDTH, D_FF)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, length, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(WIDTH, dim=-1)
        q, k, v = (t.view(n, length, HEADS, -1).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(n, length, WIDTH))
        return x + self.ffn(self.norm2(x))


class CausalLM(nn.Module):
    """The baseline: a plain causal Transformer language model."""

    def __init__(self):
        super().__init__()
        self.token = nn.Embedding(VOCAB, WIDTH)
        self.position = nn.Embedding(LENGTH, WIDTH)
        self.layers = nn.ModuleList(CausalLayer() for _ in range(LAYERS))
        self.final_norm = nn.LayerNorm(WIDTH)
        self.output_proj = nn.Linear(WIDTH, VOCAB, bias=False)
        self.output_proj.weight = self.token.weight
        xavier_linear_layers(self.layers)

    def forward(self, tokens: torch.Tensor, memory: None = None) -> tuple:
        positions = torch.arange(tokens.size(1), device=tokens.device)
        x = self.token(tokens) + self.position(positions)
        for layer in self.layers:
            x = layer(x)
        return self.final_norm(x), None


def updater(model: nn.Module) -> Callable[[], None]:
    """One training update of ``model`` on random text, memory carried."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    generator = torch.Generator().manual_seed(0)
    carried = {"memory": None}

    def update() -> None:
        tokens = torch.randint(VOCAB, (ROWS, LENGTH + 1), generator=generator)
        features, carried["memory"] = model(tokens[:, :-1], carried["memory"])
        logits = model.output_proj(features)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return update


def models() -> dict[str, nn.Module]:
    shape = dict(layers=LAYERS, d_model=WIDTH, heads=HEADS, d_ff=D_FF, dropout=0.0)
    return {
        "plain causal (SDPA)": CausalLM(),
        "Transformer-XL": MemoryTransformerLM(VOCAB, **shape, memory_length=LENGTH),
        "XL without memory": MemoryTransformerLM(VOCAB, **shape, memory_length=0),
    }


def gflop_per_update(model: nn.Module) -> float:
    """Forward and backward of one update with the memory full, counted."""
    generator = torch.Generator().manual_seed(0)
    memory = None
    for _ in range(2):  # the second update reads the first one's memory
        tokens = torch.randint(VOCAB, (ROWS, LENGTH + 1), generator=generator)
        with FlopCounterMode(display=False) as counter:
            features, memory = model(tokens[:, :-1], memory)
            logits = model.output_proj(features)
            targets = tokens[:, 1:].reshape(-1)
            F.cross_entropy(logits.reshape(-1, VOCAB), targets).backward()
    return counter.get_total_flops() / 1e9


def measure(threads: int, updates: int, rounds: int) -> dict[str, list[float]]:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    steps = {name: updater(model.train()) for name, model in models().items()}
    for step in steps.values():  # warm-up: allocations, the XL's memory
        for _ in range(3):
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(updates):
                step()
            times[name].append(1000 * (time.perf_counter() - start) / updates)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound processes")
    args = parser.parse_args()
    print(f"torch {torch.__version__}; busy: {args.busy} processes beside")
    print("| threads | model | ms per update | × plain |")
    print("|---|---|---|---|")
    with competing_load(args.busy):
        for threads in args.threads:
            times = measure(threads, args.updates, args.rounds)
            plain = statistics.median(times["plain causal (SDPA)"])
            for name, values in times.items():
                median = statistics.median(values)
                print(f"| {threads} | {name} | {median:.1f} "
                      f"({min(values):.1f}–{max(values):.1f}) | "
                      f"{median / plain:.2f} |")  # fmt: skip
    counted = {name: gflop_per_update(model) for name, model in models().items()}
    print("\n| model | GFLOP per update | × plain |")
    print("|---|---|---|")
    for name, gflop in counted.items():
        ratio = gflop / counted["plain causal (SDPA)"]
        print(f"| {name} | {gflop:.2f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
