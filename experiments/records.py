"""records.jsonl: the record schema, its one reader, its one writer, and the record constructors.

One JSON line per sample, appended as each sample finishes. The runner (experiments/run.py), the
importer (experiments/importers/predictions.py), the report (experiments/report/) and the report's test data
(simulated_sweeps.py) all go through here.

Records are built only by the constructors below (`base_record` / `base_fields`, then
`skipped_record`, `failed_record`, `retrieved_record`, `scored_record`): they return new dicts and
never change the ones they are given, and every `reason` they write has its secrets masked
(`experiments.redact.redact_text`: environment secrets, `key=value` credentials, and the `secrets`
the caller passes, e.g. the run config's credential values).

Each line is written with a single `write` on a file opened for appending and synced, so a crash
loses at most the line being written. Readers tolerate that torn last line; the runner's reader
also cuts it off (`repair=True`) before appending again. The last record of an id wins, so a
sample that failed and later succeeded counts once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypedDict

from eval.answers import Answer
from eval.evidence_text import evidence_quotes
from eval.metrics import MetricValues, NoJudgment
from eval.storage import append_synced, atomic_write_text
from experiments.redact import redact_text
from llm.stopping import LEAD_IN

log = logging.getLogger(__name__)

# ---------------------------------------------------------------- statuses
OK = "ok"  # the model answered; the record has a prediction and a score
SKIPPED = "skipped"  # the arm could not serve the sample (the prompt cannot fit): `reason`, score 0
FAILED = "failed"  # the endpoint or the judge still failed after retries: `reason`, no score
RETRIEVED = "retrieved"  # retrieval-only run (`generator=none`): context built, nothing generated
STATUSES = (OK, SKIPPED, FAILED, RETRIEVED)

FINAL = frozenset({OK, SKIPPED, RETRIEVED})  # not retried on resume (failed samples are)
SCORED = frozenset({OK, SKIPPED})  # count in the score: a skipped sample scores 0
WITH_CONTEXT = frozenset({OK, RETRIEVED})  # the arm built a context: evidence recall / retention
ANSWERED = frozenset({OK})  # the model answered: tokens, latency, cost

# Did the gold evidence reach the model? Span-level and document-level figures have their own names
# (eval.evidence.split_kinds), so no table averages one with the other.
RECALL_KEYS = ("evidence_recall", "doc_recall")  # {n: share in the top-n chunks}
LENGTH = "length"  # finish_reason of an answer cut at its token limit
# finish_reasons of a cut answer: at the token limit, or ended after a bare lead-in (llm/stopping.py)
CUT = frozenset({LENGTH, LEAD_IN})
PAIRWISE = "pairwise"  # `scoring` of an answer scored later, against another arm's (experiments.pairwise)
PAIRWISE_FILE = "pairwise.jsonl"  # a RAG run's pairwise judgments, beside its records (experiments.pairwise)

SHARE_KEYS = ("evidence_in_prompt", "docs_in_prompt", "evidence_retained", "docs_retained")


class Record(TypedDict, total=False):
    """Every key a line of records.jsonl may hold (docs/sweeps.md, "What a run writes")."""

    # every record (`base_record`)
    id: str
    benchmark: str
    task: str
    language: str
    length_level: str
    group: str | None  # samples sharing one context
    arm: str
    config_hash: str
    depth: float | None  # synthetic: where the needle sits (0..1)
    answers: list[Answer]
    status: str  # one of STATUSES
    reason: str  # skipped / failed: why (secrets masked)
    # answered (ok), and skipped with score 0; a failed judgment (NoJudgment) keeps the answer but has no score(s)
    prediction: str
    score: float  # the benchmark's primary metric, 0..1
    scores: dict[str, Any]  # every metric value
    prompt_tokens: int
    completion_tokens: int
    latency_s: float  # what one user waits: retrieval_s + generation as served to that user alone
    generation_s: float  # generator time charged to this request (with prefix reuse: its share of the batch)
    retrieval_s: float | None  # RAG / selfroute: query embedding + search + rerank; null for other arms
    retrieval_cpu_s: float | None  # the same retrieval in process CPU seconds
    cpu_s: float | None  # process CPU seconds charged to this request (generation share + retrieval): price.basis cpu
    prefill_cpu_s: float | None  # long context with prefix reuse: the shared prefill in process CPU seconds
    decode_batch: int | None  # answers decoded together with this one (1: alone; None: the backend does not say)
    decode_steps: int | None  # decode steps its batch ran, shared by the batch's answers (None: not said)
    decode_policy: int | None  # the generator's batching policy (generator.decode_batch) when it was answered
    timings_replayed: bool  # the response cache served it with timings measured under another configuration
    prefill_s: float | None  # long context with prefix reuse: the whole shared-prefix prefill of its group
    prefix_group_size: int | None  # questions that shared that prefill
    ttft_s: float | None
    latency_repeats_s: list[float]  # run.timing_repeats: what one user waited at each re-timing (experiments/retime.py)
    generation_repeats_s: list[float]  # run.timing_repeats: the charged generation seconds at each re-timing
    cpu_repeats_s: list[float]  # run.timing_repeats: the charged CPU seconds at each re-timing (cost: their median)
    cached: bool  # every generation came from the response cache
    calls: int  # generation calls behind this answer (selfroute: 2 when it fell back)
    finish_reason: str | None  # how the answer ended: "stop", "length" (cut at max_new_tokens), "lead_in" (ended
    # after a bare lead-in such as "The two rules:", stop strings set), "repetition", ...; None: unknown
    cost_usd: float | None
    cached_prompt_tokens: int | None  # prompt tokens the endpoint read from its prompt cache (at the cached rate)
    cache_write_tokens: int | None  # prompt tokens the endpoint wrote to its prompt cache (at the write rate)
    # what the arm put in the prompt (ok and retrieved)
    context_tokens: int
    max_new_tokens: int  # retrieved: the answer's token limit a generator would get (a price estimate's output bound)
    # RAG
    n_chunks: int
    retrieved: list[dict[str, Any]]  # chunk, start, end, score, doc_id, rank
    retrieved_tokens: int
    evidence_recall: dict[str, float | None]  # {n: share of gold evidence spans in the top-n chunks}
    evidence_in_prompt: float | None
    doc_recall: dict[str, float | None]  # {n: share of gold documents with a chunk in the top n} (Loong)
    docs_in_prompt: float | None
    distractors_retrieved: float | None
    first_evidence_rank: int | None
    evidence_in_top_k: float | None  # share of gold evidence spans in the top-k ranked chunks (before packing)
    dropped: list[dict[str, Any]]  # top-k chunks the prompt budget left out: chunk, start, end, rank, text
    retrieved_overlap: float  # share of the question's content words in the chunks in the prompt (0..1)
    # long context
    context_tokens_full: int
    truncated: bool
    kept_spans: list[list[int]]
    evidence_retained: float | None  # share of gold evidence spans that survived truncation
    docs_retained: float | None  # share of gold documents that kept any text
    distractors_retained: float | None
    evidence_window: dict[str, Any] | None  # start, end, text: the context around the first evidence span
    samples: list[dict[str, Any]]  # generator.samples > 1: each answer and its score ("score" is their mean)
    # a question without references (`scoring: pairwise`): ok, no score until experiments.pairwise judged it
    scoring: str
    question: str  # the question as asked (every record whose sample has one; a router reads its wording)
    evidence_pages: list[str]  # benchmark=corpus: the PDF pages ("file.pdf p3") its evidence lies on
    lexical_overlap: float  # benchmark=corpus: share of the question's content words in its evidence (0..1)
    evidence_quotes: list[dict[str, Any]]  # the char-span gold evidence: start, end, text (cut to 600 chars)
    context_chars: int  # length of the sample's context (evidence depth = start / context_chars)
    answer_in_context: bool | None  # a gold answer (normalised) appears in the context the prompt holds
    # selfroute
    route: str  # which arm answered: rag or longctx
    selfroute_declined: bool
    rag_context_tokens: int
    # router (`route` and `rag_context_tokens` as above; `arm=router`, experiments/arms/router.py)
    router_utility: float | None  # predicted gain of RAG over long context + cost term (> 0: RAG); None: forced
    router_features: dict[str, float | None]  # the question's features (experiments.arms.router_model.feature_row)
    router_forced: str  # the route was not the router's choice: the other path cannot serve it, and why


RECORD_KEYS = frozenset(Record.__annotations__)


def is_final(rec: dict[str, Any] | None) -> bool:
    return rec is not None and rec.get("status") in FINAL


def is_scored(rec: dict[str, Any]) -> bool:
    """Counts in the score (ok, and skipped as 0) and has one."""
    return rec.get("status") in SCORED and rec.get("score") is not None


def has_context(rec: dict[str, Any]) -> bool:
    return rec.get("status") in WITH_CONTEXT


def is_answered(rec: dict[str, Any]) -> bool:
    return rec.get("status") in ANSWERED


def status_of(rec: dict[str, Any]) -> str | None:
    return rec.get("status")


# ---------------------------------------------------------------- constructors
def base_fields(*, id: str, benchmark: str, task: str, language: str, length_level: str, group: str | None, arm: str,
                config_hash: str, answers: list[Answer], depth: float | None = None,
                question: str | None = None) -> dict[str, Any]:
    """What every record holds, from its parts (the importer, which has no eval.sample.Sample); the
    question's text when it has one (a router reads its wording)."""
    base = {"id": id, "benchmark": benchmark, "task": task, "language": language, "length_level": length_level,
            "group": group, "arm": arm, "config_hash": config_hash, "depth": depth, "answers": list(answers)}
    if isinstance(question, str) and question.strip():
        base["question"] = question
    return base


def base_record(sample, arm: str, config_hash: str) -> dict[str, Any]:
    """What every record of `sample` holds (an eval.sample.Sample)."""
    base = base_fields(id=sample.id, benchmark=sample.benchmark, task=sample.task, language=sample.language,
                       length_level=sample.length_level, group=sample.group, arm=arm, config_hash=config_hash,
                       answers=sample.answers, depth=sample.metadata.get("depth"), question=sample.question)
    if sample.metadata.get("evidence_pages"):
        base["evidence_pages"] = list(sample.metadata["evidence_pages"])
    if sample.metadata.get("lexical_overlap") is not None:
        base["lexical_overlap"] = float(sample.metadata["lexical_overlap"])
    quotes = evidence_quotes(sample.context, sample.evidence)
    if quotes:  # the question viewer marks them in what each arm saw (experiments/report/questions)
        base["evidence_quotes"] = quotes
        base["context_chars"] = len(sample.context)
    return base


def skipped_record(base: dict[str, Any], reason: str, secrets: Iterable[str] = ()) -> dict[str, Any]:
    """The arm could not serve the sample: it scores 0."""
    return {**base, "status": SKIPPED, "reason": redact_text(reason, secrets), "score": 0.0}


def failed_record(base: dict[str, Any], reason: str, secrets: Iterable[str] = (), **fields: Any) -> dict[str, Any]:
    """No score: the endpoint or the judge failed (`fields`: what the sample did get, e.g. its answer)."""
    return {**base, **fields, "status": FAILED, "reason": redact_text(reason, secrets)}


def retrieved_record(base: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    return {**base, "status": RETRIEVED, **meta}


def scored_record(base: dict[str, Any], prediction: str, values: MetricValues | NoJudgment, usage: dict[str, Any],
                  cost_usd: float | None, meta: dict[str, Any], secrets: Iterable[str] = ()) -> dict[str, Any]:
    """An answer with its metric's outcome (`eval.metrics.score`). A `NoJudgment` (the judge call
    failed, or its reply held no verdict) is no zero: the record is failed (retried on resume,
    counted), with the answer, its usage and cost, and no score."""
    answer = {"prediction": prediction, **usage, "cost_usd": cost_usd, **meta}
    if isinstance(values, NoJudgment):
        return failed_record(base, values.describe(), secrets, **answer)
    return {**base, "status": OK, "prediction": prediction, "score": values["score"], "scores": dict(values),
            **answer}


def sampled_record(base: dict[str, Any], predictions: list[str], values: list[MetricValues | NoJudgment],
                   usage: dict[str, Any], cost_usd: float | None, meta: dict[str, Any],
                   secrets: Iterable[str] = ()) -> dict[str, Any]:
    """Several answers to one question (`generator.samples`): each scored, the record's `score` and every
    numeric `scores` value the mean over the answers (what the report's document-level resampling reads),
    `prediction` the first answer, `samples` each answer with its score. Usage and cost are those of all
    the answers. One answer without a judgment makes the record failed, as a single answer's would."""
    missing = next((v for v in values if isinstance(v, NoJudgment)), None)
    if missing is not None:
        return scored_record(base, predictions[0], missing, usage, cost_usd, meta, secrets)
    judged = [v for v in values if not isinstance(v, NoJudgment)]  # all of them
    keys = [k for k in judged[0] if all(isinstance(v.get(k), (int, float)) and not isinstance(v.get(k), bool)
                                        for v in judged)]
    mean = {k: sum(float(v[k]) for v in judged) / len(judged) for k in keys}
    record = scored_record(base, predictions[0], {**judged[0], **mean}, usage, cost_usd, meta, secrets)
    record["samples"] = [{"prediction": p, "score": v["score"]} for p, v in zip(predictions, judged, strict=True)]
    return record


def pairwise_record(base: dict[str, Any], question: str, prediction: str, usage: dict[str, Any],
                    cost_usd: float | None, meta: dict[str, Any]) -> dict[str, Any]:
    """An answer that no metric scores on its own (a question with neither reference answers nor
    evidence): ok, without a score, until `python -m experiments.pairwise` compares it with another
    arm's answer; the report then reads the judgment (experiments/report/loading.py)."""
    return {**base, "status": OK, "scoring": PAIRWISE, "question": question, "prediction": prediction, **usage,
            "cost_usd": cost_usd, **meta}


# ---------------------------------------------------------------- the reader
def read_records(path: str | Path, repair: bool = False) -> dict[str, dict[str, Any]]:
    """Records by sample id, the last record of an id winning.

    A torn last line (no newline after it: a run killed mid-write) is ignored, and with `repair`
    cut off the file so the next append starts on a fresh line. Any other bad line raises a
    ValueError naming the file and line."""
    path = Path(path)
    records: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return records
    data = path.read_bytes()
    good_end, tail = 0, b""
    for lineno, raw in enumerate(data.splitlines(keepends=True), 1):
        if not raw.endswith(b"\n"):  # the last line, unfinished: kept only if it is a whole record
            rec = _parse(raw)
            if rec is None:
                log.warning("%s: dropping an unfinished last line (%d bytes) left by an interrupted run", path,
                            len(raw))
            else:
                records[str(rec["id"])], good_end, tail = rec, good_end + len(raw), b"\n"
            break
        good_end += len(raw)
        if not raw.strip():
            continue
        rec = _parse(raw)
        if rec is None:
            try:
                json.loads(raw)
                err = "not a JSON object with an id"
            except ValueError as e:
                err = str(e)
            raise ValueError(f"{path}:{lineno}: not a valid record ({err}); move the file away to start over")
        records[str(rec["id"])] = rec
    if repair and good_end < len(data):
        with open(path, "r+b") as f:
            f.truncate(good_end)
    if repair and tail:
        with open(path, "ab") as f:
            f.write(tail)
    return records


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(raw)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) and "id" in rec else None


# ---------------------------------------------------------------- the writers
class RecordStore:
    """The runner's records.jsonl: `load` (repairing a torn tail) and `append` (one synced write)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def load(self) -> dict[str, dict[str, Any]]:
        return read_records(self.path, repair=True)

    def append(self, record: dict[str, Any]) -> None:
        append_synced(self.path, (json.dumps(record, ensure_ascii=False, default=_jsonable) + "\n").encode())


def write_records(path: str | Path, records: list[dict[str, Any]]) -> None:
    """A whole records.jsonl at once (test data, simulated sweeps)."""
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, default=_jsonable) + "\n")


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write JSON to `path` through a synced temporary file moved into place (`eval.storage`): a reader
    or a crash sees the old file or the new one, never half of it."""
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=_jsonable), fsync=True)


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
