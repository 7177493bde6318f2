"""Test support, not product: test doubles the tests and perf scripts run against (never imported by
eval, rag, longctx, llm or experiments, and not in the installed package; importable from the repository
root, where the tests and perf scripts run)."""
