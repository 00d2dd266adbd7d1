"""Rosetta's hand-written fast pieces against the torch code they replace.

Each row times both on the same input, interleaved (ours, torch, ours, ...),
and gives the medians and their ratio:

- dropout, forward + backward, on (2500, 256) and (2500, 1024) float32
  activations: ``rosetta.nn.dropout`` against ``torch.nn.functional.dropout``;
- the label-smoothed loss and its gradient on (100, 25, 8000) logits: the
  one-pass gradient against autograd through the same formula;
- the output projection (256 -> 8000) and that loss, forward and backward:
  ``projected_label_smoothed_cross_entropy`` against ``F.linear`` followed by
  the loss;
- a search step's token choice on (160, 8000) log-probabilities:
  ``top_k_rows`` (k = 5) against ``torch.topk``, ``argmax_rows`` against
  ``torch.argmax``;
- a training step of the LSTM without attention at L = 256, batch 8, with
  denormal floats flushed to zero and without.

    python benchmarks/components.py --threads 1
    python benchmarks/components.py --device cuda

With ``--device cuda`` every piece runs on the GPU (Rosetta's dropout as its
16-bit draw, which ``rosetta.nn.dropout`` leaves to torch there), the clocks are
read after ``torch.cuda.synchronize(DEVICE)``, and the LSTM row, a CPU matter, is
left out: which of the pieces pays on the GPU.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from harness import ROOT, synchronize
from length_scaling import VOCAB, training_step
from quality_multi30k import device_name
from rosetta.families import build_model
from rosetta.jobs.run_config import load_config
from rosetta.nn.dropout import dropout, dropout_mask
from rosetta.search.topk import argmax_rows, top_k_rows
from rosetta.train.loss import (
    label_smoothed_cross_entropy,
    projected_label_smoothed_cross_entropy,
)

DEVICE = torch.device("cpu")  # --device


def compare(ours: Callable, theirs: Callable, repeats: int) -> tuple[float, float]:
    """Median seconds of each, interleaved, after one warm-up call each."""
    ours(), theirs()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for function, record in zip((ours, theirs), times, strict=True):
            synchronize(DEVICE)
            began = time.perf_counter()
            function()
            synchronize(DEVICE)
            record.append(time.perf_counter() - began)
    return statistics.median(times[0]), statistics.median(times[1])


def sixteen_bit_dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    """Rosetta's dropout draw on any device (``dropout`` takes it on the CPU)."""
    if DEVICE.type == "cpu":
        return dropout(x, p)
    return x * dropout_mask(x.shape, p, x.dtype, x.device)


def dropout_rows(repeats: int):
    for shape in [(2500, 256), (2500, 1024)]:
        x = torch.randn(shape, device=DEVICE, requires_grad=True)
        grad = torch.randn(shape, device=DEVICE)
        yield (
            f"dropout {shape[0]}×{shape[1]}, fwd+bwd",
            lambda x=x, grad=grad: sixteen_bit_dropout(x, 0.1).backward(grad),
            lambda x=x, grad=grad: F.dropout(x, 0.1).backward(grad),
            repeats,
        )


def loss_rows(repeats: int):
    logits = torch.randn(100, 25, 8000, device=DEVICE, requires_grad=True)
    target = torch.randint(4, 8000, (100, 25), device=DEVICE)
    target[:, 20:] = 0

    def autograd_formula():
        log_probs = torch.log_softmax(logits, dim=-1)
        nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        others = -log_probs.sum(dim=-1) - nll
        loss = 0.9 * nll + 0.1 / 7999 * others
        loss[target != 0].sum().backward()

    yield (
        "smoothed loss 2500×8000, value+gradient",
        lambda: label_smoothed_cross_entropy(logits, target, 0.1, 0)[0].backward(),
        autograd_formula,
        repeats,
    )


def projected_loss_rows(repeats: int):
    """The output projection inside the loss against ``F.linear`` then the loss
    (both Rosetta's one-pass gradient), 2,500 positions, none of them padding
    (as in training batches, bucketed by target length; padding would not be
    projected at all)."""
    features = torch.randn(100, 25, 256, device=DEVICE, requires_grad=True)
    projection = torch.nn.Linear(256, 8000, bias=False, device=DEVICE)
    target = torch.randint(4, 8000, (100, 25), device=DEVICE)

    def apart():
        logits = projection(features)
        label_smoothed_cross_entropy(logits, target, 0.1, 0)[0].backward()

    yield (
        "projection 256→8000 + loss, 2500 positions, fwd+bwd "
        "(torch: F.linear, then the loss)",
        lambda: projected_label_smoothed_cross_entropy(
            features, projection, target, 0.1, 0
        )[0].backward(),
        apart,
        repeats,
    )


def search_rows(repeats: int):
    log_probs = torch.randn(160, 8000, device=DEVICE).log_softmax(-1)
    yield (
        "top-5 of 160×8000",
        lambda: top_k_rows(log_probs, 5),
        lambda: log_probs.topk(5, dim=1),
        repeats * 20,
    )
    yield (
        "argmax of 160×8000",
        lambda: argmax_rows(log_probs),
        lambda: log_probs.argmax(dim=1),
        repeats * 20,
    )


def timed_lstm_step(flush: bool) -> float:
    torch.set_flush_denormal(flush)
    torch.manual_seed(0)
    config = load_config(ROOT / "configs/multi30k-de-en-lstm.yaml")
    model = build_model(config.model, VOCAB, VOCAB)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    step = training_step(model, optimizer, 8, 256)
    step()
    began = time.perf_counter()
    step()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    args = parser.parse_args()
    global DEVICE
    DEVICE = torch.device(args.device)
    if DEVICE.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: this PyTorch sees no CUDA GPU")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    rows = []
    for name, ours, theirs, repeats in [
        *dropout_rows(args.repeats),
        *loss_rows(args.repeats),
        *projected_loss_rows(args.repeats),
        *search_rows(args.repeats),
    ]:
        rows.append((name, *compare(ours, theirs, repeats)))
        print(f"{name}: {rows[-1][1] * 1e3:.2f} against {rows[-1][2] * 1e3:.2f} ms")
    if DEVICE.type == "cpu":
        flushed, unflushed = timed_lstm_step(True), timed_lstm_step(False)
        rows.append(("LSTM training step, L = 256 (flushed / not)", flushed, unflushed))

    print(f"\n{device_name(DEVICE)}, {args.threads} thread(s), medians\n")
    print("| piece | Rosetta, ms | torch, ms | torch ÷ Rosetta |")
    print("|---|---|---|---|")
    for name, ours, theirs in rows:
        ratio = theirs / ours
        print(f"| {name} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ratio:.1f}× |")


if __name__ == "__main__":
    main()
