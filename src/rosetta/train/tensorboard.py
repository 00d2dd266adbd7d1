"""Training metrics as TensorBoard event files, beside ``metrics.jsonl``.

Every record the trainer writes (``train``: loss, learning rate, tokens per
second, ...; ``valid``: loss, perplexity, BLEU, ...) becomes one scalar per
value, tagged ``KIND/NAME``, and a few validation translations become text
(``valid/translations``), in the run's ``tensorboard/`` folder, so that
``tensorboard --logdir runs`` shows every run. It needs the ``tensorboard``
package (the ``tensorboard`` extra); without it nothing is written.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

TENSORBOARD_DIR = "tensorboard"


def tensorboard_installed() -> bool:
    return importlib.util.find_spec("tensorboard") is not None


class TensorBoardEvents:
    """Scalars in ``folder``; the writer opens at the first record, so a run
    that records nothing leaves no folder."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.purge_after: int | None = None
        self.writer: Any = None

    def open(self) -> Any:
        if self.writer is None:
            # imported here: it loads TensorBoard, which a run without it lacks
            from torch.utils.tensorboard import SummaryWriter

            purge = None if self.purge_after is None else self.purge_after + 1
            self.writer = SummaryWriter(str(self.folder), purge_step=purge)
        return self.writer

    def add(self, kind: str, step: int, values: dict[str, Any]) -> None:
        writer = self.open()
        for name, value in values.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                writer.add_scalar(f"{kind}/{name}", value, step)
        writer.flush()  # a run stopped at any moment keeps what it showed

    def add_examples(self, step: int, examples: list[tuple[str, str, str]]) -> None:
        """``valid/translations``: a Markdown table, one row per example."""
        rows = ["| source | output | reference |", "|---|---|---|"]
        for example in examples:
            cells = (text.replace("|", "\\|") for text in example)
            rows.append("| " + " | ".join(cells) + " |")
        writer = self.open()
        writer.add_text("valid/translations", "\n".join(rows), step)
        writer.flush()

    def forget_after(self, step: int) -> None:
        """Hide the events after ``step`` (a resumed run makes them again)."""
        self.close()
        self.purge_after = step

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
