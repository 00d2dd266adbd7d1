"""CTranslate2 for Transformers: the export (``export``) and translating with
it (``engine``), declared to the rest of Rosetta as the Transformer family's
``EXPORT``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rosetta.families.family import ExportFormat, Later
from rosetta.families.transformer.ctranslate2.files import ENGINE_FILE

if TYPE_CHECKING:
    from rosetta.families.transformer.ctranslate2.engine import CTranslate2Translator


def load(
    folder: Path, device: str, precision: str, threads: int
) -> CTranslate2Translator:
    """An export's translator; ``threads`` 0 lets CTranslate2 choose."""
    from rosetta.families.transformer.ctranslate2.engine import CTranslate2Translator

    return CTranslate2Translator(folder, device, precision, threads)


EXPORT = ExportFormat(
    name="ctranslate2",
    summary="CTranslate2, a C++ inference engine (pip install 'rosetta-nmt[ct2]')",
    marker=ENGINE_FILE,
    kind="a CTranslate2 export",
    quantizations=("int8", "int8_float32", "int16", "float16", "bfloat16"),
    write=Later("rosetta.families.transformer.ctranslate2.export", "write_export"),
    load=load,
)
