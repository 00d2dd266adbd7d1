"""A configuration that starts from another run's weights (``train.init``).

The starting run's weights fix its ``task``, its ``model`` section and its
tokenizers (the ids the weights know). A fine-tuning configuration leaves
them out and gets the starting run's; a key it writes anyway (in the file or
with ``--set``) must agree with the starting run's, or the run would train
something other than what the configuration says. Only keys the user wrote
are compared, so a refusal names a key the user can find.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from rosetta.config.sections import ModelSection, TokenizerConfig
from rosetta.errors import RosettaError

# what the starting run decides, besides ``task``
STARTING_SECTIONS = ("model", "tokenizer")
# beside the sections: the number of ids each side's tokenizer really has,
# where ``tokenizer.vocab_size`` says only what was asked for (an imported
# model's is the default, 8000, whatever its vocabulary)
SIZES = "vocabulary_sizes"
VOCAB_SIZE = "tokenizer.vocab_size"
ADVICE = (
    "a fine-tuning configuration may leave out task, model and tokenizer "
    "(a whole section, or the keys that differ): they are the starting run's"
)


def starting_sections(config: dict[str, Any], sizes: tuple[int, int]) -> dict[str, Any]:
    """What a run that starts from a checkpoint takes from it: its
    configuration's ``task``, ``model`` and ``tokenizer``, and its
    tokenizers' real ``sizes`` (source, target)."""
    kept = ("task", *STARTING_SECTIONS)
    return {key: config[key] for key in kept if key in config} | {SIZES: list(sizes)}


def written_keys(raw: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``raw`` the starting run decides, dotted, in the order
    written: ``task``, then ``model.*`` and ``tokenizer.*``."""
    written = {"task": raw["task"]} if "task" in raw else {}
    for name in STARTING_SECTIONS:
        section = raw.get(name)
        if isinstance(section, dict):
            written |= {f"{name}.{key}": value for key, value in section.items()}
        elif name in raw:
            written[name] = section  # not a section: compared whole
    return written


def section_classes(
    stored: dict[str, Any], sections: Sequence[type[ModelSection]]
) -> dict[str, type[BaseModel]]:
    """The classes that read the starting run's sections: its ``model``
    section's family (by its ``arch``), and the tokenizer's."""
    arch = stored.get("model", {}).get("arch")
    named = [section for section in sections if section.arch_name() == arch]
    return {"model": named[0] if named else sections[0], "tokenizer": TokenizerConfig}


def normal(classes: dict[str, type[BaseModel]], key: str, value: Any) -> Any:
    """``value`` as the key's field reads it (``1e-1`` and ``0.1``, a list
    and a tuple, compare equal), or as given where it does not read."""
    name, _, field_name = key.partition(".")
    field = classes[name].model_fields.get(field_name) if name in classes else None
    if field is None or field.annotation is None:
        return value
    adapter: TypeAdapter[Any] = TypeAdapter(field.annotation)
    try:
        return adapter.dump_python(adapter.validate_python(value), mode="json")
    except ValidationError:
        return value


def stored_value(
    classes: dict[str, type[BaseModel]], stored: dict[str, Any], key: str
) -> Any:
    """The starting run's ``key``: stored, or its default where the stored
    configuration predates the key."""
    if key == "task":
        return stored.get("task", "translate")
    name, _, field_name = key.partition(".")
    section = stored.get(name, {})
    if field_name in section:
        return section[field_name]
    field = classes[name].model_fields.get(field_name) if field_name else None
    if field is None:
        return section if not field_name else None
    return field.get_default(call_default_factory=True)


def first_conflict(
    written: dict[str, Any],
    stored: dict[str, Any],
    sections: Sequence[type[ModelSection]],
    source: str = "this configuration",
    overridden: frozenset[str] = frozenset(),
) -> str | None:
    """``key is THEIRS there and OURS in SOURCE`` (or ``with --set``) for the
    first written key that differs from the starting run's, or None. The
    keys set with ``--set`` come first: what the user just changed, not what
    the file they started from holds."""
    classes = section_classes(stored, sections)
    by_set = [key for key in written if key in overridden]
    ordered = by_set + [key for key in written if key not in overridden]
    for key in ordered:
        ours = written[key]
        name, _, field_name = key.partition(".")
        if field_name and field_name not in classes[name].model_fields:
            continue  # not a key of the section: validation names it
        theirs = stored_value(classes, stored, key)
        ours_read = normal(classes, key, ours)
        sizes = stored.get(SIZES) if key == VOCAB_SIZE else None
        if ours_read == normal(classes, key, theirs) or (
            sizes and {ours_read} == set(sizes)
        ):
            continue  # what the run was made with, or what its vocabulary is
        where = "with --set" if key in overridden else f"in {source}"
        return f"{key} is {shown(theirs, sizes)} there and {ours!r} {where}"
    return None


def shown(theirs: Any, sizes: list[int] | None) -> str:
    """The starting run's value as a message quotes it: its vocabularies'
    real sizes for ``tokenizer.vocab_size`` (``SIZES``)."""
    if not sizes:
        return repr(theirs)
    if len(set(sizes)) == 1:
        return f"{sizes[0]!r} (its vocabulary's size)"
    return f"{sizes[0]!r} (source) and {sizes[1]!r} (target)"


def take_from_start(
    raw: dict[str, Any],
    stored: dict[str, Any],
    sections: Sequence[type[ModelSection]],
    init: str,
    source: Any = "this configuration",
    overridden: frozenset[str] = frozenset(),
) -> None:
    """Fill ``raw`` (a configuration as read from ``source``, ``--set``
    applied: the dotted keys in ``overridden``) with the starting run's
    ``task``, ``model`` and tokenizer settings where it leaves them out; a
    written key that differs is refused in one line, one set with ``--set``
    named first."""
    written = written_keys(raw)
    conflict = first_conflict(written, stored, sections, str(source), overridden)
    if conflict is not None:
        raise RosettaError(f"train.init {init}: {conflict}; {ADVICE}")
    raw["task"] = stored.get("task", "translate")
    for name in STARTING_SECTIONS:
        ours = raw.get(name)
        raw[name] = {**stored.get(name, {}), **(ours if isinstance(ours, dict) else {})}
