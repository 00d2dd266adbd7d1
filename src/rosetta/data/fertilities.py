"""Reference fertilities for training a non-autoregressive model: how many
target tokens each source token accounts for, read from word alignments of
the training pairs on the model's own tokens (``rosetta.data.align``), found
once and kept in the run folder (``alignments.txt``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rosetta.data.align import align, fertilities_from_links, parse_links
from rosetta.data.batching import Example
from rosetta.runtime.outputs import write_text_atomic

ALIGNMENTS_FILE = "alignments.txt"


def token_lines(examples: list[Example]) -> tuple[list[str], list[str]]:
    """The pairs as the aligner reads them: token ids separated by spaces."""
    return (
        [" ".join(map(str, e.src)) for e in examples],
        [" ".join(map(str, e.tgt)) for e in examples],
    )


def reference_fertilities(
    examples: list[Example],
    max_fertility: int,
    run_dir: Path,
    log: Callable[[str], None] = print,
) -> list[list[int]]:
    """Each pair's source-token fertilities, from alignments kept in
    ``run_dir`` (made with eflomal when missing or made for other pairs)."""
    sources, targets = token_lines(examples)
    digest = hashlib.sha256(
        "\n".join(f"{s}\t{t}" for s, t in zip(sources, targets, strict=True)).encode()
    ).hexdigest()
    path = run_dir / ALIGNMENTS_FILE
    lines: list[str] | None = None
    if path.is_file():
        header, *rest = path.read_text(encoding="utf-8").splitlines()
        if json.loads(header).get("pairs_sha256") == digest and len(rest) == len(
            examples
        ):
            lines = rest
            log(f"alignments: loaded from {path}")
    if lines is None:
        log(f"alignments: aligning {len(examples):,} pairs with eflomal")
        links = align(sources, targets)
        lines = [" ".join(f"{i}-{j}" for i, j in pair) for pair in links]
        header = json.dumps({"pairs_sha256": digest, "aligner": "eflomal"})
        write_text_atomic(path, "\n".join([header, *lines]) + "\n")
    return [
        fertilities_from_links(
            parse_links(line, f"{path}, line {number}"),
            len(example.src),
            len(example.tgt),
            max_fertility,
        )
        for number, (line, example) in enumerate(
            zip(lines, examples, strict=True), start=2
        )
    ]


def fits(
    src_lengths: np.ndarray, tgt_lengths: np.ndarray, max_fertility: int
) -> np.ndarray:
    """Which pairs' source tokens can account for their whole target."""
    return tgt_lengths <= src_lengths * max_fertility
