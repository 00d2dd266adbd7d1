"""NLLB-200's ``tokenizer.json``, written with transformers' own tokenizer
class: byte-pair merges taken from the SentencePiece model (transformers'
conversion), the table's ids, the language codes and SentencePiece's text
normalisation (its precompiled character map)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from rosetta.data.piece_table import PieceTableTokenizer
from rosetta.errors import RosettaError


def write_nllb_tokenizer(
    folder: Path, tokenizer: PieceTableTokenizer, table: list[str], codes: dict
) -> None:
    """``tokenizer.json`` and ``tokenizer_config.json`` in ``folder``, whose
    ids are ``table``'s."""
    try:
        import transformers
        from sentencepiece import sentencepiece_model_pb2
        from transformers import NllbTokenizer
    except ImportError as error:  # name what is missing: protobuf, too
        missing = error.name or str(error)
        raise RosettaError(
            f"{folder}: an NLLB-200 export writes its tokenizer with "
            f"transformers 5 or later and protobuf; {missing} is missing: "
            "pip install 'rosetta-nmt[export-hf]'"
        ) from None
    if int(transformers.__version__.split(".")[0]) < 5:
        raise RosettaError(
            f"{folder}: an NLLB-200 export writes its tokenizer with transformers "
            f"5 or later, not {transformers.__version__}: "
            "pip install 'transformers>=5'"
        )
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "sentencepiece.bpe.model").write_bytes(tokenizer.model_bytes)
        converted = json.loads(
            NllbTokenizer.from_pretrained(scratch)._tokenizer.to_str()
        )
    merges = [
        tuple(m) if isinstance(m, list) else tuple(m.split(" "))
        for m in converted["model"]["merges"]
    ]
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(tokenizer.model_bytes)
    written = NllbTokenizer(
        vocab={piece: i for i, piece in enumerate(table)},
        merges=merges,
        extra_special_tokens=list(tokenizer.languages.values()),
        _spm_precompiled_charsmap=proto.normalizer_spec.precompiled_charsmap,
        **codes,
    )
    wrong = [
        token
        for token in tokenizer.languages.values()
        if written.convert_tokens_to_ids(token) != table.index(token)
    ]
    if wrong:
        raise RosettaError(
            f"{folder}: the NLLB tokenizer transformers made gives {wrong[0]!r} "
            "another id than the model's"
        )
    written.save_pretrained(str(folder))
