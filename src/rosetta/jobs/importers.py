"""Models of other toolkits as Rosetta runs (``Family.importers``,
``rosetta import NAME SOURCE -o RUN``).

What every importer shares lives here: the importer found by name, the
output claimed (never a folder Rosetta keeps, never the source), the run
written into a temporary folder and loaded back, as every command will load
it, before it takes its place: a model that cannot load is never left behind.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from rosetta.families.family import Importer
from rosetta.jobs.restore import restore
from rosetta.runtime.atomic import atomic_folder
from rosetta.runtime.outputs import claim_folder

IMPORTED_KIND = "an imported model"


def import_run(
    importer: Importer,
    source: str,
    output: Path,
    overwrite: bool = False,
    log: Callable[[str], None] = print,
) -> None:
    """The run of ``source`` written to the new folder ``output`` (with
    ``overwrite``, in place of an earlier import that holds only what it
    wrote)."""
    inputs = [source] if Path(source).exists() else []
    claim_folder(output, inputs=inputs, overwrite=overwrite, what=IMPORTED_KIND)
    with atomic_folder(output, kind=IMPORTED_KIND) as folder:
        importer.write(source, folder, log)
        restored = restore(folder, torch.device("cpu"), which="latest")
        # counted as training counts them: a table shared by several names once
        count = sum(p.numel() for p in restored.model.parameters())
        log(
            f"import: loaded back as {restored.family.summary}, "
            f"{count / 1e6:.2f}M parameters"
        )
