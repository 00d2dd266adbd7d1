"""Reading parallel text, tokenization, vocabulary and batching.

The names below are imported when first used (``rosetta.runtime.lazy``): a
light module of this package (the vocabulary's ids) loads no PyTorch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rosetta.runtime.lazy import exports

if TYPE_CHECKING:
    from rosetta.data.batching import (
        Batch,
        Example,
        collate,
        encode_pairs,
        make_batches,
        padding_share,
    )
    from rosetta.data.corpus import FilterReport, read_corpus, read_parallel, read_tsv
    from rosetta.data.encoded_pairs import EncodedPairs
    from rosetta.data.tokenizer import (
        SentencePieceTokenizer,
        Tokenizer,
        TokenizerPair,
        WordTokenizer,
    )
    from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocabulary

WHERE = {
    **dict.fromkeys(
        ["Batch", "Example", "collate", "encode_pairs", "make_batches"],
        "rosetta.data.batching",
    ),
    "padding_share": "rosetta.data.batching",
    **dict.fromkeys(
        ["FilterReport", "read_corpus", "read_parallel", "read_tsv"],
        "rosetta.data.corpus",
    ),
    "EncodedPairs": "rosetta.data.encoded_pairs",
    **dict.fromkeys(
        ["SentencePieceTokenizer", "Tokenizer", "TokenizerPair", "WordTokenizer"],
        "rosetta.data.tokenizer",
    ),
    **dict.fromkeys(
        ["BOS_ID", "EOS_ID", "PAD_ID", "UNK_ID", "Vocabulary"], "rosetta.data.vocab"
    ),
}
__all__ = [
    "BOS_ID",
    "EOS_ID",
    "PAD_ID",
    "UNK_ID",
    "Batch",
    "EncodedPairs",
    "Example",
    "FilterReport",
    "SentencePieceTokenizer",
    "Tokenizer",
    "TokenizerPair",
    "Vocabulary",
    "WordTokenizer",
    "collate",
    "encode_pairs",
    "make_batches",
    "padding_share",
    "read_corpus",
    "read_parallel",
    "read_tsv",
]
__getattr__ = exports(__name__, WHERE)
