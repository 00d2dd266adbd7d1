"""The bundled long text: split as published, nothing lost."""

import gzip
import hashlib

from tests.support.paths import ROOT

FOLDER = ROOT / "data" / "tinyshakespeare"


def test_tiny_shakespeare_is_split_ninety_ten_by_position():
    train = gzip.decompress((FOLDER / "train.txt.gz").read_bytes()).decode()
    valid = gzip.decompress((FOLDER / "valid.txt.gz").read_bytes()).decode()
    whole = train + valid
    assert len(whole) == 1_115_394 and len(train) == int(0.9 * len(whole))
    digest = hashlib.sha256(whole.encode("utf-8")).hexdigest()
    assert digest == "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
    assert set(valid) <= set(train) and len(set(train)) == 65
