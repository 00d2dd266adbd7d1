"""A translator decoding with the compiled step: chosen by ``compiled`` (the
Python API) and ``--compile`` (the command line), refused where it cannot
apply, and translating text as the packed path does."""

import pytest

from rosetta.cli import build_parser
from rosetta.cli.common import compile_setting
from rosetta.errors import RosettaError
from rosetta.families.transformer.fast import compiled as compiled_module
from rosetta.families.transformer.fast.compiled import CompiledDecoding, slot_step
from rosetta.jobs.loading import load_translator
from rosetta.search.options import SearchOptions

SENTENCES = ["a b c", "d e", "c c a b", "e"]


def test_compiled_true_decodes_with_the_compiled_step(toy_run):
    translator = load_translator(toy_run("transformer"), device="cpu", compiled=True)
    assert isinstance(translator.model, CompiledDecoding)
    assert not translator.decodes_in_workers  # one batch at a time
    for setting in (False, "auto"):  # auto: a GPU only
        other = load_translator(toy_run("transformer"), device="cpu", compiled=setting)
        assert not isinstance(other.model, CompiledDecoding)
        assert other.decodes_in_workers


def test_a_recurrent_model_stays_eager(toy_run):
    translator = load_translator(toy_run("rnn-attention"), device="cpu", compiled=True)
    assert not isinstance(translator.model, CompiledDecoding)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"compiled": "false"}, "compiled must be True, False or 'auto'"),
        ({"compiled": 1}, "compiled must be True, False or 'auto'"),
        ({"compiled": True, "precision": "int8"}, "int8 decodes on its own layers"),
        ({"compiled": True, "engine": "ctranslate2"}, "compiled decoding step is"),
    ],
)
def test_settings_that_cannot_apply_are_refused(toy_run, options, message):
    with pytest.raises(RosettaError, match=message):
        load_translator(toy_run("transformer"), device="cpu", **options)


def test_translations_equal_the_packed_paths(toy_run, monkeypatch):
    """The slot state through the whole text path, the step left uncompiled
    (what compiling it keeps is the compiled search test's)."""
    monkeypatch.setattr(compiled_module, "CompiledOrEager", lambda f, *a, **k: f)
    packed = load_translator(toy_run("transformer"), device="cpu", compiled=False)
    slots = load_translator(toy_run("transformer"), device="cpu", compiled=True)
    assert slots.model.compiled_step is slot_step
    for options in (SearchOptions(), SearchOptions(beam_size=3, nbest=2)):
        expected = packed.translate_nbest(SENTENCES, options, batch_size=3)
        found = slots.translate_nbest(SENTENCES, options, batch_size=3)
        assert [[t.text for t in ts] for ts in found] == [
            [t.text for t in ts] for ts in expected
        ]


def test_the_compile_flag_reaches_the_loader():
    parser = build_parser()
    for flag, setting in [("auto", "auto"), ("true", True), ("false", False)]:
        args = parser.parse_args(["translate", "-m", "run", "--compile", flag])
        assert compile_setting(args) == setting
    args = parser.parse_args(["translate", "-m", "run"])
    assert compile_setting(args) == "auto"
