"""The file that makes a folder a CTranslate2 export of Rosetta (its
``ExportFormat.marker``), beside CTranslate2's own ``model.bin``."""

from __future__ import annotations

ENGINE_FILE = "rosetta.json"  # beside the model: tokenizers and configuration
