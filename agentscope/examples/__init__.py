"""Bundled real examples: the support-triage agent store and the fixtures' machines (JS and Python)."""
