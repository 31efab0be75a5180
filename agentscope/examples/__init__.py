"""Bundled examples: a real agent log (``g_triage.sqlite``), the machines that wrote the fixtures'
logs (``machines/*.mjs``) and their Python twins (:mod:`agentscope.examples.python_machines`)."""
