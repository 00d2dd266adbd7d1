"""MarianMT models (the 1,000+ OPUS-MT models of the Hugging Face Hub) in and
out of Rosetta's Transformer: ``importer`` writes a run (``rosetta import
hf``), ``exporter`` a MarianMT folder (``rosetta export hf``), with the
folder code every layout shares (``rosetta.families.transformer.hf``)."""
