"""Markup read as HTML is read (``html.parser``): generated well-formed
lines give back their tags, in order and nesting, each byte for byte, and
whatever the alignment, the output is well-formed and holds every tag."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rosetta.inference.markup import _Reader, restore_markup, strip_markup

NAMES = st.sampled_from(["b", "i", "a", "span", "b:x", "my-tag", "g1"])
VALUES = st.text(
    alphabet=st.sampled_from([*"ab >/<=&'", "ü", "\\"]), max_size=6
).filter(lambda v: '"' not in v)
WORDS = st.sampled_from(["Hund", "läuft.", "im", "Schnee", "3", "a&amp;b"])


@st.composite
def attributes(draw) -> str:
    pairs = draw(st.lists(st.tuples(st.sampled_from(["href", "id", "k"]), VALUES)))
    return "".join(f' {key}="{value}"' for key, value in pairs[:2])


@st.composite
def markup(draw, depth: int = 0) -> str:
    """A well-formed run of words, pairs around some of them, and lone tags,
    a space between two words or pairs (markup inside a word goes to the
    word: the alignment knows words); a lone tag glued to the end of what
    it follows, or not."""
    items, kinds = [], []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["word", "word", "pair", "lone"]))
        if kind == "pair" and depth < 3:
            name = draw(NAMES)
            inner = draw(markup(depth + 1))
            items.append(f"<{name}{draw(attributes())}>{inner}</{name}>")
        elif kind == "lone":
            items.append(draw(st.sampled_from(["<br/>", "<x/>", "<br>", "<!-- c -->"])))
        else:
            kind = "word"
            items.append(draw(WORDS))
        kinds.append(kind)
    line = items[0]
    for index in range(1, len(items)):  # a lone tag may be glued to the end
        glued = kinds[index] == "lone" and kinds[index - 1] != "lone"
        line += draw(st.sampled_from(["", " "])) if glued else " "
        line += items[index]
    return line


def tag_events(line: str) -> list[str]:
    """The tags of ``line`` as written, in order, each as HTML reads it; the
    line is first checked to be well-formed (``strip_markup`` refuses tags
    that do not pair up)."""
    strip_markup(line)
    reader = _Reader(line)
    reader.feed(line)
    reader.close()
    return [raw for _, _, raw, _, _ in reader.events]


@pytest.mark.reference
@settings(deadline=None)  # a busy machine must not fail it by the clock
@given(markup())
def test_the_tags_out_are_the_tags_in(line):
    plain, tags = strip_markup(line)
    words = plain.split()
    identity = " ".join(f"{i}-{i}" for i in range(len(words)))
    restored = restore_markup(plain, identity, tags)
    assert tag_events(restored) == tag_events(line)
    assert strip_markup(restored)[0] == plain


@settings(deadline=None)
@given(markup(), st.randoms(use_true_random=False))
def test_any_alignment_gives_well_formed_output_with_every_tag(line, rng):
    plain, tags = strip_markup(line)
    words = plain.split()
    shuffled = list(range(len(words)))
    rng.shuffle(shuffled)
    links = [f"{s}-{t}" for s, t in enumerate(shuffled) if rng.random() < 0.8]
    restored = restore_markup(" ".join(words), " ".join(links), tags)
    assert sorted(tag_events(restored)) == sorted(tag_events(line))  # parses
    assert strip_markup(restored)[0].split() == words


@pytest.mark.parametrize(
    ("line", "plain", "first"),
    [
        ('<a title="x>y">Hund</a> läuft', "Hund läuft", '<a title="x>y">'),
        ("<b:x>Hund</b:x> läuft", "Hund läuft", "<b:x>"),
        ("<my-tag a='1'>Hund</my-tag>", "Hund", "<my-tag a='1'>"),
    ],
)
def test_what_patterns_cut_html_reads_whole(line, plain, first):
    found, tags = strip_markup(line)
    assert found == plain and tags[0].opening == first


def test_a_tag_glued_to_the_end_of_a_word_stays_after_it():
    _, tags = strip_markup("Ein Hund läuft.<br/>")
    assert restore_markup("A dog running.", "0-0 1-1 2-2", tags) == (
        "A dog running.<br/>"
    )


def test_tags_alone_keep_their_nesting_and_siblings_stay_siblings():
    _, tags = strip_markup("<b><i></i></b>")
    assert restore_markup("", "", tags) == "<b><i></i></b>"
    _, tags = strip_markup("<b>eins</b> <i>zwei</i>")
    assert restore_markup("one two", "0-0 1-0 1-1", tags) == "<b>one</b> <i>two</i>"


def test_what_html_does_not_read_as_a_tag_is_refused():
    with pytest.raises(ValueError, match="<ü> is not a tag HTML reads"):
        strip_markup("Ein <ü>Hund</ü>")
    assert strip_markup("3 < 5 &lt;ü&gt;")[0] == "3 < 5 &lt;ü&gt;"  # text
