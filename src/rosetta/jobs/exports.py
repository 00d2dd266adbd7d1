"""Export formats of other toolkits, for the families whose record names
them (``Family.exports``): exporting a trained model (``rosetta export
NAME``), and for a format that is also an engine, loading an export or a
run exported on first use (``--engine NAME``).

What every format shares lives here: the format found by name or by the
file its exports hold, the refusal of a model whose family it does not
take, the output claimed and written all or nothing; each format only
writes its files (and an engine reads them back).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rosetta.errors import RosettaError
from rosetta.families import FAMILIES, all_export_formats
from rosetta.families.family import ExportFormat, Family
from rosetta.jobs.restore import restore
from rosetta.runs import checkpoint as ckpt
from rosetta.runtime.atomic import atomic_folder
from rosetta.runtime.devices import pick_device
from rosetta.runtime.outputs import claim_folder


def export_format_named(name: str) -> ExportFormat:
    for export in all_export_formats():
        if export.name == name:
            return export
    names = ", ".join(export.name for export in all_export_formats())
    raise RosettaError(f"{name!r}: not an export format; use one of {names}")


def export_format_of(folder: Path) -> ExportFormat | None:
    """The export format ``folder`` is an export in, if it is one."""
    for export in all_export_formats():
        if (Path(folder) / export.marker).is_file():
            return export
    return None


def check_format_runs(export: ExportFormat, family: Family, folder: Path) -> None:
    """A clear refusal where the format ``export`` cannot take ``family``'s
    models."""
    if export in family.exports:
        return
    runs = [f"{f.summary} (arch {f.arch})" for f in FAMILIES if export in f.exports]
    raise RosettaError(
        f"{folder}: {family.summary} (arch {family.arch}); {export.name} takes "
        f"{' and '.join(runs)} only"
    )


def write_export(
    export: ExportFormat,
    checkpoint: Path,
    output: Path,
    quantization: str | None = None,
) -> None:
    """The checkpoint folder ``checkpoint`` exported for ``export`` into
    ``output``, all or nothing (no claim: ``export_model`` makes it for a
    user's output; an engine's copy inside a checkpoint needs none)."""
    if quantization is not None and quantization not in export.quantizations:
        raise RosettaError(
            f"quantization {quantization!r}: use one of "
            f"{', '.join(export.quantizations)}"
        )
    restored = restore(checkpoint, torch.device("cpu"))
    check_format_runs(export, restored.family, checkpoint)
    with atomic_folder(output, kind=export.kind) as folder:
        export.write(restored, folder, quantization)


def export_model(
    format_name: str,
    model_path: Path,
    output: Path,
    quantization: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Write the export in the format ``format_name`` of ``model_path`` (a run
    folder: its best checkpoint, or a checkpoint folder) to ``output``;
    returns the checkpoint exported. ``output`` may not exist, or (with
    ``overwrite``) must be an earlier export."""
    export = export_format_named(format_name)
    folder = ckpt.resolve_checkpoint(Path(model_path))
    claim_folder(
        output, inputs=[model_path, folder], overwrite=overwrite, what=export.kind
    )
    write_export(export, folder, Path(output), quantization)
    return folder


def load_engine(
    engine_name: str,
    path: str | Path,
    device: str | torch.device | None = None,
    precision: str = "fp32",
    threads: int = 0,
) -> Any:
    """The translator of ``engine_name`` for ``path``: an export, or a run or
    checkpoint folder, exported the first time into the checkpoint's folder
    named after the engine. ``threads`` 0 lets the engine choose."""
    engine = export_format_named(engine_name)  # a format with a load
    if engine.load is None:
        raise RosettaError(
            f"{engine.name}: Rosetta exports to it (rosetta export {engine.name}) "
            "but does not translate with it"
        )
    folder = Path(path)
    if not (folder / engine.marker).is_file():
        checkpoint = ckpt.resolve_checkpoint(folder)
        folder = checkpoint / engine.name
        if not (folder / engine.marker).is_file():
            if folder.exists() or folder.is_symlink():  # never replaced: not ours
                raise RosettaError(
                    f"{folder}: not a {engine.name} export Rosetta wrote, where "
                    "it keeps the one it makes on first use; move it away, or "
                    "export elsewhere (rosetta export) and translate with that"
                )
            write_export(engine, checkpoint, folder)
    return engine.load(folder, pick_device(device).type, precision, threads)
