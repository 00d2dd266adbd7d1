"""Signs of life for long commands: a bar while sentences are translated,
then one summary line.

The bar (tqdm, as training's) is drawn on a terminal only: on a pipe or in a
log it would be a stream of carriage returns. The summary line is written in
both, on stderr, so that stdout holds only the command's output.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm import tqdm


class SentenceProgress:
    """A bar over ``total`` sentences, named ``verb`` ("translate"), the
    first ``initial`` done already (a resumed job); its ``update`` is what a
    translator is given as ``progress``. ``shown=False``: no bar at all."""

    def __init__(
        self,
        total: int,
        verb: str,
        stream: TextIO | None = None,
        *,
        initial: int = 0,
        shown: bool = True,
    ):
        self.verb, self.total = verb, total - initial
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self.bar = tqdm(
            total=total,
            initial=initial,
            unit=" sentences",
            desc=verb,
            file=self.stream,
            disable=not (shown and on_terminal(self.stream)),
            leave=False,
            dynamic_ncols=True,
        )

    def update(self, sentences: int) -> None:
        self.bar.update(sentences)

    def summary(self, tokens: int, sentences: int | None = None) -> str:
        """Closes the bar: "translate: 1,000 sentences, 12,345 tokens in
        10.2 s (98.0 sentences/s, 1,210 tokens/s)" (``tokens``: those
        written; ``sentences``: default those of this run, ``total`` less
        ``initial``)."""
        self.bar.close()
        sentences = self.total if sentences is None else sentences
        seconds = max(time.perf_counter() - self.started, 1e-9)
        return (
            f"{self.verb}: {sentences:,} sentences, {tokens:,} tokens in "
            f"{seconds:.1f} s ({sentences / seconds:,.1f} sentences/s, "
            f"{tokens / seconds:,.0f} tokens/s)"
        )

    def say_summary(self, tokens: int, sentences: int | None = None) -> None:
        print(self.summary(tokens, sentences), file=self.stream)


def on_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False
