"""Word alignments and the fertilities a non-autoregressive model learns.

A fertility says how many target tokens a source token accounts for. They
are read off word alignments: pairs ``i-j`` (source token ``i`` is a
translation of target token ``j``, the "Pharaoh" format) found by eflomal,
an established statistical aligner (a Bayesian IBM-model aligner sampled
with Gibbs sampling), run on the model's own tokens.

In the forward direction every target token is aligned to at most one
source token. ``fertilities_from_links`` gives a target token that has none
the source token of its nearest aligned neighbour (the one before it when
both are as near), so that the fertilities of a pair always add up to its
target length; and caps every fertility at ``max_fertility``, passing the
excess on to the next source token in order.
"""

from __future__ import annotations

from collections.abc import Sequence

from rosetta.errors import RosettaError

Link = tuple[int, int]  # (source index, target index)


def parse_links(line: str, where: str = "links") -> list[Link]:
    """``"0-0 1-2 3-1"`` -> ``[(0, 0), (1, 2), (3, 1)]``; ``where`` names the
    file and line in the error a malformed pair raises."""
    links = []
    for pair in line.split():
        source, dash, target = pair.partition("-")
        if not (dash and source.isdigit() and target.isdigit()):
            raise RosettaError(f"{where}: {pair!r} is not an alignment link i-j")
        links.append((int(source), int(target)))
    return links


def fertilities_from_links(
    links: Sequence[Link], source_length: int, target_length: int, max_fertility: int
) -> list[int]:
    """The fertility of each of ``source_length`` tokens (module docstring).

    Raises ``ValueError`` where a link falls outside the sentence, or where
    ``source_length × max_fertility`` cannot hold the target."""
    if source_length * max_fertility < target_length:
        raise ValueError(
            f"{target_length} target tokens do not fit in {source_length} source "
            f"tokens of fertility at most {max_fertility}"
        )
    source_of: list[int | None] = [None] * target_length
    for source, target in links:
        if not (0 <= source < source_length and 0 <= target < target_length):
            raise ValueError(
                f"link {source}-{target} is outside a pair of {source_length} "
                f"and {target_length} tokens"
            )
        if source_of[target] is None:  # the first link of a target token wins
            source_of[target] = source
    aligned = [j for j, source in enumerate(source_of) if source is not None]
    fertilities = [0] * source_length
    for j in range(target_length):
        source = source_of[j]
        if source is None and aligned:
            nearest = min(aligned, key=lambda k: (abs(k - j), k))
            source = source_of[nearest]
        elif source is None:  # nothing aligned: spread in order
            source = j * source_length // target_length
        assert source is not None
        fertilities[source] += 1
    return cap_fertilities(fertilities, max_fertility)


def cap_fertilities(fertilities: list[int], max_fertility: int) -> list[int]:
    """Every fertility at most ``max_fertility``, the excess passed on to the
    next token in order (and from the last, back to the ones before it); the
    total is kept when it fits."""
    capped, carry = [], 0
    for fertility in fertilities:
        total = fertility + carry
        capped.append(min(total, max_fertility))
        carry = total - capped[-1]
    for i in reversed(range(len(capped))):
        if not carry:
            break
        room = max_fertility - capped[i]
        capped[i] += min(room, carry)
        carry -= min(room, carry)
    return capped


def align(sources: Sequence[str], targets: Sequence[str]) -> list[list[Link]]:
    """Forward alignments of tokenized sentence pairs (tokens separated by
    spaces) with eflomal: one list of links per pair."""
    try:
        import eflomal
    except ImportError as error:  # pragma: no cover - a dependency
        raise RosettaError(
            "fertilities need the eflomal aligner: pip install eflomal"
        ) from error
    import tempfile
    from pathlib import Path

    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    with tempfile.TemporaryDirectory() as folder:
        forward = Path(folder) / "forward.links"
        eflomal.Aligner().align(
            list(sources), list(targets), links_filename_fwd=str(forward), quiet=True
        )
        lines = forward.read_text(encoding="utf-8").splitlines()
    return [
        parse_links(line, f"eflomal output, line {number}")
        for number, line in enumerate(lines, start=1)
    ]
