"""Reading a configuration: YAML in, a validated ``Config`` out, with
``--set KEY=VALUE`` overrides applied to the raw YAML before validation (so
they are checked the same way), and errors that name every bad key where it
was set, with a did-you-mean.

Each function takes the model sections to pick from (``sections``, the first
the default); ``rosetta.jobs.run_config`` passes those of every family.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from rosetta.config.schema import Config, config_class
from rosetta.config.sections import (
    CorpusFiles,
    DataConfig,
    DecodeConfig,
    EarlyStopping,
    ModelSection,
    TokenizerConfig,
    TrainConfig,
)
from rosetta.config.starting import take_from_start
from rosetta.errors import RosettaError
from rosetta.runtime.yaml_file import read_yaml


def apply_override(raw: dict[str, Any], assignment: str) -> str:
    """Apply ``section.key=value`` (value parsed as YAML) to a raw config dict;
    returns the dotted key."""
    if "=" not in assignment:
        raise RosettaError(f"--set {assignment!r}: expected KEY=VALUE")
    dotted, value_text = assignment.split("=", 1)
    keys = dotted.strip().split(".")
    node = raw
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise RosettaError(f"--set {dotted}: '{key}' is not a section")
        node = child
    try:
        node[keys[-1]] = yaml.safe_load(value_text)
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise RosettaError(
            f"--set {dotted}: {value_text!r} is not a YAML value ({problem}); "
            "quote text that holds YAML's characters, e.g. --set 'KEY=\"...\"'"
        ) from None
    return ".".join(keys)


def _resolve_paths(raw: dict[str, Any], base: Path) -> None:
    """Make data paths (and ``train.init``) relative to the config file's
    folder, not the cwd."""
    train = raw.get("train")
    if isinstance(train, dict) and isinstance(train.get("init"), str):
        train["init"] = str((base / train["init"]).resolve())
    data = raw.get("data")
    if not isinstance(data, dict):
        return
    for split in ("train", "valid", "test"):
        files = data.get(split)
        if isinstance(files, dict):
            for key in ("src", "tgt", "tsv", "text"):
                if isinstance(files.get(key), str):
                    files[key] = str((base / files[key]).resolve())
            hub = files.get("hf")  # a folder saved by datasets, or a hub name
            if isinstance(hub, str) and (base / hub).is_dir():
                files["hf"] = str((base / hub).resolve())


Sections = Sequence[type[ModelSection]]


def _family_config(arch: str | None, sections: Sections) -> type[BaseModel]:
    named = [s for s in sections if s.arch_name() == arch]
    return named[0] if named else sections[0]


def _section(
    location: list[int | str], arch: str | None, sections: Sections
) -> type[BaseModel] | None:
    """The config class that holds the key at ``location`` (a key path)."""
    by_place: dict[str, type[BaseModel]] = {
        "": Config,
        "data": DataConfig,
        "data.train": CorpusFiles,
        "data.valid": CorpusFiles,
        "data.test": CorpusFiles,
        "tokenizer": TokenizerConfig,
        "model": _family_config(arch, sections),
        "train": TrainConfig,
        "train.early_stopping": EarlyStopping,
        "decode": DecodeConfig,
    }
    return by_place.get(".".join(str(part) for part in location[:-1]))


def _did_you_mean(
    location: list[int | str], arch: str | None, sections: Sections
) -> str:
    section = _section(location, arch, sections)
    if section is None:
        return ""
    key = str(location[-1])
    for other in sections:
        name = other.arch_name()
        if arch and name != arch and key in other.model_fields:
            return f" (it is a key of arch '{name}')"
    close = difflib.get_close_matches(key, list(section.model_fields), cutoff=0.5)
    return f" (did you mean '{close[0]}'?)" if close else ""


def format_validation_error(
    error: ValidationError,
    source: str,
    sections: Sections,
    overridden: frozenset[str] = frozenset(),
) -> str:
    """One line naming every problem, each key where it was set: in
    ``source`` or by ``--set`` (the dotted keys in ``overridden``); the
    problems are separated by "; "."""
    archs = [section.arch_name() for section in sections]
    problems = []
    for item in error.errors():
        location = list(item["loc"])
        arch: str | None = None
        if location[:1] == ["model"] and location[1:2] and location[1] in archs:
            arch = str(location.pop(1))  # the family's tag, not a key
        key = ".".join(str(part) for part in location) or "(top level)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key" + (f" for arch '{arch}'" if arch else "")
            message += _did_you_mean(location, arch, sections)
        by_set = any(o == key or o.startswith(f"{key}.") for o in overridden)
        where = "--set " if by_set else ""
        problems.append((where, f"{where}{key}: {message}"))
    from_file = any(not where for where, _ in problems)
    header = f"{source}: invalid configuration: " if from_file else ""
    return header + "; ".join(sorted(line for _, line in problems))


def config_from_dict(
    raw: dict[str, Any],
    sections: Sections,
    source: str = "config",
    overridden: frozenset[str] = frozenset(),
    stored: bool = False,
) -> Config:
    """``raw`` validated, its ``model`` one of ``sections``. ``stored``: a
    configuration Rosetta wrote (a checkpoint's, an export's), whose damage
    is one line, not a list of keys to fix."""
    try:
        return config_class(tuple(sections)).model_validate(raw)
    except ValidationError as error:
        message = format_validation_error(error, source, sections, overridden)
        if stored:
            problems = message.removeprefix(f"{source}: invalid configuration: ")
            message = f"{source}: a damaged configuration ({problems})"
        raise RosettaError(message) from None


def load_config(
    path: str | Path,
    sections: Sections,
    overrides: list[str] | None = None,
    stored_model: Callable[[Path], dict[str, Any]] | None = None,
) -> Config:
    """Read a YAML config, apply ``KEY=VALUE`` overrides and validate it.

    A config with ``train.init`` takes the ``task``, ``model`` and
    ``tokenizer`` it leaves out from ``stored_model(train.init)`` (the
    starting run's configuration), and may not write them otherwise
    (``rosetta.config.starting``)."""
    path = Path(path)
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise RosettaError(f"{path}: the top level must be a mapping of sections")
    overridden = set()
    for assignment in overrides or []:
        overridden.add(apply_override(raw, assignment))
    _resolve_paths(raw, path.parent)
    train = raw.get("train")
    init = train.get("init") if isinstance(train, dict) else None
    if stored_model is not None and isinstance(init, str):
        starting = stored_model(Path(init))
        take_from_start(raw, starting, sections, init, path, frozenset(overridden))
    return config_from_dict(raw, sections, str(path), frozenset(overridden))


def config_to_dict(config: Config) -> dict[str, Any]:
    """A JSON-ready dict (paths as strings) that ``config_from_dict`` reads back."""
    return config.model_dump(mode="json")
