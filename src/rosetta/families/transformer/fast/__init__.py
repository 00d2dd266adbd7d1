"""The Transformer's decoding fast path, an explicit transform of a trained
model: ``packed`` (``pack_for_inference``: the weights laid out once for
decoding, checked equal to the layers) and ``step`` (the one-token decoder
step those packed weights run, with its key/value cache)."""
