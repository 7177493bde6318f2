"""The sentence a team can act on, one per verdict row; it follows the row's decision."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.report.settings import ReportSettings
from experiments.report.verdict.decision import (
    INCONCLUSIVE,
    LONGCTX,
    NO_DECISION,
    RAG,
    ROUTE,
    Decision,
    claim_levels,
    percent,
)
from experiments.report.verdict.family import Family
from experiments.report.verdict.row import Comparison, level_filter, on_scale

SMALL_SAMPLE = 12  # fewer documents than this: the sentence says a decision rests on few documents


def _times(ratio: float) -> str:
    return f"{1 / ratio:.1f}x fewer" if ratio < 1 else f"{ratio:.1f}x more"



@dataclass(frozen=True)
class Words:
    """The words stage of a verdict row: the sentence a team can act on (`recommend`)."""
    recommendation: str = ""


def recommend(row: Comparison, family: Family, settings: ReportSettings) -> str:
    """One sentence a team can act on; it follows the row's decision after the family (`family.decision`)."""
    if row.lc is None and row.rag is None:
        return "No long-context or RAG run with scores for this benchmark and level."
    if row.lc is None:
        if row.rag is None:
            return "No long-context or RAG run with scores for this benchmark and level."
        return f"No long-context run to compare with; the best RAG config is {row.rag.label} ({row.rag_score:.1f})."
    if row.rag is None:
        return f"No scored RAG run to compare with; long context ({row.lc.label}) scores {row.lc_score:.1f}."
    ci = _interval_words(row, family)
    diff = f"{row.diff:+.1f} points" if row.diff is not None else "no difference measured"
    tokens = f"{_times(row.token_ratio)} prompt tokens" if row.token_ratio else "unknown prompt tokens"
    cost = row.cost_phrase()  # with its interval and basis; "a cost tie" where it holds 1
    decision = family.decision or Decision(INCONCLUSIVE, "no interval")
    if decision.kind == RAG:
        text = f"Use RAG ({row.rag.label}): {decision.why}; RAG - long context = {diff} ({ci}), {tokens}{cost}."
    elif decision.kind == LONGCTX:
        text = (f"Use long context ({row.lc.label}): {decision.why}; RAG ({row.rag.label}) - long context = "
                f"{diff} ({ci}).")
    elif decision.kind == NO_DECISION:
        text = (f"No decision: {decision.why}. RAG ({row.rag.label}) - long context ({row.lc.label}) = {diff} "
                f"over {row.n_groups} documents with both arms at the {decision.bound or 'floor or ceiling'}: "
                "no interval says anything there.")
    elif decision.kind == ROUTE:
        arm = family.arm_decision.kind if family.arm_decision else INCONCLUSIVE
        text = (f"Route each question between RAG ({row.rag.label}) and long context ({row.lc.label}): {decision.why}. "
                f"Between the single arms alone the decision is {arm}: RAG - long context = {diff} ({ci}).")
    else:
        text = (f"Inconclusive: {decision.why}. RAG ({row.rag.label}) - long context ({row.lc.label}) = {diff} "
                f"({ci}), {tokens}{cost}.")
    if 0 < row.n_groups < SMALL_SAMPLE and decision.kind in (RAG, LONGCTX):
        text += (f" It rests on {row.n_groups} documents: settled by the {_tested_level(row, family)} interval, but a "
                 "team with other documents should check a few of theirs.")
    corrected = row.oracle.corrected if row.oracle else None
    if corrected is not None and corrected.excess is not None and corrected.real \
            and corrected.excess.value > settings.tolerance:
        lo = corrected.excess.interval(0.95)[0]
        text += (f" Routing by document may gain (an estimate, not a tested claim): answering each question with the "
                 f"arm that did better on the other questions of its document reaches {corrected.score:.1f}, "
                 f"{corrected.excess.value:+.1f} (95% interval from {lo:+.1f}) over the better single arm.")
    target = settings.latency_target_s
    lc_lat, rag_lat = row.lc.mean_of("latency_s", level_filter(row)), row.rag.mean_of("latency_s", level_filter(row))
    if target is not None and lc_lat is not None and rag_lat is not None:
        if lc_lat > target >= rag_lat:
            text += f" Only RAG meets the {target:g} s latency target."
        elif rag_lat > target >= lc_lat:
            text += f" Only long context meets the {target:g} s latency target."
    return text



def _tested_level(row: Comparison, family: Family) -> str:
    """The confidence of the interval the row's decision was tested at ("97%"), as the first screen shows it."""
    if family.confidence:
        return percent(family.confidence)
    strict = bool(row.estimate and row.estimate.strict)
    return percent(1 - claim_levels(row.rag_cheaper, strict=strict)[RAG])


def _interval_words(row: Comparison, family: Family) -> str:
    """The interval the sentence quotes: the one the decision was tested at, with its confidence (the first
    screen's), else the nominal 95% one of a row that decides nothing, said so."""
    if not row.ci:
        if row.diff is not None and row.n_groups == 1:
            return "one document: no interval"
        return "no interval" if row.diff is not None else "no shared samples"
    if family.ci is not None and family.confidence:
        lo, hi = family.ci
        level = f"{100 * family.confidence:.1f}".rstrip("0").rstrip(".")
        return f"{level}% CI [{lo:+.1f}, {hi:+.1f}] over {row.n_groups} documents"
    lo, hi = on_scale(row.ci)
    return f"nominal 95% CI [{lo:+.1f}, {hi:+.1f}] over {row.n_groups} documents, untested"
