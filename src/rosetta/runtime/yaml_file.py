"""Reading a YAML file, every way it can fail said in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rosetta.errors import RosettaError


def yaml_error_message(path: Path, error: yaml.YAMLError) -> str:
    """One line: ``file:line:column: not valid YAML: problem``."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    if mark is None:
        return f"{path}: not valid YAML: {problem}"
    return f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {problem}"


def read_yaml(path: Path) -> Any:
    """The document in ``path`` ({} for an empty file), parsed safely (no
    Python objects are ever built from it)."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise RosettaError(f"{path}: config file not found") from None
    except IsADirectoryError:
        raise RosettaError(f"{path}: a folder, not a config file") from None
    except UnicodeDecodeError as error:
        raise RosettaError(
            f"{path}: not UTF-8 (invalid byte at {error.start}); save it as UTF-8"
        ) from None
    except yaml.YAMLError as error:
        raise RosettaError(yaml_error_message(path, error)) from None
    except RecursionError:
        raise RosettaError(f"{path}: nested too deeply to be a config") from None
