"""A position scheme written outside Rosetta's source, from
docs/families.md alone: ``strided``, sinusoids at every other position
(0, 2, 4, ...) on both sides. ``listed`` adds it to the list of schemes;
``tests/families/transformer/test_outside_scheme.py`` trains and decodes
with it."""
