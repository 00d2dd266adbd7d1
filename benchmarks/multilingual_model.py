"""NLLB-200, M2M100 and mBART-50 models made offline with Hugging Face
transformers, in the layout of their Hub repositories (``config.json``,
``generation_config.json``, ``model.safetensors``,
``sentencepiece.bpe.model`` and the tokenizer's files); random weights,
SentencePiece models learnt from the bundled Multi30k, every language code
of the real model. What the tests, the benchmarks and the offline part of
the docs' "Start from a pretrained model" import.

    python benchmarks/multilingual_model.py nllb -o nllb-tiny
    python benchmarks/multilingual_model.py nllb -o nllb-600m --nllb-600m

``--nllb-600m``: NLLB-200-distilled-600M's shape (12 + 12 layers, d_model
1024, 16 heads, d_ff 4096, a vocabulary of 256,206), about 615M parameters.
"""

from __future__ import annotations

import argparse
import io
import json
import warnings
from pathlib import Path

import sentencepiece as spm
import torch

try:  # imported by the tests, or by a benchmark run as a script
    from benchmarks.marian_model import EndAt, sentences
except ImportError:
    from marian_model import EndAt, sentences  # type: ignore[no-redef]

KINDS = ("nllb", "m2m100", "mbart50")
LANGUAGES = {  # German and English, and a third target, in each model's codes
    "nllb": ("deu_Latn", "eng_Latn", "fra_Latn"),
    "m2m100": ("de", "en", "fr"),
    "mbart50": ("de_DE", "en_XX", "fr_XX"),
}
PAD = 1
LANGUAGE_TOKENS = range(100)  # M2M100's codes, numbered after vocab.json


def learnt_spm(kind: str, size: int, lines: int = 3000) -> bytes:
    """The SentencePiece model of ``kind``: BPE for NLLB and M2M100, a
    unigram model for mBART-50, as theirs are; learnt from ``lines``
    German and as many English sentences."""
    stream = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences("de", lines) + sentences("en", lines)),
        model_writer=stream,
        vocab_size=size,
        model_type="unigram" if kind == "mbart50" else "bpe",
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return stream.getvalue()


def save_tokenizer(kind: str, folder: Path, model: bytes):
    """The ``transformers`` tokenizer of ``kind`` over ``model``, saved in
    ``folder`` beside ``sentencepiece.bpe.model``."""
    (folder / "sentencepiece.bpe.model").write_bytes(model)
    source, target = LANGUAGES[kind][:2]
    if kind == "m2m100":
        from transformers import M2M100Tokenizer

        processor = spm.SentencePieceProcessor(model_proto=model)
        vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
        for i in range(3, processor.get_piece_size()):
            vocab.setdefault(processor.id_to_piece(i), len(vocab))
        (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
        tokenizer = M2M100Tokenizer(
            vocab_file=str(folder / "vocab.json"),
            spm_file=str(folder / "sentencepiece.bpe.model"),
            src_lang=source,
            tgt_lang=target,
        )
    elif kind == "mbart50":
        from transformers import MBart50Tokenizer

        tokenizer = MBart50Tokenizer.from_pretrained(
            str(folder), src_lang=source, tgt_lang=target
        )
    else:
        tokenizer = nllb_tokenizer(folder, model, source, target)
    tokenizer.save_pretrained(str(folder))
    return tokenizer


def nllb_tokenizer(folder: Path, model: bytes, source: str, target: str):
    """NLLB's tokenizer: BPE over the SentencePiece pieces (+1), the 202
    language codes, ``<mask>``, and SentencePiece's normalisation."""
    from sentencepiece import sentencepiece_model_pb2
    from transformers import NllbTokenizer
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    converted = json.loads(
        NllbTokenizer.from_pretrained(str(folder))._tokenizer.to_str()
    )
    vocab = dict(converted["model"]["vocab"])
    for code in FAIRSEQ_LANGUAGE_CODES:
        vocab[code] = len(vocab)
    vocab["<mask>"] = len(vocab)
    merges = [
        tuple(m) if isinstance(m, list) else tuple(m.split(" "))
        for m in converted["model"]["merges"]
    ]
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model)
    return NllbTokenizer(
        vocab=vocab,
        merges=merges,
        src_lang=source,
        tgt_lang=target,
        _spm_precompiled_charsmap=proto.normalizer_spec.precompiled_charsmap,
    )


def make_multilingual(
    kind: str,
    folder: Path,
    *,
    d_model: int = 32,
    layers: int = 2,
    heads: int = 4,
    d_ff: int = 64,
    pieces: int = 400,
    spm_lines: int = 3000,
    vocab_size: int | None = None,
    init_std: float = 0.3,
    eos_bias: float = 4.0,
    max_positions: int = 128,
    seed: int = 0,
) -> Path:
    """A model of ``kind`` (``nllb``, ``m2m100``, ``mbart50``) in
    ``folder``; ``vocab_size``: embedding rows (default: the tokenizer's,
    and two more for NLLB, as the real one has); ``spm_lines``: the
    sentences per language the SentencePiece model learns from (fewer:
    quicker, for the tests); ``init_std``: the spread
    of the random weights (wide, so translations differ); ``eos_bias``:
    added to ``</s>``'s logit (translations of many lengths)."""
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = save_tokenizer(kind, folder, learnt_spm(kind, pieces, spm_lines))
    ids = max(tokenizer.get_vocab().values()) + 1
    extra = {"nllb": 2, "m2m100": len(LANGUAGE_TOKENS) + 8}  # + madeupword0..7
    rows = vocab_size or ids + extra.get(kind, 0)
    mbart = kind == "mbart50"
    sizes = {
        "vocab_size": rows,
        "d_model": d_model,
        "encoder_layers": layers,
        "decoder_layers": layers,
        "encoder_attention_heads": heads,
        "decoder_attention_heads": heads,
        "encoder_ffn_dim": d_ff,
        "decoder_ffn_dim": d_ff,
        "max_position_embeddings": max_positions,
        "pad_token_id": PAD,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "decoder_start_token_id": 2,
        "scale_embedding": True,
        "init_std": init_std,
        "dropout": 0.1,
        "max_length": 200,
        "num_beams": 5 if kind == "nllb" else 1,
    }
    torch.manual_seed(seed)  # the weights: normal(0, init_std), biases 0
    if mbart:
        config = transformers.MBartConfig(**sizes, activation_function="gelu")
        model = transformers.MBartForConditionalGeneration(config)
    else:
        config = transformers.M2M100Config(**sizes, activation_function="relu")
        model = transformers.M2M100ForConditionalGeneration(config)
    with torch.no_grad():
        table = model.model.shared.weight
        table[PAD].zero_()  # fairseq's padding row
        # language tokens: as rare in outputs as in a trained model's
        codes = [i for token, i in tokenizer.get_vocab().items() if is_code(token)]
        codes += list(getattr(tokenizer, "lang_token_to_id", {}).values())  # M2M100
        table[codes] *= 0.2
        eos = table[2]
        # </s> likelier everywhere: the decoder's last LayerNorm leans to it
        model.model.decoder.layer_norm.bias.add_(eos_bias * eos / eos.dot(eos))
        if mbart:
            model.final_logits_bias.normal_(0, 0.5)
    model.eval().save_pretrained(str(folder))
    return folder


def load_reference(folder: Path):
    """``transformers``' model and tokenizer of ``folder``."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForSeq2SeqLM.from_pretrained(str(folder)).eval()
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    return model, tokenizer


def hf_search(
    model,
    tokenizer,
    texts: list[str],
    source: str,
    target: str,
    beams: int,
    tokens: int,
    per_source: float = 0.0,
) -> list[list[str]]:
    """``generate()``'s translations of ``texts`` from ``source`` into
    ``target`` (one batch), as the pieces after the language token and
    before ``</s>``: the target language forced first, ``<pad>`` never
    picked (as Rosetta's search rules it out), length_penalty 1.0, stopping
    once ``beams`` hypotheses have ended, at most ``tokens`` new tokens (the
    language token counted) and no ``</s>`` forced at that limit (Rosetta's
    ``same_search``); ``per_source``: each sentence's own limit, as
    ``same_search``'s (``marian_model.EndAt``)."""
    from transformers.generation import LogitsProcessorList

    tokenizer.src_lang = source
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    processors = LogitsProcessorList()
    if per_source:
        lengths = batch["attention_mask"].sum(1).double()
        limits = torch.floor(per_source * lengths).long().clamp(min=1)
        processors.append(EndAt(limits.repeat_interleave(beams), model.config))
        tokens = int(limits.max()) + 1
    forced = tokenizer.convert_tokens_to_ids(target_token(tokenizer, target))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = model.generate(
            **batch,
            forced_bos_token_id=forced,
            num_beams=beams,
            do_sample=False,
            max_new_tokens=tokens,
            length_penalty=1.0,
            early_stopping=True,
            bad_words_ids=[[PAD]],
            forced_eos_token_id=None,
            logits_processor=processors,
        )
    outputs = []
    for row in found[:, 2:].tolist():  # after the start token and the language
        ended = row.index(2) if 2 in row else len(row)
        pieces = tokenizer.convert_ids_to_tokens(row[:ended])
        # a row past the tokenizer's ids, named as Rosetta's import names it
        outputs.append([p or f"<unused{i}>" for p, i in zip(pieces, row, strict=False)])
    return outputs


def is_code(token: str) -> bool:
    """Whether ``token`` is a language code's (``deu_Latn``, ``__de__``,
    ``de_DE``)."""
    return "_" in token.strip("_▁") and not token.startswith("<")


def target_token(tokenizer, code: str) -> str:
    """The token of the language ``code`` (M2M100 writes ``__fr__``)."""
    return f"__{code}__" if type(tokenizer).__name__.startswith("M2M100") else code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("-o", "--output", required=True, help="folder to write")
    parser.add_argument(
        "--nllb-600m", action="store_true", help="NLLB-200-distilled-600M's shape"
    )
    args = parser.parse_args()
    sizes = {}
    if args.nllb_600m:
        sizes = {"d_model": 1024, "layers": 12, "heads": 16, "d_ff": 4096}
        sizes |= {"vocab_size": 256206, "pieces": 4000, "init_std": 0.02}
        sizes |= {"max_positions": 1024}
    folder = make_multilingual(args.kind, Path(args.output), **sizes)
    print(f"{folder}: a {args.kind} model with random weights")


if __name__ == "__main__":
    main()
