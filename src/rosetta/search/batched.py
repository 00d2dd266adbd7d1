"""Decode many sentences: sort by length, batch, search, restore input order."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Literal

import torch

from rosetta.data.batching import Example, collate
from rosetta.data.vocab import BOS_ID, EOS_ID
from rosetta.interfaces.encoder_decoder import EncoderDecoder
from rosetta.runtime.precision import current_autocast
from rosetta.search.constraints import TokenConstraints
from rosetta.search.dispatch import search
from rosetta.search.greedy import Hypothesis
from rosetta.search.options import SearchOptions

Workers = int | Literal["auto"]


def decode_in_batches(
    model: EncoderDecoder,
    sources: list[list[int]],
    device: torch.device,
    *,
    batch_size: int,
    options: SearchOptions,
    max_len_cap: int | None = None,
    workers: Workers = 1,
    constraints: list[TokenConstraints] | None = None,
    progress: Callable[[int], object] | None = None,
) -> list[list[Hypothesis]]:
    """Decode token-id sources (without ``<eos>``); an n-best list for each,
    under its ``constraints`` (one per source) if given.

    Sentences of similar length are batched together so little work is spent
    on padding; the results come back in the order of ``sources``. Sampling
    draws from one generator seeded by ``options.seed``, so a seeded run is
    reproducible for a given batch size.

    ``workers`` > 1 (CPU only) decodes that many batches at once, each in its
    own thread with an equal share of torch's threads: two one-thread workers
    use two cores better than one two-thread search, whose small operations
    gain little from a second thread. The translations are the same.
    ``"auto"``: one worker per thread on the CPU (at most one per batch), one
    for sampling and on a GPU (``auto_workers``). ``progress`` is told the
    size of each batch decoded, as it finishes.
    """
    check_workers(workers, options, device)
    model.eval()
    generator = None
    if options.sample:
        generator = torch.Generator(device=device)
        if options.seed is not None:
            generator.manual_seed(options.seed)
        else:
            generator.seed()
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    chunks = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    if workers == "auto":
        workers = auto_workers(options, device, len(chunks))

    def decode(chunk: list[int]) -> list[list[Hypothesis]]:
        batch = collate([Example(sources[i], []) for i in chunk]).to(device)
        found = search(
            model,
            batch.src,
            batch.src_mask,
            options,
            bos_id=BOS_ID,
            eos_id=EOS_ID,
            max_len_cap=max_len_cap,
            generator=generator,
            constraints=None
            if constraints is None
            else [constraints[i] for i in chunk],
        )
        if progress is not None:
            progress(len(chunk))
        return found

    results: list[list[Hypothesis]] = [[] for _ in sources]
    if workers == 1 or len(chunks) == 1:
        found = list(map(decode, chunks))
    else:
        precision = current_autocast(device.type)  # autocast is per thread

        def decode_in_worker(chunk: list[int]) -> list[list[Hypothesis]]:
            with precision():
                return decode(chunk)

        pool = ThreadPoolExecutor(workers, thread_name_prefix="rosetta-decode")
        with pool, threads_per_worker(workers):
            found = list(pool.map(decode_in_worker, chunks))
    for chunk, hypotheses_of in zip(chunks, found, strict=True):
        for i, hypotheses in zip(chunk, hypotheses_of, strict=True):
            results[i] = hypotheses
    return results


def auto_workers(options: SearchOptions, device: torch.device, batches: int) -> int:
    """One worker per torch thread on the CPU, at most one per batch; one for
    sampling (its draws come in order) and on a GPU (one search fills it)."""
    if options.sample or device.type != "cpu":
        return 1
    return max(1, min(torch.get_num_threads(), batches))


def check_workers(
    workers: Workers, options: SearchOptions, device: torch.device
) -> None:
    """A clear error where parallel workers cannot apply."""
    if workers == "auto":
        return
    if not isinstance(workers, int) or isinstance(workers, bool):
        raise ValueError(f"workers must be a whole number or 'auto', got {workers!r}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if workers > 1 and options.sample:
        raise ValueError("sampling runs with one worker (its draws must come in order)")
    if workers > 1 and device.type != "cpu":
        raise ValueError("parallel workers are for the CPU; a GPU runs one search")


@contextmanager
def threads_per_worker(workers: int) -> Iterator[None]:
    """torch's intra-op threads shared out among ``workers``, then restored."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, before // workers))
    try:
        yield
    finally:
        torch.set_num_threads(before)
