"""Copy a trained Rosetta Transformer into the peer engines, weight for weight.

- Hugging Face ``MarianMTModel``: the same post-norm architecture. Marian lays
  its sinusoids out as [sin | cos] halves where Rosetta interleaves them,
  so the model width is permuted consistently everywhere (every
  residual-stream weight, LayerNorm and embedding), which computes the same
  function.
- CTranslate2: the product's own export (``rosetta export ctranslate2``,
  ``rosetta.families.transformer.ctranslate2.export``).

``check_copy`` compares the peers' log-probabilities with Rosetta's on real
input, so a benchmark never compares different models.
"""

from __future__ import annotations

import torch

from rosetta import Translator
from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID
from rosetta.families.transformer.model import TransformerDecoder, TransformerEncoder


def _width_permutation(d_model: int) -> torch.Tensor:
    """Marian dim i < d/2 is Rosetta dim 2i (sin); dim d/2 + i is 2i + 1 (cos)."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def marian_config(
    *,
    vocab: int,
    d_model: int,
    encoder_layers: int,
    decoder_layers: int,
    heads: int,
    d_ff: int,
    max_positions: int,
    dropout: float = 0.0,
    attention_dropout: float = 0.0,
):
    """A ``MarianConfig`` of Rosetta's Transformer shape: post-norm, ReLU,
    scaled and shared embeddings, tied output, Rosetta's special token ids."""
    from transformers import MarianConfig

    return MarianConfig(
        vocab_size=vocab,
        decoder_vocab_size=vocab,
        d_model=d_model,
        encoder_layers=encoder_layers,
        decoder_layers=decoder_layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=d_ff,
        decoder_ffn_dim=d_ff,
        activation_function="relu",
        max_position_embeddings=max_positions,
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        pad_token_id=PAD_ID,
        eos_token_id=EOS_ID,
        bos_token_id=BOS_ID,
        decoder_start_token_id=BOS_ID,
        forced_eos_token_id=None,
        dropout=dropout,
        attention_dropout=attention_dropout,
        activation_dropout=dropout,  # Rosetta's FFN drops its inner activations too
    )


def to_marian(translator: Translator):
    """A ``MarianMTModel`` computing what ``translator.model`` computes."""
    from transformers import MarianMTModel

    model = translator.model
    encoder: TransformerEncoder = model.encoder
    decoder: TransformerDecoder = model.decoder
    if encoder.embedding.token is not decoder.embedding.token:
        raise ValueError("the Marian copy needs shared source/target embeddings")
    first = encoder.layers[0]
    d_model = encoder.embedding.token.embedding_dim
    config = marian_config(
        vocab=encoder.embedding.token.num_embeddings,
        d_model=d_model,
        encoder_layers=len(encoder.layers),
        decoder_layers=len(decoder.layers),
        heads=first.self_attn.heads,
        d_ff=first.ffn.linear1.out_features,
        max_positions=encoder.embedding.positions.size(0),
    )
    marian = MarianMTModel(config).eval()
    p = _width_permutation(d_model)
    ours = model.state_dict()
    theirs: dict[str, torch.Tensor] = {}

    def linear(dst: str, src: str, permute_in: bool, permute_out: bool) -> None:
        weight, bias = ours[f"{src}.weight"], ours[f"{src}.bias"]
        if permute_in:
            weight = weight[:, p]
        if permute_out:
            weight, bias = weight[p], bias[p]
        theirs[f"{dst}.weight"], theirs[f"{dst}.bias"] = weight, bias

    def norm(dst: str, src: str) -> None:
        theirs[f"{dst}.weight"] = ours[f"{src}.weight"][p]
        theirs[f"{dst}.bias"] = ours[f"{src}.bias"][p]

    def attention(dst: str, src: str) -> None:
        for a, b in (("q_proj", "q_proj"), ("k_proj", "k_proj"), ("v_proj", "v_proj")):
            linear(f"{dst}.{a}", f"{src}.{b}", permute_in=True, permute_out=False)
        linear(f"{dst}.out_proj", f"{src}.out_proj", permute_in=False, permute_out=True)

    def ffn(dst: str, src: str) -> None:
        linear(f"{dst}.fc1", f"{src}.ffn.linear1", permute_in=True, permute_out=False)
        linear(f"{dst}.fc2", f"{src}.ffn.linear2", permute_in=False, permute_out=True)

    embedding = ours["encoder.embedding.token.weight"][:, p]
    theirs["model.shared.weight"] = embedding
    theirs["model.encoder.embed_tokens.weight"] = embedding
    theirs["model.decoder.embed_tokens.weight"] = embedding
    theirs["lm_head.weight"] = embedding
    for i in range(len(encoder.layers)):
        dst, src = f"model.encoder.layers.{i}", f"encoder.layers.{i}"
        attention(f"{dst}.self_attn", f"{src}.self_attn")
        norm(f"{dst}.self_attn_layer_norm", f"{src}.attn_res.norm")
        ffn(dst, src)
        norm(f"{dst}.final_layer_norm", f"{src}.ffn_res.norm")
    for i in range(len(decoder.layers)):
        dst, src = f"model.decoder.layers.{i}", f"decoder.layers.{i}"
        attention(f"{dst}.self_attn", f"{src}.self_attn")
        norm(f"{dst}.self_attn_layer_norm", f"{src}.self_res.norm")
        attention(f"{dst}.encoder_attn", f"{src}.cross_attn")
        norm(f"{dst}.encoder_attn_layer_norm", f"{src}.cross_res.norm")
        ffn(dst, src)
        norm(f"{dst}.final_layer_norm", f"{src}.ffn_res.norm")
    missing, unexpected = marian.load_state_dict(theirs, strict=False)
    left = [k for k in missing if "embed_positions" not in k and "logits_bias" not in k]
    if left or unexpected:
        raise RuntimeError(f"Marian copy: missing {left}, unexpected {unexpected}")
    return marian


def check_copy(translator: Translator, marian, sentences: list[str]) -> float:
    """Largest difference of teacher-forced log-probabilities, Rosetta vs Marian."""
    from rosetta.data import Example, collate

    tok = translator.tokenizers
    examples = [Example(tok.src.encode(s), tok.tgt.encode(s)) for s in sentences]
    batch = collate(examples)
    mask = batch.tgt_in != PAD_ID
    ours = torch.log_softmax(
        translator.model.output_proj(
            translator.model(batch.src, batch.src_mask, batch.tgt_in, mask)
        ),
        dim=-1,
    )
    theirs = marian(
        input_ids=batch.src,
        attention_mask=batch.src_mask.long(),
        decoder_input_ids=batch.tgt_in,
        decoder_attention_mask=mask.long(),
    ).logits.log_softmax(dim=-1)
    return float((ours - theirs)[mask].abs().max())
