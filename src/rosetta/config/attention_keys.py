"""The keys every attention-based family's ``model`` section reads, each
described once (``heads: int = attention_keys.heads(4)``); the families
choose their own defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field


def heads(default: int) -> Any:
    return Field(default, gt=0, description="attention heads; they divide d_model")


def d_ff(default: int) -> Any:
    return Field(default, gt=0, description="inner width of the feed-forward layers")


def attention_dropout() -> Any:
    return Field(0.0, ge=0.0, lt=1.0, description="dropout on the attention weights")


def norm(default: Literal["post", "pre"]) -> Any:
    return Field(
        default,
        description="post: LayerNorm(x + sublayer(x)); pre: x + sublayer(LayerNorm(x))",
    )


def check_heads_divide_width(d_model: int, heads: int) -> None:
    """Raises the error a section's validator reports."""
    if d_model % heads:
        raise ValueError(f"heads ({heads}) must divide d_model ({d_model})")
