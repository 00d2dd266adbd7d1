"""CTranslate2 for Transformers: exporting a run (``export``) and translating
with the export (``engine``)."""
