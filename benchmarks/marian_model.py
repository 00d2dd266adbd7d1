"""A MarianMT model made offline with Hugging Face transformers, in the
layout of an OPUS-MT repository: ``config.json``, ``model.safetensors`` (or
``pytorch_model.bin``), ``source.spm``, ``target.spm``, one joint
``vocab.json`` (``</s>`` 0, ``<unk>`` 1, the pieces, ``<pad>`` last) and
``tokenizer_config.json``; random weights, SentencePiece models learnt from
the bundled Multi30k. What the tests, the benchmarks and the offline part of
the docs' "Start from a pretrained model" import.

    python benchmarks/marian_model.py -o opus-mt-tiny
    python benchmarks/marian_model.py -o opus-mt-full --full-size

``--full-size``: an OPUS-MT model's shape (6 + 6 layers, d_model 512, 8 heads,
d_ff 2048, a vocabulary of 58,101), about 74M parameters.
"""

from __future__ import annotations

import argparse
import gzip
import io
import itertools
import json
import warnings
from pathlib import Path

import sentencepiece as spm
import torch

from rosetta.search.options import SearchOptions

DATA = Path(__file__).resolve().parents[1] / "data" / "multi30k"


def sentences(language: str, count: int, split: str = "train") -> list[str]:
    """The first ``count`` lines of a bundled Multi30k file (fewer if it is
    shorter)."""
    with gzip.open(DATA / f"{split}.{language}.gz", "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in itertools.islice(handle, count)]


def train_spm(texts: list[str], size: int) -> bytes:
    stream = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=stream,
        vocab_size=size,
        model_type="unigram",
        character_coverage=1.0,
        # OPUS-MT's models: <unk> 0, <s> 1, </s> 2 inside SentencePiece; the
        # ids that count are vocab.json's
        hard_vocab_limit=False,  # fewer pieces where the text offers fewer
        minloglevel=2,
    )
    return stream.getvalue()


def vocabulary(
    models: list[bytes], languages: tuple[str, ...], size: int | None
) -> dict[str, int]:
    """``vocab.json``: ``</s>`` 0, ``<unk>`` 1, the language tokens and the
    models' pieces, filled up to ``size`` with pieces no text produces,
    ``<pad>`` last."""
    table: list[str] = [f">>{code}<<" for code in languages]
    for model in models:
        processor = spm.SentencePieceProcessor(model_proto=model)
        for i in range(processor.get_piece_size()):
            piece = processor.id_to_piece(i)
            if piece not in ("<unk>", "<s>", "</s>") and piece not in table:
                table.append(piece)
    if size is not None:
        table += [f"\u2581unused{i}" for i in range(size - 3 - len(table))]
    vocab = {"</s>": 0, "<unk>": 1}
    vocab |= {piece: 2 + i for i, piece in enumerate(table)}
    vocab["<pad>"] = len(vocab)
    return vocab


def make_marian(
    folder: Path,
    *,
    d_model: int = 32,
    layers: int = 2,
    heads: int = 4,
    d_ff: int = 64,
    activation: str = "swish",
    languages: tuple[str, ...] = (),
    weights: str = "safetensors",
    init_std: float = 0.3,
    eos_bias: float = 5.0,
    vocab_size: int | None = None,
    pieces: tuple[int, int] = (300, 250),
    max_positions: int = 128,
    separate: bool = False,
    seed: int = 0,
) -> Path:
    """A MarianMT model in ``folder``; ``languages``: target-language tokens
    (``>>fra<<``) of a multilingual model; ``init_std``: the spread of the
    random weights (wider than transformers' 0.02, so that the translations
    of different sentences differ); ``eos_bias``: the logit bias of ``</s>``
    (translations of many lengths); ``vocab_size``: ``vocab.json`` filled up
    to this size with pieces no text produces (an OPUS-MT model's size);
    ``pieces``: what the source and target SentencePiece models learn (at
    most); ``separate``: a vocabulary per side (``target_vocab.json``, one
    embedding per side)."""
    from transformers import MarianConfig, MarianMTModel

    folder.mkdir(parents=True, exist_ok=True)
    source = train_spm(sentences("de", 3000), pieces[0])
    target = train_spm(sentences("en", 3000), pieces[1])
    (folder / "source.spm").write_bytes(source)
    (folder / "target.spm").write_bytes(target)
    models = [source, target] if not separate else [source]
    vocab = vocabulary(models, languages, vocab_size)
    if separate:  # one size: MarianMT pads both sides with one pad id
        target_vocab = vocabulary([target], (), vocab_size)
        size = max(len(vocab), len(target_vocab))
        vocab = vocabulary(models, languages, size)
        target_vocab = vocabulary([target], (), size)
        (folder / "target_vocab.json").write_text(
            json.dumps(target_vocab, ensure_ascii=False)
        )
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {"source_lang": "de", "target_lang": "en", "separate_vocabs": separate}
        )
    )
    size = len(vocab)
    config = MarianConfig(
        vocab_size=size,
        decoder_vocab_size=size,
        d_model=d_model,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=d_ff,
        decoder_ffn_dim=d_ff,
        activation_function=activation,
        max_position_embeddings=max_positions,
        pad_token_id=size - 1,
        eos_token_id=0,
        decoder_start_token_id=size - 1,
        forced_eos_token_id=0,
        scale_embedding=True,
        share_encoder_decoder_embeddings=not separate,
        dropout=0.1,
        init_std=init_std,
        num_beams=4,
        max_length=64,
        bad_words_ids=[[size - 1]],
    )
    torch.manual_seed(seed)
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        for side in (model.model.encoder, model.model.decoder):
            side.embed_tokens.weight[size - 1].zero_()  # padding, as in OPUS-MT
        model.final_logits_bias.normal_(0, 0.5)
        model.final_logits_bias[0, 0] = eos_bias  # </s>: sentences end
    model.save_pretrained(folder)
    if weights == "bin":
        (folder / "model.safetensors").unlink()
        state = {k: v.contiguous() for k, v in model.state_dict().items()}
        torch.save(state, folder / "pytorch_model.bin")
    return folder


def same_search(beams: int, tokens: int, per_source: float = 0.0) -> SearchOptions:
    """Rosetta's search that ``generate`` (``hf_generate``) runs: greedy, or
    a beam ranking finished hypotheses by Σ log P / L (``transformers``'
    length_penalty 1.0, L counting the tokens and </s>), keeping k live
    prefixes and stopping once k have ended (``early_stopping=True``);
    at most ``tokens`` output tokens, or with ``per_source``, at most
    ``floor(per_source · S)`` for a source of S tokens (its </s> counted)."""
    return SearchOptions(
        beam_size=beams,
        alpha=1.0,
        refill=beams > 1,
        stopping="k_finished" if beams > 1 else "exact",
        max_len_a=per_source,
        max_len_b=0 if per_source else tokens,
    )


def hf_generate(
    model,
    tokenizer,
    texts: list[str],
    beams: int,
    tokens: int,
    per_source: float = 0.0,
) -> list[str]:
    """``transformers``' translations of ``texts`` (one batch), the search of
    ``same_search``; a translation that reaches its limit ends without a
    forced </s>, as Rosetta's does. ``per_source``: each sentence's own
    limit, as ``same_search``'s (a row at its limit is given </s>, and
    ``generate`` goes on computing it, as it does any row that has ended,
    until the batch's last row ends)."""
    from transformers.generation import LogitsProcessorList

    batch = tokenizer(texts, return_tensors="pt", padding=True)
    processors = LogitsProcessorList()
    if per_source:
        sources = batch["attention_mask"].sum(1).double()
        limits = torch.floor(per_source * sources).long().clamp(min=1)
        processors.append(EndAt(limits.repeat_interleave(beams), model.config))
        tokens = int(limits.max()) + 1
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = model.generate(
            **batch,
            num_beams=beams,
            do_sample=False,
            max_new_tokens=tokens,
            length_penalty=1.0,
            early_stopping=True,
            forced_eos_token_id=None,
            logits_processor=processors,
        )
    return tokenizer.batch_decode(found, skip_special_tokens=True)


class EndAt:
    """A ``transformers`` logits processor: row i's next token is </s> once
    it holds ``limits[i]`` tokens."""

    def __init__(self, limits: torch.Tensor, config) -> None:
        self.limits = limits
        self.eos = config.eos_token_id

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        done = self.limits <= input_ids.size(1) - 1  # tokens after the start
        scores[done] = float("-inf")
        scores[done, self.eos] = 0.0
        return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", required=True, help="folder to write")
    parser.add_argument(
        "--full-size", action="store_true", help="an OPUS-MT model's shape"
    )
    args = parser.parse_args()
    sizes = {}
    if args.full_size:
        sizes = {"d_model": 512, "layers": 6, "heads": 8, "d_ff": 2048}
        sizes |= {"vocab_size": 58101, "pieces": (4000, 4000), "max_positions": 512}
    folder = make_marian(Path(args.output), **sizes)
    print(f"{folder}: a MarianMT model with random weights")


if __name__ == "__main__":
    main()
