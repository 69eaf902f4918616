"""Runnable examples: ``python -m minigrad.examples.tense`` and
``python -m minigrad.examples.grammar_graph``."""
