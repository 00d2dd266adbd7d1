"""Language codes as people type them: ``de``, ``deu``, ``de_DE``,
``German``, resolved to the one code a model has for that language, or
refused naming the candidates."""

import pytest

from rosetta.errors import RosettaError
from rosetta.inference.language_codes import language_of, name_of, resolve_code
from rosetta.jobs.loading import load_translator

NLLB = ["ace_Arab", "deu_Latn", "eng_Latn", "fra_Latn", "zho_Hans", "zho_Hant"]
MBART = ["ar_AR", "de_DE", "en_XX", "fr_XX"]
M2M = ["ar", "de", "en", "fr"]


@pytest.mark.parametrize("typed", ["de", "DE", "de_DE", "de-AT", "deu", "German"])
def test_what_people_type_is_one_language(typed):
    assert language_of(typed) == "de"
    for codes, expected in [(NLLB, "deu_Latn"), (MBART, "de_DE"), (M2M, "de")]:
        assert resolve_code(typed, codes, "source") == expected


def test_a_code_the_model_has_is_itself_in_any_case():
    assert resolve_code("ace_Arab", NLLB, "source") == "ace_Arab"
    assert resolve_code("ACE_ARAB", NLLB, "source") == "ace_Arab"
    assert language_of("ace_Arab") == "ace"  # no two-letter form: itself


def test_several_codes_of_one_language_are_named():
    with pytest.raises(ValueError, match=r"is 2 of the model's codes: .*zho_Hans"):
        resolve_code("zh", NLLB, "target")


def test_an_unknown_language_suggests_the_closest_codes():
    with pytest.raises(ValueError, match="closest: deu_Latn") as refused:
        resolve_code("deo_Latn", NLLB, "source")
    assert "rosetta languages -m MODEL" in str(refused.value)
    with pytest.raises(ValueError, match="'klingon' is not one of the model's 6"):
        resolve_code("klingon", NLLB, "target")


def test_names_of_codes():
    assert name_of("deu_Latn") == name_of("de_DE") == "German"
    assert name_of("ace_Arab") is None


def test_a_model_of_one_pair_takes_its_own_languages(toy_run):
    """A run of one pair takes its own languages (data.src_lang, tgt_lang)
    as people type them, and refuses others in one line."""
    translator = load_translator(toy_run("transformer"), "cpu")
    with pytest.raises(RosettaError, match="not told the language it reads"):
        translator.from_language("de")  # the toy run names no language
    data = translator.config.data.model_copy(
        update={"src_lang": "de", "tgt_lang": "en"}
    )
    translator.config = translator.config.model_copy(update={"data": data})
    chosen = translator.from_language("German").for_language("eng")
    assert (chosen.chosen_source, chosen.chosen_target) == ("de", "en")
    assert chosen.translate(["a b"]) == translator.translate(["a b"])
    with pytest.raises(RosettaError, match="the model reads de only"):
        translator.from_language("fr")
    with pytest.raises(RosettaError, match="the model translates into en only"):
        translator.for_language("French")
