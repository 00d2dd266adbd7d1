"""Export a Rosetta Transformer to CTranslate2, a C++ inference engine.

``write_export(restored, folder)`` writes a CTranslate2 model that computes
what the Rosetta model computes: the same weights (the self-attention's query,
key and value projections side by side, as CTranslate2 keeps them), the same
sinusoidal position table, the embeddings scaled by sqrt(d), post-norm or
pre-norm layers, and Rosetta's vocabularies and special tokens. Beside it,
``rosetta.json`` holds the tokenizers and the configuration, so the folder
alone translates text (``rosetta.families.transformer.ctranslate2.engine``).

CTranslate2 is an optional dependency: ``pip install rosetta-nmt[ct2]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rosetta.data.vocab import BOS, BOS_ID, EOS, UNK
from rosetta.errors import RosettaError
from rosetta.families.transformer.ctranslate2.files import ENGINE_FILE
from rosetta.families.transformer.model import TransformerDecoder, TransformerEncoder
from rosetta.families.transformer.positions.base import scheme_of
from rosetta.runs import checkpoint as ckpt
from rosetta.runtime.atomic import write_json_atomic
from rosetta.runtime.records import Record, read_checked

NEVER_STARTS = -1e4  # the logit bias of <bos>


def import_ctranslate2() -> Any:
    try:
        import ctranslate2
    except ImportError:
        raise RosettaError(
            "CTranslate2 is not installed: pip install 'rosetta-nmt[ct2]' "
            "(or pip install ctranslate2)"
        ) from None
    return ctranslate2


def write_export(restored: Any, output: Path, quantization: str | None) -> None:
    """The CTranslate2 model of the restored checkpoint ``restored`` into the
    empty folder ``output`` (``rosetta.jobs.exports`` makes it and renames
    it into place). ``quantization`` is CTranslate2's weight type (None:
    float32). A Transformer whose positions CTranslate2 cannot compute is
    refused."""
    import_ctranslate2()
    folder = restored.folder
    positions = restored.config.model.positions
    scheme = scheme_of(positions)
    if not scheme.exports_to("ctranslate2"):
        raise RosettaError(
            f"{folder}: model.positions is {positions}; "
            f"{scheme.ctranslate2_refusal}, only "
            "absolute sinusoidal positions: to export to CTranslate2, train "
            "with model.positions=sinusoidal (the bundled configuration's)"
        )
    model = restored.config.model
    if model.embedding_norm or not model.scale_embeddings:
        raise RosettaError(
            f"{folder}: model.embedding_norm or model.scale_embeddings: false; "
            "this export writes a Transformer whose embeddings are scaled by "
            "sqrt(d_model) and not normalised"
        )
    if model.start_token != "bos":
        raise RosettaError(
            f"{folder}: model.start_token {model.start_token} (a decoder that "
            "starts from </s>, as NLLB's, M2M100's and mBART's do); this export "
            "writes a decoder that starts from <bos>: export them with "
            "rosetta export hf"
        )
    spec = _transformer_spec(restored)
    meta = ckpt.read_meta(folder)
    engine = {
        "format": 1,
        "config": meta["config"],
        "tokenizers": meta["tokenizers"],
        "exported_from": str(folder),
        "quantization": quantization or "float32",
    }
    _convert(spec, output, quantization)
    write_json_atomic(output / ENGINE_FILE, engine)


def _transformer_spec(restored: Any) -> Any:
    from ctranslate2.specs import transformer_spec

    model = restored.model
    encoder: TransformerEncoder = model.encoder
    decoder: TransformerDecoder = model.decoder
    weights = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    norm_first = encoder.layers[0].attn_res.norm_first

    def linear(spec: Any, *names: str) -> None:  # several: stacked along the rows
        spec.weight = np.concatenate([weights[f"{n}.weight"] for n in names])
        spec.bias = np.concatenate([weights[f"{n}.bias"] for n in names])

    def norm(spec: Any, name: str) -> None:
        spec.gamma, spec.beta = weights[f"{name}.weight"], weights[f"{name}.bias"]

    def self_attention_and_ffn(layer: Any, scope: str, attention_norm: str) -> None:
        attention = f"{scope}.self_attn"
        projections = [f"{attention}.{p}_proj" for p in ("q", "k", "v")]
        linear(layer.self_attention.linear[0], *projections)
        linear(layer.self_attention.linear[1], f"{attention}.out_proj")
        norm(layer.self_attention.layer_norm, f"{scope}.{attention_norm}.norm")
        linear(layer.ffn.linear_0, f"{scope}.ffn.linear1")
        linear(layer.ffn.linear_1, f"{scope}.ffn.linear2")
        norm(layer.ffn.layer_norm, f"{scope}.ffn_res.norm")

    from ctranslate2.specs.common_spec import Activation

    activations = {
        "relu": Activation.RELU,
        "gelu": Activation.GELU,
        "swish": Activation.SWISH,
    }
    spec = transformer_spec.TransformerSpec.from_config(
        (len(encoder.layers), len(decoder.layers)),
        encoder.layers[0].self_attn.heads,
        pre_norm=norm_first,
        activation=activations[encoder.layers[0].ffn.activation],
    )
    spec.config.decoder_start_token = BOS
    spec.config.bos_token, spec.config.eos_token, spec.config.unk_token = BOS, EOS, UNK
    for side, embedding in ((spec.encoder, encoder), (spec.decoder, decoder)):
        side.scale_embeddings = True
        side.position_encodings.encodings = embedding.embedding.positions.numpy()
    spec.encoder.embeddings[0].weight = weights["encoder.embedding.token.weight"]
    spec.decoder.embeddings.weight = weights["decoder.embedding.token.weight"]
    spec.decoder.projection.weight = weights["output_proj.weight"]
    # <bos> left out of the softmax, as Rosetta's search leaves it out
    # (rosetta.search.controls.without_start): exp(-10^4) is 0 in float32
    rows = len(weights["output_proj.weight"])
    bias = np.array(weights.get("output_proj.bias", np.zeros(rows, np.float32)))
    bias[BOS_ID] = NEVER_STARTS
    spec.decoder.projection.bias = bias
    if norm_first:  # the stacks' final layer norms
        norm(spec.encoder.layer_norm, "encoder.final_norm")
        norm(spec.decoder.layer_norm, "decoder.final_norm")
    for i, layer in enumerate(spec.encoder.layer):
        self_attention_and_ffn(layer, f"encoder.layers.{i}", "attn_res")
    for i, layer in enumerate(spec.decoder.layer):
        scope = f"decoder.layers.{i}"
        self_attention_and_ffn(layer, scope, "self_res")
        cross = f"{scope}.cross_attn"
        linear(layer.attention.linear[0], f"{cross}.q_proj")
        linear(layer.attention.linear[1], f"{cross}.k_proj", f"{cross}.v_proj")
        linear(layer.attention.linear[2], f"{cross}.out_proj")
        norm(layer.attention.layer_norm, f"{scope}.cross_res.norm")
    tokenizers = restored.tokenizers
    spec.register_source_vocabulary(
        tokenizers.src.id_pieces(range(len(tokenizers.src)))
    )
    spec.register_target_vocabulary(
        tokenizers.tgt.id_pieces(range(len(tokenizers.tgt)))
    )
    return spec


def _convert(spec: Any, output: Path, quantization: str | None) -> None:
    """CTranslate2's converter, run on a spec built here."""
    from ctranslate2.converters import Converter

    class SpecConverter(Converter):
        def _load(self) -> Any:
            return spec

    # force: the converter refuses an existing folder, and ``output`` is the
    # empty temporary folder made for it
    SpecConverter().convert(str(output), quantization=quantization, force=True)


def read_engine_file(folder: Path) -> dict[str, Any]:
    path = Path(folder) / ENGINE_FILE
    if not path.is_file():
        raise RosettaError(
            f"{folder}: not a CTranslate2 export of Rosetta ({ENGINE_FILE} missing); "
            "make one with rosetta export ctranslate2"
        )
    return read_checked(path, EngineRecord, "a Rosetta CTranslate2 export's record")


class EngineRecord(Record):
    """``rosetta.json``: what the export was made from."""

    format: int
    config: dict[str, Any]
    tokenizers: dict[str, Any]
    exported_from: str
    quantization: str
