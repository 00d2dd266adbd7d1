"""Word alignments read off a translation's cross-attention, in Pharaoh
format: ``i-j`` links source word ``i`` to target word ``j`` (from 0), the
words as the text splits on spaces.

Each target token is linked to the source token its attention weighs most
(one layer, the mean over its heads; ``<eos>`` left out on both sides), and
each link between tokens becomes a link between the words they belong to
(subword pieces folded into their words). The layer: the last, whose
attention followed the words best of the three of the bundled default
(``benchmarks/alignment_quality.py``, against hand-made alignments: 25.7%
alignment error, 42.9% and 78.7% for the layers below it).

A token's word is found by decoding the tokens up to it: its word is the
last word of that text, so the rule holds for SentencePiece pieces, word
and character vocabularies alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from rosetta.data.tokenizer import Tokenizer, TokenizerPair

if TYPE_CHECKING:
    from rosetta.inference.translation import Translation


def word_of_each_token(tokenizer: Tokenizer, ids: Sequence[int]) -> list[int]:
    """For each token of ``ids``, the index (from 0) of the word of the
    decoded text it belongs to; a token that writes only a space joins the
    word before it (or the first)."""
    found = []
    for end in range(1, len(ids) + 1):
        found.append(max(len(tokenizer.decode(list(ids[:end])).split()) - 1, 0))
    return found


def default_layer(layers: int) -> int:
    """The layer whose attention the links are read from: the last."""
    return layers - 1


def links_from_attention(
    attention: torch.Tensor,
    source_words: Sequence[int],
    target_words: Sequence[int],
    layer: int | None = None,
) -> list[tuple[int, int]]:
    """Word links from ``attention`` (L, layers, heads, S): its rows of the
    target tokens (``target_words``: their words) over the source tokens
    (``source_words``: the words of the first S - 1; the last is ``<eos>``)."""
    chosen = default_layer(attention.size(1)) if layer is None else layer
    weights = attention[: len(target_words), chosen].float().mean(dim=1)  # (T, S)
    weights = weights[:, : len(source_words)]  # <eos> is no word
    if weights.numel() == 0:
        return []
    strongest = weights.argmax(dim=1).tolist()
    return sorted({(source_words[s], target_words[t]) for t, s in enumerate(strongest)})


def pharaoh(links: Sequence[tuple[int, int]]) -> str:
    """``links`` as ``i-j i-j ...``."""
    return " ".join(f"{i}-{j}" for i, j in links)


def users_words(tokenizer: Tokenizer, text: str, found: int) -> list[int]:
    """For each of the ``found`` words of ``text`` as the tokenizer writes it
    (its normalisation may split a word: "Zwei´Männer" is two), the user's
    word (split on spaces) it comes from."""
    owner = [
        word
        for word, piece in enumerate(text.split())
        for _ in range(max(len(tokenizer.decode(tokenizer.encode(piece)).split()), 1))
    ]
    if len(owner) != found:  # normalised otherwise in context: keep in range
        return [min(word, max(len(text.split()) - 1, 0)) for word in range(found)]
    return owner


def add_alignments(
    found: Sequence[Sequence[Translation]],
    sources: Sequence[Sequence[int]],
    tokenizers: TokenizerPair,
    skip_source_words: int = 0,
    texts: Sequence[str] | None = None,
) -> None:
    """Set each translation's ``alignment`` (Pharaoh) from its attention;
    ``skip_source_words``: words the source was given ahead of the user's
    text (a multilingual model's language token), left out; ``texts``: the
    user's lines, whose words the links name (else the words the tokenizer
    writes)."""
    for number, (translations, source) in enumerate(zip(found, sources, strict=True)):
        if not translations:
            continue
        source_words = [
            word - skip_source_words
            for word in word_of_each_token(tokenizers.src, source)
        ]
        if texts is not None and source_words:
            owner = users_words(tokenizers.src, texts[number], max(source_words) + 1)
            source_words = [owner[w] if w >= 0 else w for w in source_words]
        for translation in translations:
            if translation.attention is None:
                raise ValueError("alignments need the attention weights")
            target_words = word_of_each_token(tokenizers.tgt, translation.token_ids)
            links = links_from_attention(
                translation.attention, source_words, target_words
            )
            translation.alignment = pharaoh([(i, j) for i, j in links if i >= 0])
