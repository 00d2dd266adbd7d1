"""Long text: read whole with clear errors, tokenized by character, laid out
as parallel streams of consecutive segments."""

import gzip

import numpy as np
import pytest
import torch

from rosetta.data.text import TokenStreams, read_text, text_blocks
from rosetta.data.tokenizer import CharacterTokenizer, tokenizer_from_dict
from rosetta.errors import RosettaError


def test_text_is_read_whole_and_bad_bytes_are_placed(tmp_path):
    plain = tmp_path / "a.txt"
    plain.write_bytes(b"one\r\ntwo\n\nthree")
    assert read_text(plain) == "one\r\ntwo\n\nthree"  # nothing normalised
    packed = tmp_path / "a.txt.gz"
    packed.write_bytes(gzip.compress("ünï\n".encode()))
    assert read_text(packed) == "ünï\n"
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nalso fine\nab\xffc\n")
    with pytest.raises(RosettaError, match=r"bad\.txt:3: invalid UTF-8 at byte 2"):
        read_text(bad)
    with pytest.raises(RosettaError, match=r"absent\.txt: file not found"):
        read_text(tmp_path / "absent.txt")


@pytest.mark.parametrize("block_bytes", [1, 5, 12, 1000])
def test_blocks_of_whole_lines_join_to_the_text_and_place_bad_bytes(
    tmp_path, block_bytes
):
    path = tmp_path / "a.txt"
    path.write_bytes("one\r\ntwö\n\nthree\nfour".encode())
    blocks = list(text_blocks(path, block_bytes))
    assert "".join(blocks) == read_text(path)
    assert all(block.endswith("\n") for block in blocks[:-1])
    path.write_bytes(b"one\ntwo\nthree\nfo\xffur\n")
    with pytest.raises(RosettaError, match=r"a\.txt:4: invalid UTF-8 at byte 2"):
        list(text_blocks(path, block_bytes))


def test_characters_are_tokens_and_unseen_ones_are_unknown():
    tokenizer = CharacterTokenizer.train(["hello", "world!"])
    assert len(tokenizer) == 4 + len(set("helloworld!"))
    ids = tokenizer.encode("hold\n")
    assert tokenizer.decode(ids) == "hold"  # the unseen "\n" is <unk>, dropped
    assert tokenizer.id_pieces(ids)[-1] == "<unk>"
    again = tokenizer_from_dict(tokenizer.to_dict())
    assert again.encode("world") == tokenizer.encode("world")


def test_streams_cut_into_consecutive_segments_with_shifted_labels():
    streams = TokenStreams.of(list(range(23)), 2)  # 11 per row, 1 left out
    assert streams.rows.tolist() == [list(range(11)), list(range(11, 22))]
    assert streams.segments(4) == 3  # 10 inputs with a label each: 4 + 4 + 2
    inputs, labels = streams.segment(1, 4)
    assert inputs.tolist() == [[4, 5, 6, 7], [15, 16, 17, 18]]
    assert labels.tolist() == [[5, 6, 7, 8], [16, 17, 18, 19]]
    last_inputs, last_labels = streams.segment(2, 4)
    assert last_inputs.tolist() == [[8, 9], [19, 20]]
    assert torch.equal(last_labels, last_inputs + 1)
    with pytest.raises(IndexError):
        streams.segment(3, 4)
    with pytest.raises(RosettaError, match="cannot fill 8 streams"):
        TokenStreams.of(list(range(10)), 8)


def test_streams_over_a_stored_array_give_the_same_int64_segments():
    stored = TokenStreams.of(np.arange(23, dtype=np.uint16), 2)
    inputs, labels = stored.segment(1, 4)
    assert inputs.dtype == labels.dtype == torch.int64
    assert (
        inputs.tolist() == TokenStreams.of(list(range(23)), 2).segment(1, 4)[0].tolist()
    )
