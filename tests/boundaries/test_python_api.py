"""Arguments of the Python API: the search options (``SearchOptions``)
refuse, naming the field, a number no search can use: not finite, out of
range, a boolean or a fraction where a whole number belongs. The server's
request of the same fields refuses the same values, and every number goes
through the validator (``rosetta.runtime.limits.check``) whose definitions
the command line and the configuration share
(``tests/boundaries/test_command_line.py``,
``tests/boundaries/test_configuration.py``).
"""

from __future__ import annotations

import math

import pytest

from rosetta.runtime.limits import Count, Seed, check
from rosetta.search.options import SearchOptions
from rosetta.serve.schemas import TranslateRequest

NOT_FINITE = [math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("value", [*NOT_FINITE, 1e300, -1.0])
def test_a_length_limit_must_be_finite_and_in_range(value):
    with pytest.raises(ValueError, match="max_len_a"):
        SearchOptions(max_len_a=value)
    with pytest.raises(ValueError):
        TranslateRequest(sentences=["a"], max_len_a=value)


@pytest.mark.parametrize(
    "field, value",
    [
        ("alpha", math.nan),
        ("alpha", math.inf),
        ("temperature", math.nan),
        ("temperature", 1e-300),
        ("top_p", math.nan),
        ("beam_size", True),
        ("beam_size", 2.0),
        ("seed", 2**64),
        ("seed", -1),
        ("top_k", -1),
    ],
)
def test_search_options_refuse_what_no_search_can_use(field, value):
    with pytest.raises(ValueError, match=field):
        SearchOptions(**{field: value})
    with pytest.raises(ValueError):
        TranslateRequest(sentences=["a"], **{field: value})


def test_whole_numbers_are_not_booleans_or_fractions():
    assert check(Count, 3, "count") == 3
    for value in (True, 2.5, 0, "3"):
        with pytest.raises(ValueError, match="count"):
            check(Count, value, "count")
    assert check(Seed, 2**63 - 1, "seed") == 2**63 - 1
