"""``rosetta export hf -m RUN -o DIR``: a Rosetta Transformer as a MarianMT
folder that Hugging Face transformers loads with
``MarianMTModel.from_pretrained`` and ``MarianTokenizer.from_pretrained``.

A model trained here puts a position's sines and cosines interleaved;
MarianMT computes every sine first. The export permutes the model's width so
that they land where MarianMT puts them (``halves_order``): the embeddings'
columns, the rows of every layer that writes the residual stream and the
columns of every layer that reads it, and the LayerNorms' entries. Dot
products and LayerNorm do not see the order of a vector's entries, so the
function is the same (tested on the logits).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from rosetta.data.piece_table import PieceTableTokenizer
from rosetta.data.tokenizer import SentencePieceTokenizer
from rosetta.errors import RosettaError
from rosetta.families.transformer.hf.convert import (
    exported_ids,
    layer_names,
    marian_config,
    take_rows,
)
from rosetta.families.transformer.hf.settings import (
    CONFIG_FILE,
    GENERATION_FILE,
    SAFETENSORS_FILE,
    SOURCE_SPM,
    TARGET_SPM,
    TARGET_VOCAB_FILE,
    TOKENIZER_CONFIG,
    VOCAB_FILE,
)
from rosetta.families.transformer.positions.base import scheme_of
from rosetta.runs import checkpoint as ckpt

# the residual stream's layers, by how they meet it: their weight's rows
# (and bias) write it, their weight's columns read it
WRITES = ("out_proj", "linear2")
READS = ("q_proj", "k_proj", "v_proj", "linear1", "token", "output_proj")


def refusal(model: Any) -> str | None:
    """Why MarianMT cannot express the model ``model`` (a ``model``
    section), or None."""
    if model.arch != "transformer":
        return f"arch {model.arch}: MarianMT is a Transformer encoder-decoder"
    if not scheme_of(model.positions).exports_to("marian"):
        return f"{model.positions} positions: MarianMT adds sinusoidal positions"
    if model.sinusoids == "fairseq" or model.first_position:
        return (
            "fairseq's sinusoids or positions counted from "
            f"{model.first_position}: MarianMT's are every sine then every "
            "cosine, from position 0"
        )
    if model.embedding_norm or not model.scale_embeddings:
        return (
            "a LayerNorm on the embeddings or unscaled embeddings: MarianMT "
            "scales them by sqrt(d_model) and normalises nothing there"
        )
    if model.norm != "post":
        return (
            "pre-norm layers: MarianMT normalises after each sub-layer and has "
            "no final LayerNorm"
        )
    if model.start_token != "bos":
        return "a decoder that starts from </s>: MarianMT's starts from <pad>"
    return None


def halves_order(d_model: int) -> torch.Tensor:
    """The width permutation that takes interleaved sinusoids to halves:
    entry j of the new order is entry ``order[j]`` of the old."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def permuted_width(
    tensors: dict[str, torch.Tensor], order: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Rosetta's tensors with the residual stream's entries in ``order``."""
    out = {}
    for name, tensor in tensors.items():
        layer, kind = name.split(".")[-2:]
        if layer == "norm" or layer in WRITES:  # LayerNorm: its entries
            tensor = tensor[order]
        elif layer in READS:
            tensor = tensor[:, order] if kind == "weight" else tensor
        else:  # never exported unpermuted
            raise RosettaError(f"{name}: a tensor the export does not know")
        out[name] = tensor.contiguous()
    return out


def write_marian(restored: Any, folder: Path, quantization: str | None) -> None:
    """The checkpoint ``restored`` as a MarianMT folder in the empty
    ``folder``."""
    model = restored.config.model
    why = refusal(model)
    if why is not None:
        raise RosettaError(f"{restored.folder}: {why}; not exportable to MarianMT")
    tokenizers = restored.tokenizers
    for side in (tokenizers.src, tokenizers.tgt):
        if not isinstance(side, SentencePieceTokenizer | PieceTableTokenizer):
            raise RosettaError(
                f"{restored.folder}: {type(side).__name__}; MarianMT's tokenizer "
                "reads SentencePiece models (tokenizer.kind: sentencepiece)"
            )
    vocab, rows = exported_ids(tokenizers.src.id_pieces(range(len(tokenizers.src))))
    target: tuple[dict[str, int], list[int]] | None = None
    if not model.share_embeddings:  # a table per side, of one size
        pieces = tokenizers.tgt.id_pieces(range(len(tokenizers.tgt)))
        (vocab, rows), target = same_size((vocab, rows), exported_ids(pieces))
    tensors = {
        name: t.detach().float().cpu()
        for name, t in ckpt.model_tensors(restored.model).items()
    }
    if model.sinusoids == "interleaved":
        tensors = permuted_width(tensors, halves_order(model.d_model))
    written = marian_tensors(tensors, model, rows, target and target[1])
    ckpt.save_tensors(written, folder / SAFETENSORS_FILE)
    size = len(vocab)
    config = marian_config(model, size, size)
    write(folder / CONFIG_FILE, config)
    meta = ckpt.read_meta(restored.folder)
    imported = ckpt.imported_record(meta)
    generation = imported.generation if imported is not None else {}
    write(
        folder / GENERATION_FILE,
        {
            "bad_words_ids": [[size - 1]],
            "decoder_start_token_id": size - 1,
            "eos_token_id": 0,
            "forced_eos_token_id": 0,
            "pad_token_id": size - 1,
            # a model trained here searches as rosetta translate does by
            # default (greedy); an imported one keeps the settings it came with
            "num_beams": generation.get("num_beams", 1),
            "max_length": generation.get("max_length", model.max_positions),
        },
    )
    data = restored.config.data
    write(
        folder / TOKENIZER_CONFIG,
        {
            "tokenizer_class": "MarianTokenizer",
            "source_lang": data.src_lang,
            "target_lang": data.tgt_lang,
            "separate_vocabs": target is not None,
            "model_max_length": model.max_positions,
        },
    )
    write(folder / VOCAB_FILE, vocab)
    if target is not None:
        write(folder / TARGET_VOCAB_FILE, target[0])
    (folder / SOURCE_SPM).write_bytes(tokenizers.src.model_bytes)
    (folder / TARGET_SPM).write_bytes(tokenizers.tgt.model_bytes)


def marian_tensors(
    tensors: dict[str, torch.Tensor],
    model: Any,
    rows: list[int],
    target_rows: list[int] | None = None,
) -> dict[str, torch.Tensor]:
    """MarianMT's names and id order for Rosetta's tensors: one shared table,
    or (``target_rows``) a table per side."""
    sizes = {
        "encoder_layers": model.encoder_layers,
        "decoder_layers": model.decoder_layers,
    }
    out = {theirs: tensors[ours] for theirs, ours in layer_names(sizes).items()}
    source = filled(tensors["encoder.embedding.token.weight"], rows)
    output_rows = rows if target_rows is None else target_rows
    if target_rows is None:
        out["model.shared.weight"] = source
    else:  # transformers ties the output layer to the decoder's table
        out["model.encoder.embed_tokens.weight"] = source
        target = filled(tensors["decoder.embedding.token.weight"], target_rows)
        out["model.decoder.embed_tokens.weight"] = target
    bias = tensors.get("output_proj.bias")
    if bias is None:
        bias = torch.zeros(max(output_rows) + 1)
    out["final_logits_bias"] = filled(bias, output_rows, NEVER).unsqueeze(0)
    if not model.tie_output:
        out["lm_head.weight"] = filled(tensors["output_proj.weight"], output_rows)
        if target_rows is None:
            # transformers 5 reads tie_word_embeddings false as "tie nothing":
            # the encoder's and decoder's tables are then read from their own
            # names (missing, they would be drawn at random), so each is written
            for side in ("encoder", "decoder"):
                out[f"model.{side}.embed_tokens.weight"] = source.clone()
    return out


NEVER = -1e4  # the logit bias of a filler row: exp(-10^4) is 0 in float32
FILLER = -1  # a row that holds no token: zeros (and NEVER in the logits bias)


def filled(tensor: torch.Tensor, rows: list[int], fill: float = 0.0) -> torch.Tensor:
    """``take_rows`` where a row of ``FILLER`` is ``fill``."""
    taken = take_rows(tensor, [max(row, 0) for row in rows])
    taken[torch.tensor(rows) == FILLER] = fill
    return taken


def same_size(
    source: tuple[dict[str, int], list[int]], target: tuple[dict[str, int], list[int]]
) -> tuple[tuple[dict[str, int], list[int]], tuple[dict[str, int], list[int]]]:
    """Both sides' vocabularies (``exported_ids``) of one size, the smaller
    filled up before its ``<pad>`` with rows that hold no token: MarianMT has
    one ``<pad>`` id for both."""
    size = max(len(source[0]), len(target[0]))

    def grown(
        vocab: dict[str, int], rows: list[int]
    ) -> tuple[dict[str, int], list[int]]:
        pad_row = rows[-1]
        vocab = {piece: i for piece, i in vocab.items() if piece != "<pad>"}
        rows = rows[:-1]
        for i in range(len(vocab), size - 1):
            vocab[f"<unused{i}>"] = i
            rows.append(FILLER)
        vocab["<pad>"] = size - 1
        return vocab, [*rows, pad_row]

    return grown(*source), grown(*target)


def write(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
