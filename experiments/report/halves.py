"""The document split the verdict's cross-fitting and the learned router share: two halves of the
documents by a seeded hash of each name, whatever their scores, so that whatever is chosen or fitted on
one half is scored on the other (experiments.report.verdict.crossfit, experiments.report.router.fit)."""

from __future__ import annotations

import hashlib

MIN_GROUPS = 4  # documents each half of the split needs; fewer: no honest split


def split_documents(groups: set[str], seed: int) -> tuple[set[str], set[str]]:
    """(half A, half B) of the documents, by a seeded hash of each name: the same documents land in
    the same half for every config, whatever their scores (the cross-fit chooses on each, scores on
    the other)."""
    key = lambda g: hashlib.sha256(f"{seed}:{g}".encode()).hexdigest()  # noqa: E731
    ordered = sorted(groups, key=key)
    half = len(ordered) // 2
    return set(ordered[:half]), set(ordered[half:])
