"""Orchestration: one config point -> records (run.py); many runs -> a report (report.py)."""
