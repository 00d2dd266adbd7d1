import pytest

from rosetta.config.sections import TokenizerConfig
from rosetta.data import TokenizerPair, Vocabulary, WordTokenizer
from rosetta.data.tokenizer import SentencePieceTokenizer, tokenizer_from_dict
from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID

SENTENCES = [
    "Ein Mann fährt Fahrrad.",
    "Eine Frau liest ein Buch.",
    "Zwei Hunde spielen.",
    "A man rides a bike.",
    "A woman reads a book.",
    "Two dogs play.",
] * 20


def test_word_tokenizer_lowercases_and_splits_punctuation():
    assert WordTokenizer.split("Hello, World! It's 3pm.") == [
        "hello",
        ",",
        "world",
        "!",
        "it",
        "'",
        "s",
        "3pm",
        ".",
    ]


def test_vocabulary_specials_and_min_freq():
    vocab = Vocabulary.build([["a", "b", "a"], ["a", "c", "b"]], min_freq=2)
    assert vocab.tokens == ["<pad>", "<unk>", "<bos>", "<eos>", "a", "b"]
    assert (PAD_ID, UNK_ID, BOS_ID, EOS_ID) == (0, 1, 2, 3)
    assert vocab.to_ids(["a", "c"]) == [4, UNK_ID]


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_sentencepiece_round_trip_and_serialisation(model_type):
    config = TokenizerConfig(vocab_size=60, model_type=model_type)
    tokenizer = SentencePieceTokenizer.train(SENTENCES, config)
    assert tokenizer.processor.id_to_piece(list(range(4))) == [
        "<pad>",
        "<unk>",
        "<bos>",
        "<eos>",
    ]
    ids = tokenizer.encode("Ein Mann liest.")
    assert all(i >= 4 or i == UNK_ID for i in ids)
    assert tokenizer.decode(ids) == "Ein Mann liest."
    again = tokenizer_from_dict(tokenizer.to_dict())
    assert again.encode("Zwei Hunde.") == tokenizer.encode("Zwei Hunde.")


def test_joint_and_separate_pairs():
    pairs = list(zip(SENTENCES[:3] * 20, SENTENCES[3:6] * 20, strict=True))
    joint = TokenizerPair.train(pairs, TokenizerConfig(kind="word"))
    assert joint.joint and "mann" in joint.src.vocab.index
    assert "man" in joint.src.vocab.index
    separate = TokenizerPair.train(pairs, TokenizerConfig(kind="word", joint=False))
    assert not separate.joint and "man" not in separate.src.vocab.index
    restored = TokenizerPair.from_dict(separate.to_dict())
    assert restored.tgt.encode("a man") == separate.tgt.encode("a man")
