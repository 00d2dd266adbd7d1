"""MarianMT models (the 1,000+ OPUS-MT models of the Hugging Face Hub) in and
out of Rosetta's Transformer: ``hf_folder`` reads a model's files safely,
``convert`` maps the configuration, ids and tensor names both ways,
``importer`` writes a run (``rosetta import hf``), ``exporter`` a MarianMT
folder (``rosetta export hf``)."""
