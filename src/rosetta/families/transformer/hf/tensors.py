"""A MarianMT model's tensors, each read once into the place Rosetta has
for it, in MarianMT's ids (``convert`` reorders them).

Nothing is dropped unseen. A table stored under several names (the shared
embedding as ``model.shared``, ``model.encoder.embed_tokens`` and
``model.decoder.embed_tokens``; the output layer tied to it as
``lm_head``) must hold the same numbers under each: transformers versions
differ on which copy they read, so a file whose copies differ means two
models, and is refused. The position tables are recomputed, so a stored one
must be MarianMT's sinusoids. A tensor left over, or of the wrong shape, is
refused by name.
"""

from __future__ import annotations

from pathlib import Path

import torch

from rosetta.errors import RosettaError
from rosetta.families.transformer.hf.convert import layer_names, layer_shape
from rosetta.families.transformer.hf.settings import MarianSettings
from rosetta.nn.positional import positional_encoding

SHARED = "model.shared.weight"
ENCODER_TABLE = "model.encoder.embed_tokens.weight"
DECODER_TABLE = "model.decoder.embed_tokens.weight"
HEAD = "lm_head.weight"
BIAS = "final_logits_bias"
POSITIONS = (
    "model.encoder.embed_positions.weight",
    "model.decoder.embed_positions.weight",
)
TOLERANCE = 1e-4  # a stored position table further from the formula is refused
EITHER = "transformers versions read either, so the file holds two models"
SHARES = f"config.json shares one table (share_encoder_decoder_embeddings): {EITHER}"
TIES = f"config.json ties the output layer to it (tie_word_embeddings): {EITHER}"
UNREAD = (
    "with share_encoder_decoder_embeddings false MarianMT reads no shared "
    "table, and Rosetta drops nothing that differs"
)


class Weights:
    """The tensors of the file ``path`` not yet read; ``config`` names
    ``config.json`` in messages."""

    def __init__(self, tensors: dict[str, torch.Tensor], path: Path, config: Path):
        self.tensors = dict(tensors)
        self.path = path
        self.config = config

    def take(self, name: str) -> torch.Tensor:
        if name not in self.tensors:
            raise RosettaError(f"{self.path}: no {name}")
        return self.tensors.pop(name)

    def take_copy(self, name: str, table: torch.Tensor, of: str, why: str) -> None:
        """``name``, if stored, holds the numbers of the table ``of`` (``why``
        says why they must be the same)."""
        copy = self.tensors.pop(name, None)
        if copy is None:
            return
        if copy.dtype != table.dtype or not torch.equal(copy, table):
            raise RosettaError(f"{self.path}: {name} differs from {of}; {why}")

    def check_left_over(self) -> None:
        if self.tensors:
            raise RosettaError(
                f"{self.path}: weights Rosetta's Transformer has no place for: "
                f"{', '.join(sorted(self.tensors)[:3])}"
            )


def check_sizes(weights: Weights, settings: MarianSettings) -> None:
    """The sizes of ``config.json`` are those of the weights, compared
    before any size is used to build or to count anything."""
    for side in ("encoder", "decoder"):
        prefix = f"model.{side}.layers."
        held = {
            n[len(prefix) :].split(".")[0]
            for n in weights.tensors
            if n.startswith(prefix)
        }
        count = getattr(settings, f"{side}_layers")
        if count != len(held):
            raise RosettaError(
                f"{weights.config}: {side}_layers {count}; the weights hold "
                f"{len(held)} {side} layers"
            )
    names = [ENCODER_TABLE]
    if settings.share_encoder_decoder_embeddings:
        names.insert(0, SHARED)
    table = next((weights.tensors[n] for n in names if n in weights.tensors), None)
    if table is None:
        raise RosettaError(f"{weights.path}: no {names[0]} (the token embedding)")
    if table.dim() != 2 or table.size(1) != settings.d_model:
        raise RosettaError(
            f"{weights.config}: d_model {settings.d_model}; the token embedding "
            f"is {tuple(table.shape)}"
        )
    if table.size(0) != settings.vocab_size:
        raise RosettaError(
            f"{weights.config}: vocab_size {settings.vocab_size}; the token "
            f"embedding has {table.size(0)} rows"
        )


def token_tables(
    weights: Weights, settings: MarianSettings
) -> tuple[torch.Tensor, torch.Tensor]:
    """The encoder's and the decoder's token embeddings (one tensor twice
    when they share it), and the output layer's copy checked if tied."""
    if settings.share_encoder_decoder_embeddings:
        name = SHARED if SHARED in weights.tensors else ENCODER_TABLE
        source = target = weights.take(name)
        for other in (ENCODER_TABLE, DECODER_TABLE):
            weights.take_copy(other, source, name, SHARES)
        target_name = name
    else:
        source = weights.take(ENCODER_TABLE)
        weights.take_copy(SHARED, source, ENCODER_TABLE, UNREAD)
        target, target_name = weights.take(DECODER_TABLE), DECODER_TABLE
        if target.shape != (settings.target_vocab_size, settings.d_model):
            raise RosettaError(
                f"{weights.config}: decoder_vocab_size "
                f"{settings.target_vocab_size} and d_model {settings.d_model}; "
                f"{DECODER_TABLE} is {tuple(target.shape)}"
            )
    if settings.tie_word_embeddings:
        weights.take_copy(HEAD, target, target_name, TIES)
    return source, target


def output_tensors(
    weights: Weights, settings: MarianSettings
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The output layer's bias (MarianMT's ``final_logits_bias``, zeros if
    absent) and, untied, its weight."""
    rows = settings.target_vocab_size
    bias = weights.tensors.pop(BIAS, torch.zeros(rows))
    if bias.shape not in ((rows,), (1, rows)):
        raise RosettaError(
            f"{weights.path}: {BIAS} is {tuple(bias.shape)}; the target "
            f"vocabulary has {rows} ids"
        )
    if settings.tie_word_embeddings:
        return bias.reshape(-1), None
    if HEAD not in weights.tensors:
        raise RosettaError(
            f"{weights.path}: no {HEAD}, which config.json's tie_word_embeddings "
            "false asks for"
        )
    head = weights.take(HEAD)
    if head.shape != (rows, settings.d_model):
        raise RosettaError(
            f"{weights.path}: {HEAD} is {tuple(head.shape)}, not "
            f"({rows}, {settings.d_model})"
        )
    return bias.reshape(-1), head


def layer_tensors(
    weights: Weights, settings: MarianSettings
) -> dict[str, torch.Tensor]:
    """Every layer's tensors under Rosetta's names, each of MarianMT's
    shape."""
    counts = {
        "encoder_layers": settings.encoder_layers,
        "decoder_layers": settings.decoder_layers,
    }
    found = {}
    for theirs, ours in layer_names(counts).items():
        tensor = weights.take(theirs)
        shape = layer_shape(theirs, settings.d_model, settings.encoder_ffn_dim)
        if tensor.shape != shape:
            raise RosettaError(
                f"{weights.path}: {theirs} is {tuple(tensor.shape)}, not {shape} "
                "(d_model, encoder_ffn_dim)"
            )
        found[ours] = tensor
    return found


def check_positions(weights: Weights, settings: MarianSettings) -> None:
    """A position table in the file must be the sinusoids Rosetta computes;
    its shape is compared first, so the table computed is never larger than
    the one read."""
    shape = (settings.max_position_embeddings, settings.d_model)
    for name in POSITIONS:
        table = weights.tensors.pop(name, None)
        if table is None:
            continue
        expected = None
        if table.shape == shape:
            expected = positional_encoding(*shape, "halves")
        if expected is None or not torch.allclose(
            table.float(), expected, atol=TOLERANCE, rtol=0
        ):
            raise RosettaError(
                f"{weights.path}: {name} is not MarianMT's sinusoid table of "
                f"{shape[0]} positions (every sine, then every cosine); Rosetta "
                "computes its positions so"
            )
