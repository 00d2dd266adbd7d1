"""NLLB-200, M2M100 and mBART-50 models imported as Rosetta runs
(``rosetta import hf``), against Hugging Face transformers on the same
models, made offline with every language code of the real ones
(``benchmarks/multilingual_model.py``)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch
from benchmarks.marian_model import same_search, sentences
from benchmarks.multilingual_model import (
    KINDS,
    LANGUAGES,
    PAD,
    hf_search,
    load_reference,
    make_multilingual,
    target_token,
)

from rosetta.cli import main
from rosetta.data.batching import Example, collate
from rosetta.errors import RosettaError
from rosetta.families import all_importers
from rosetta.jobs.importers import import_run
from rosetta.jobs.loading import load_translator

transformers = pytest.importorskip("transformers")
HF = next(importer for importer in all_importers() if importer.name == "hf")
LIMIT = 24  # output tokens (the language token counted), on both sides


def quiet(*_):
    pass


@pytest.fixture(scope="module", params=KINDS)
def kind(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Each kind's model folder and its imported run, made once."""
    made = {}
    for name in KINDS:
        root = tmp_path_factory.mktemp(name)
        folder = make_multilingual(name, root / "model")
        import_run(HF, str(folder), root / "run", log=quiet)
        made[name] = (folder, root / "run")
    return made


@pytest.fixture(scope="module")
def references(folders) -> dict:
    return {name: load_reference(folder) for name, (folder, _) in folders.items()}


def translator(run: Path, kind: str, target: int = 1):
    codes = LANGUAGES[kind]
    return (
        load_translator(run, "cpu").from_language(codes[0]).for_language(codes[target])
    )


@pytest.mark.reference
def test_imported_logits_equal_transformers(kind, folders, references):
    """A padded batch, teacher-forced from the forced language token on."""
    _, run = folders[kind]
    model, tokenizer = references[kind]
    source, target = LANGUAGES[kind][:2]
    texts = sentences("de", 8, "val")
    tokenizer.src_lang = source
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    assert not bool(batch["attention_mask"].all())
    ours = translator(run, kind)
    examples = collate([Example(ours.encode(t), []) for t in texts])
    real = batch["attention_mask"].bool()
    assert examples.src_mask.tolist() == real.tolist()
    # the Rosetta id of each of their ids: the same piece (</s>: <eos>)
    vocab = ours.tokenizers.src.vocab.index
    pieces = tokenizer.convert_ids_to_tokens(range(model.config.vocab_size))
    pieces = [piece or f"<unused{i}>" for i, piece in enumerate(pieces)]
    column = torch.tensor([vocab.get(p, vocab["<eos>"]) for p in pieces])
    column[PAD] = 0
    # rows no tokenizer id names (NLLB's last two; M2M100's madeupwords,
    # which transformers calls <unk>) are left out of the comparison
    unused = [
        i
        for i, p in enumerate(pieces)
        if (p not in vocab or pieces.index(p) != i) and i not in (PAD, 2)
    ]
    assert examples.src[real].tolist() == column[batch["input_ids"]][real].tolist()
    generator = torch.Generator().manual_seed(0)
    decoder_in = torch.randint(4, 300, (8, 7), generator=generator)
    decoder_in[:, 0] = 2  # their start token, </s>
    decoder_in[:, 1] = tokenizer.convert_tokens_to_ids(target_token(tokenizer, target))
    rosetta_in = column[decoder_in]
    rosetta_in[:, 0] = 2  # Rosetta's <bos>, the row of </s>
    with torch.no_grad():
        theirs = model(**batch, decoder_input_ids=decoder_in).logits
        features = ours.model(examples.src, examples.src_mask, rosetta_in)
        mine = ours.model.output_proj(features)
    kept = [i for i in range(len(pieces)) if i not in unused and i != PAD]
    difference = mine[..., column[kept]] - theirs[..., kept]
    assert difference.abs().max().item() <= 1e-4


@pytest.mark.reference
@pytest.mark.parametrize("beams", [1, 5])
def test_imported_search_equals_generate(kind, folders, references, beams):
    """Greedy and beam search (``same_search``) with the target language
    forced first: the same tokens as ``generate()`` on 100 sentences."""
    _, run = folders[kind]
    source, target = LANGUAGES[kind][:2]
    texts = sentences("de", 100, "val")
    found = translator(run, kind).translate_nbest(texts, same_search(beams, LIMIT))
    theirs = hf_search(*references[kind], texts, source, target, beams, LIMIT)
    assert [f[0].tokens for f in found] == theirs
    assert len({" ".join(t) for t in theirs}) > 20  # the translations differ
    assert any(len(t) < LIMIT - 2 for t in theirs)  # some end early


@pytest.mark.reference
@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_length_limit_counts_the_language_token_as_generate_does(
    kind, folders, references, limit
):
    """``max_new_tokens=1``: the forced language token alone, no text."""
    _, run = folders[kind]
    source, target = LANGUAGES[kind][:2]
    texts = sentences("de", 10, "val")
    for beams in (1, 2):
        found = translator(run, kind).translate_nbest(texts, same_search(beams, limit))
        theirs = hf_search(*references[kind], texts, source, target, beams, limit)
        assert [f[0].tokens for f in found] == theirs
    if limit == 1:
        assert all(t == [] for t in theirs)


def test_the_target_language_is_forced_and_left_out_of_the_text(kind, folders):
    _, run = folders[kind]
    codes = LANGUAGES[kind]
    texts = sentences("de", 10, "val")
    into = {
        code: translator(run, kind, i).translate(texts)
        for i, code in enumerate(codes[1:], 1)
    }
    assert into[codes[1]] != into[codes[2]]
    tokens = translator(run, kind).tokenizers.tgt.languages.values()
    assert len(tokens) > 50
    for outputs in into.values():
        assert not any(token in text for text in outputs for token in tokens)


def test_languages_are_chosen_with_one_line_errors(folders, tmp_path, capsys):
    _, run = folders["nllb"]
    source = tmp_path / "in.de"
    source.write_text("Ein Hund.\n")
    for flags, message in [
        (
            ["--source-lang", "deu_Latn", "--target-lang", "xx"],
            "target language 'xx' is not one of the model's",
        ),
        (
            ["--source-lang", "deutsch", "--target-lang", "eng_Latn"],
            "source language 'deutsch' is not one of the model's",
        ),
        (
            ["--target-lang", "eng_Latn"],
            "choose the source language with --source-lang",
        ),
    ]:
        output = tmp_path / "out.txt"
        code = main(
            ["translate", "-m", str(run), "-i", str(source), "-o", str(output), *flags]
        )
        error = capsys.readouterr().err.strip().splitlines()
        assert code != 0 and message in error[-1], error
        assert not output.exists()
    flags = ["--source-lang", "deu_Latn", "--target-lang", "fra_Latn"]
    assert main(["translate", "-m", str(run), "-i", str(source), *flags]) == 0
    assert capsys.readouterr().out.strip()
    # languages as people type them: the one code of each, said on stderr
    flags = ["--source-lang", "de", "--target-lang", "French"]
    assert main(["translate", "-m", str(run), "-i", str(source), *flags]) == 0
    said = capsys.readouterr().err
    assert "source language: de is deu_Latn (German)" in said
    assert "target language: French is fra_Latn (French)" in said
    assert main(["languages", "-m", str(run)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) > 50 and any(
        line.split() == ["deu_Latn", "German", "(source", "and", "target)"]
        for line in listed
    )


def broken(folder: Path, tmp_path: Path, how: str) -> Path:
    copy = shutil.copytree(folder, tmp_path / how)
    config = json.loads((copy / "config.json").read_text())
    if how == "model_type":
        config["model_type"] = "t5"
    elif how == "small_embedding":
        config["vocab_size"] = 100  # the tokenizer has more ids than rows
    elif how == "post_norm":
        config["normalize_before"] = False
    (copy / "config.json").write_text(json.dumps(config))
    if how in ("cc25", "legacy"):  # the source's code after </s>
        path = copy / "tokenizer_config.json"
        named = json.loads(path.read_text())
        if how == "cc25":
            named["tokenizer_class"] = "MBartTokenizer"
        else:
            named["legacy_behaviour"] = True
        path.write_text(json.dumps(named))
    if how == "no_spm":
        (copy / "sentencepiece.bpe.model").unlink()
    return copy


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("model_type", "model_type 't5'; rosetta import hf reads marian"),
        ("small_embedding", "vocab_size 100; the token embedding has 606 rows"),
        ("post_norm", "normalize_before false"),
        ("no_spm", "sentencepiece.bpe.model: missing"),
        ("cc25", "puts the source's language code after </s>"),
        ("legacy", "puts the source's language code after </s>"),
    ],
)
def test_a_broken_model_is_one_line_and_leaves_nothing(
    folders, tmp_path, capsys, how, message
):
    folder = broken(folders["nllb"][0], tmp_path, how)
    output = tmp_path / "run"
    assert main(["import", "hf", str(folder), "-o", str(output)]) != 0
    error = capsys.readouterr().err.strip()
    assert message in error, error
    assert len(error.splitlines()) == 1
    assert not output.exists()


def integer_weights(folder: Path) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    name = next(iter(tensors))
    tensors[name] = tensors[name].to(torch.int32)
    save_file(tensors, str(folder / "model.safetensors"))


@pytest.mark.parametrize(
    ("kind", "break_it", "message"),
    [
        (
            "m2m100",
            lambda folder: (folder / "vocab.json").unlink(),
            "vocab.json: missing; an M2M100 folder holds it",
        ),
        (
            "nllb",
            integer_weights,
            "is int32; the weights of an NLLB-200 folder are dense",
        ),
        (
            "mbart50",
            integer_weights,
            "is int32; the weights of an mBART-50 folder are dense",
        ),
        (
            "nllb",
            lambda folder: (folder / "config.json").unlink(),
            "config.json: missing; a Hugging Face model folder holds it",
        ),
    ],
)
def test_a_refused_folder_is_named_by_its_own_layout(
    folders, tmp_path, capsys, kind, break_it, message
):
    folder = shutil.copytree(folders[kind][0], tmp_path / kind)
    break_it(folder)
    output = tmp_path / "run"
    assert main(["import", "hf", str(folder), "-o", str(output)]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and "MarianMT" not in error, error
    assert len(error.splitlines()) == 1 and not output.exists()


def test_a_tokenizer_that_does_not_match_the_embedding(folders, tmp_path, capsys):
    folder = shutil.copytree(folders["m2m100"][0], tmp_path / "m2m")
    vocab = json.loads((folder / "vocab.json").read_text())
    vocab |= {f"extra{i}": len(vocab) + i for i in range(200)}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    assert main(["import", "hf", str(folder), "-o", str(tmp_path / "run")]) != 0
    error = capsys.readouterr().err.strip()
    assert "the tokenizer does not match the model" in error
    assert len(error.splitlines()) == 1 and not (tmp_path / "run").exists()


def test_an_unknown_language_in_the_api_is_refused(folders):
    _, run = folders["mbart50"]
    with pytest.raises(RosettaError, match="target language 'xx' is not one of"):
        load_translator(run, "cpu").for_language("xx")
    assert load_translator(run, "cpu").for_language("fr").target_language == "fr_XX"
    unchosen = load_translator(run, "cpu")
    with pytest.raises(RosettaError, match="choose the source language"):
        unchosen.translate(["Ein Hund."])
    chosen = unchosen.from_language("de_DE").for_language("fr_XX")
    sources = [chosen.encode("Ein Hund.")]
    with pytest.raises(RosettaError, match="one code per sentence, not a string"):
        chosen.translate_ids(sources, target_languages="fr_XX")
    with pytest.raises(RosettaError, match="2 codes for 1 sentences"):
        chosen.translate_ids(sources, target_languages=["fr_XX", "de_DE"])


def finetune_config(folder: Path, imported: Path, source: str, target: str) -> Path:
    """The imported run's config.yaml with a German-English corpus named
    by the model's codes and a short schedule."""
    import yaml

    for language in ("de", "en"):
        text = "\n".join(sentences(language, 200, "val")) + "\n"
        (folder / f"domain.{language}").write_text(text)
    config = yaml.safe_load((imported / "config.yaml").read_text())
    config["data"] |= {
        "train": {"src": "domain.de", "tgt": "domain.en"},
        "src_lang": source,
        "tgt_lang": target,
    }
    config["train"] = {
        "max_steps": 20,
        "max_epochs": None,
        "batch_tokens": 1500,
        "warmup_steps": 2,
        "lr": 1e-3,
        "validate_every": 20,
        "keep_last": 1,
    }
    path = folder / "finetune.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_fine_tuning_on_one_pair_tags_its_corpus_and_keeps_the_others(
    folders, tmp_path, capsys
):
    from rosetta.data.encoded_pairs import EncodedPairs, token_type
    from rosetta.data.store import STORE_DIR

    _, imported = folders["nllb"]
    config = finetune_config(tmp_path, imported, "deu_Latn", "eng_Latn")
    run = tmp_path / "tuned"
    assert main(["train", str(config), "-o", str(run), "--init", str(imported)]) == 0
    start = load_translator(imported, "cpu")
    tokenizer = start.tokenizers.src
    pairs = EncodedPairs.open(run / STORE_DIR, "train", token_type(len(tokenizer)))
    first = pairs[0]
    de, en = tokenizer.language_id("deu_Latn"), tokenizer.language_id("eng_Latn")
    assert (first.src[0], first.tgt[0]) == (de, en)  # as transformers trains
    assert first.src[1:] == tokenizer.encode(sentences("de", 1, "val")[0])
    tuned = load_translator(run, "cpu")  # its languages: the corpus's
    texts = sentences("de", 20, "val")
    assert tuned.translate(texts) == tuned.from_language("deu_Latn").for_language(
        "eng_Latn"
    ).translate(texts)
    into_french = tuned.for_language("fra_Latn").translate(texts)
    assert all(into_french) and into_french != tuned.translate(texts)
    bad = finetune_config(tmp_path, imported, "de", "en")
    output = tmp_path / "bad"
    assert main(["train", str(bad), "-o", str(output), "--init", str(imported)]) != 0
    error = capsys.readouterr().err.strip()
    assert "data.src_lang 'de' is not a language of the model" in error


@pytest.mark.parametrize("side", ["src_lang", "tgt_lang"])
def test_a_language_the_model_lacks_is_refused_before_anything_is_written(
    folders, tmp_path, capsys, side
):
    _, imported = folders["nllb"]
    codes = {"src_lang": "deu_Latn", "tgt_lang": "eng_Latn"} | {side: "xx"}
    config = finetune_config(tmp_path, imported, codes["src_lang"], codes["tgt_lang"])
    output = tmp_path / "refused"
    capsys.readouterr()
    argv = ["train", str(config), "-o", str(output), "--init", str(imported)]
    assert main(argv) == 2
    assert f"data.{side} 'xx' is not a language of the model" in capsys.readouterr().err
    assert not output.exists()  # neither its lock file nor its tokenizers
    init = f"train.init={imported}"
    assert main(["prepare", str(config), "-o", str(output), "--set", init]) == 2
    assert not output.exists()


def test_import_export_import_changes_nothing(kind, folders, tmp_path):
    from safetensors.torch import load_file

    from rosetta.runs import checkpoint as ckpt

    folder, run = folders[kind]
    export = tmp_path / "export"
    assert main(["export", "hf", "-m", str(run), "-o", str(export)]) == 0
    again = tmp_path / "again"
    import_run(HF, str(export), again, log=quiet)

    def stored(folder: Path) -> dict[str, torch.Tensor]:
        return load_file(str(ckpt.resolve_checkpoint(folder) / ckpt.MODEL_FILE))

    first, second = stored(run), stored(again)
    assert first.keys() == second.keys()
    assert all(torch.equal(first[name], second[name]) for name in first)
    tokenizers = [load_translator(r, "cpu").tokenizers.src for r in (run, again)]
    assert tokenizers[0].to_dict() == tokenizers[1].to_dict()
    source = LANGUAGES[kind][0]
    theirs, exported = load_reference(folder)[1], load_reference(export)[1]
    theirs.src_lang = exported.src_lang = source
    for text in sentences("de", 50, "val"):  # transformers reads the tokenizer
        assert exported(text).input_ids == theirs(text).input_ids


@pytest.mark.reference
def test_an_export_of_a_fine_tuned_run_generates_what_rosetta_translates(
    folders, tmp_path
):
    """transformers reads the export (its tokenizer included) and, with
    the export's generation settings, writes Rosetta's translations; the
    decoder starts from </s> in both (the run's start_token: eos)."""
    _, imported = folders["nllb"]
    config = finetune_config(tmp_path, imported, "deu_Latn", "eng_Latn")
    run = tmp_path / "tuned"
    assert main(["train", str(config), "-o", str(run), "--init", str(imported)]) == 0
    export = tmp_path / "export"
    assert main(["export", "hf", "-m", str(run), "-o", str(export)]) == 0
    model, tokenizer = load_reference(export)
    texts = sentences("de", 30, "val")
    theirs = hf_search(model, tokenizer, texts, "deu_Latn", "fra_Latn", 1, LIMIT)
    ours = translator(run, "nllb", target=2).translate_nbest(
        texts, same_search(1, LIMIT)
    )
    assert [found[0].tokens for found in ours] == theirs
    reference_tokenizer = load_reference(folders["nllb"][0])[1]
    for text in texts:
        assert tokenizer(text).input_ids == reference_tokenizer(text).input_ids


@pytest.mark.reference
def test_the_language_token_scores_zero_fed_at_once_or_forced_step_by_step(folders):
    """A ban makes the search force the language token one step at a time
    instead of feeding it with the start: the same scores either way, and
    each the output tokens' alone, teacher-forced after <bos> and the
    language token (the forced token counts 0)."""
    from dataclasses import replace

    from rosetta.data.vocab import BOS_ID, EOS_ID
    from tests.support.next_token import next_token_log_probs

    _, run = folders["nllb"]
    ours = translator(run, "nllb")
    texts = sentences("de", 12, "val")
    language = ours.tokenizers.tgt.language_id("eng_Latn")
    outputs = ours.translate_nbest(texts, same_search(1, LIMIT))
    # a translation that ended with </s> well before the limit
    number = next(i for i, [t] in enumerate(outputs) if len(t.token_ids) < LIMIT - 3)
    found = outputs[number][0]
    target = [*found.token_ids, EOS_ID]
    src = torch.tensor([[*ours.encode(texts[number]), EOS_ID]])
    tgt_in = torch.tensor([[BOS_ID, language, *target[:-1]]])
    with torch.no_grad():
        logits = ours.model.output_proj(ours.model(src, src > 0, tgt_in))
    log_probs = next_token_log_probs(logits.double())[0, 1:]
    expected = float(log_probs[torch.arange(len(target)), target].sum())
    assert found.score == pytest.approx(expected, abs=1e-3)
    for beams in (1, 4):
        options = same_search(beams, LIMIT)
        fed = ours.translate_nbest(texts, options)
        banned = replace(options, ban=("Zzyzx",))  # a phrase no output holds
        stepwise = ours.translate_nbest(texts, banned)
        for a, b in zip(fed, stepwise, strict=True):
            assert a[0].token_ids == b[0].token_ids
            assert a[0].score == pytest.approx(b[0].score, abs=1e-4)


def test_a_missing_module_of_the_nllb_export_is_named(monkeypatch, tmp_path):
    """protobuf, which SentencePiece's model file needs, not transformers."""
    import sentencepiece

    from rosetta.families.transformer.hf.multilingual.nllb_tokenizer import (
        write_nllb_tokenizer,
    )

    # as if protobuf were not installed: its module, and SentencePiece's
    # model module that imports it, not yet imported and not importable
    monkeypatch.delitem(sys.modules, "sentencepiece.sentencepiece_model_pb2", False)
    monkeypatch.delattr(sentencepiece, "sentencepiece_model_pb2", False)
    monkeypatch.setitem(sys.modules, "google.protobuf", None)
    with pytest.raises(RosettaError, match=r"google\.protobuf is missing") as refused:
        write_nllb_tokenizer(tmp_path, None, [], {})
    assert "pip install 'rosetta-nmt[export-hf]'" in str(refused.value)


@pytest.mark.reference
def test_scoring_a_translation_gives_its_search_score(kind, folders):
    """The forced language token scores 0 and counts in the length, as in
    search (where the text gives back the search's own tokens; one cut at
    the limit scored without its </s>)."""
    from rosetta.inference.pair_scoring import score_pairs
    from rosetta.search.options import SearchOptions

    _, run = folders[kind]
    chosen = translator(run, kind)
    texts = sentences("de", 40, "val")
    limit = 12  # the language token counted
    options = SearchOptions(beam_size=2, max_len_a=0.0, max_len_b=limit)
    best = [f[0] for f in chosen.translate_nbest(texts, options)]
    scores = score_pairs(chosen, texts, [b.text for b in best])
    same = [
        (b, s)
        for b, s in zip(best, scores, strict=True)
        if chosen.tokenizers.tgt.encode(b.text) == b.token_ids
    ]
    assert len(same) >= 3  # a random tiny model writes odd pieces
    for hypothesis, score in same:
        assert score.token_scores[0] == 0.0  # the language token
        ended = len(hypothesis.token_ids) + 1 < limit
        total = score.score if ended else score.score - score.token_scores[-1]
        assert total == pytest.approx(hypothesis.score, abs=1e-4)
