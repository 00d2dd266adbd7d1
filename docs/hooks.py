"""MkDocs hook: the configuration reference, generated from the configuration
classes' field descriptions, replaces ``<!-- configuration reference -->``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from rosetta.config import sections
from rosetta.families import FAMILIES
from rosetta.families.family import Family

MARKER = "<!-- configuration reference -->"


def _model_heading(family: Family) -> str:
    task = "" if family.config.TASK == "translate" else f", task: {family.config.TASK}"
    return f"model (arch: {family.arch}{task})"


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


# (heading, class, what it is), in the order of a config file; one model
# section per family
SECTIONS: list[tuple[str, type[BaseModel], str]] = [
    ("data", sections.DataConfig, ""),
    ("data.train, data.valid, data.test", sections.CorpusFiles, ""),
    ("tokenizer", sections.TokenizerConfig, ""),
    *(
        (_model_heading(f), f.config, f.summary[0].upper() + f.summary[1:] + ".")
        for f in FAMILIES
    ),
    ("train", sections.TrainConfig, ""),
    ("train.early_stopping", sections.EarlyStopping, ""),
    ("decode", sections.DecodeConfig, ""),
]


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.default
    if isinstance(value, BaseModel):
        return "see below"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def _allowed(field: Any) -> str:
    """The values a field takes: its choices, or its bounds."""
    choices = getattr(field.annotation, "__args__", ())
    if choices and all(isinstance(c, str) for c in choices):
        return " or ".join(f"`{c}`" for c in choices)
    bounds = []
    for rule in field.metadata:
        for name, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            if getattr(rule, name, None) is not None:
                bounds.append(f"{sign} {getattr(rule, name)}")
    return ", ".join(bounds)


def reference() -> str:
    lines = []
    for heading, section, summary in SECTIONS:
        lines += [f"## `{heading}`", ""] + ([summary, ""] if summary else [])
        lines.append("| key | default | values | meaning |")
        lines.append("|---|---|---|---|")
        for name, field in section.model_fields.items():
            description = (field.description or "").replace("|", "\\|")
            description = description.replace("<", "&lt;")
            default, allowed = _default(field), _allowed(field)
            lines.append(f"| `{name}` | `{default}` | {allowed} | {description} |")
        lines.append("")
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, reference()) if MARKER in markdown else markdown
