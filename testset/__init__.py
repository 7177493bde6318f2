"""Questions generated from a team's own documents, where it has none (`python -m testset`).

It sits above `llm/` and imports it openly: asking a model is what it does. `eval` reads what it
writes (a questions file for `benchmark=corpus`) and imports nothing of it.
"""
