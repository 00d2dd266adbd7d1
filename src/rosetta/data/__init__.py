"""Reading parallel text, tokenization, vocabulary and batching."""

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
