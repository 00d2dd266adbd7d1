"""Serving: the HTTP API with dynamic batching (``app``, ``batcher``), its JSON
(``schemas``) and the web page (``static/``).

Import from the modules: ``from rosetta.serve.app import create_app``. The
package itself imports nothing, so ``rosetta --help`` does not load FastAPI.
"""
