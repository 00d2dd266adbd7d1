import pytest

from rosetta.errors import RosettaError
from rosetta.families.nat.align import (
    align,
    cap_fertilities,
    fertilities_from_links,
    parse_links,
)


def test_links_are_read_and_a_bad_one_names_where_it_is():
    assert parse_links("0-0 2-1 1-3\n") == [(0, 0), (2, 1), (1, 3)]
    assert parse_links("") == []
    with pytest.raises(RosettaError, match=r"train.links:4: '1:2' is not"):
        parse_links("0-0 1:2", "train.links:4")


def test_fertilities_count_the_target_tokens_of_each_source_token():
    # "das haus ist <eos>" -> "the house is": one each, none for <eos>
    assert fertilities_from_links([(0, 0), (1, 1), (2, 2)], 4, 3, 8) == [1, 1, 1, 0]
    # one source token, two target tokens; a second link of a target ignored
    links = [(0, 0), (1, 1), (1, 2), (2, 2)]
    assert fertilities_from_links(links, 3, 3, 8) == [1, 2, 0]


def test_an_unaligned_target_token_goes_with_its_nearest_aligned_neighbour():
    # target 1 is as near to 0 as to 2: the one before wins; target 4 -> 3's
    links = [(0, 0), (2, 2), (1, 3)]
    assert fertilities_from_links(links, 3, 5, 8) == [2, 2, 1]
    # nothing aligned: the target spreads over the source in order
    assert fertilities_from_links([], 2, 4, 8) == [2, 2]


def test_fertilities_above_the_cap_pass_on_in_order_and_keep_the_total():
    assert cap_fertilities([5, 0, 1], 2) == [2, 2, 2]
    assert cap_fertilities([0, 1, 4], 2) == [1, 2, 2]  # the excess goes back
    links = [(0, j) for j in range(5)]
    assert fertilities_from_links(links, 3, 5, 2) == [2, 2, 1]
    with pytest.raises(ValueError, match="do not fit"):
        fertilities_from_links(links, 2, 5, 2)
    with pytest.raises(ValueError, match="outside"):
        fertilities_from_links([(3, 0)], 3, 1, 2)


def test_eflomal_aligns_a_small_corpus_word_for_word():
    """Words that always occur together are aligned to each other."""
    words = [("haus", "house"), ("katze", "cat"), ("hund", "dog"), ("baum", "tree")]
    sources, targets = [], []
    for shift in range(40):
        picked = [words[(shift + k) % 4] for k in range(1 + shift % 3)]
        sources.append(" ".join(german for german, _ in picked))
        targets.append(" ".join(english for _, english in picked))
    found = align(sources, targets)
    assert len(found) == len(sources)
    right = sum(link[0] == link[1] for links in found for link in links)
    assert right / sum(len(links) for links in found) >= 0.95
