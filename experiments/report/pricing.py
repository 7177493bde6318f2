"""What an answer and an index cost, under the report's price settings.

Generation: the records' own `cost_usd` when every answered record of the report has one and no
price was given on the command line; otherwise the report's price (conf/report.yaml `price:`, in
the conf/price vocabulary, or the command-line flags) through llm.cost's CostModel, the same model
the runner prices records with.

Indexing (RAG and Self-Route): a one-off cost per document, the tokens embedded, estimated as the
document's chunks x chunk_size (an upper bound: the last chunk is shorter and overlap is counted
twice, as an embedder sees it). Dense retrievers pay the embedding price per million tokens;
lexical ones (BM25) are priced as free. With a GPU-hour price the tokens become GPU time at the
configured embedding throughput, or the measured index time when metrics.json has `index_seconds`;
the same holds when the records' own cost came from an hourly price (metrics.json `price`, kind hourly).
"""

from __future__ import annotations

import json
from statistics import mean
from typing import Any

from experiments.report.settings import ReportSettings
from llm.cost import HourlyCost, PerTokenCost, build_cost_model
from experiments.report.run_dirs import Run
from experiments import records as schema


class Pricing:
    """The report's prices, asked of llm.cost's model (the runner's): no arithmetic of its own."""

    def __init__(self, settings: ReportSettings, runs: list[Run]):
        self.price, self.ix = settings.price, settings.indexing
        self.model = self.price.model()
        answered = [r for run in runs for r in run.answered()]
        use_records = (not self.price.from_command_line and answered
                       and all(r.get("cost_usd") is not None for r in answered))
        self.source = ("records" if use_records else "gpu_hour" if isinstance(self.model, HourlyCost)
                       else "tokens" if isinstance(self.model, PerTokenCost) else "none")
        self.run_prices = sorted({json.dumps(run.metrics.get("price"), sort_keys=True) for run in runs
                                  if run.metrics.get("price")})
        # Records priced by the hour (conf/price/cpu.yaml, h100.yaml): indexing is priced by time at that rate too.
        self.hourly_rate: float | None = None
        if self.source == "records" and len(self.run_prices) == 1:
            run_price = json.loads(self.run_prices[0])
            if isinstance(run_price, dict) and run_price.get("kind") == "hourly":
                try:
                    self.hourly_rate = build_cost_model(run_price).hourly_rate
                except ValueError:  # a run's price this version cannot read: price indexing by tokens
                    self.hourly_rate = None
        if self.source == "gpu_hour":
            self.hourly_rate = self.model.hourly_rate

    def describe(self) -> str:
        if self.source == "records":
            text = "Generation cost: each record's own `cost_usd` (the price configured when the runs were made"
            text += f": `{self.run_prices[0]}`)." if len(self.run_prices) == 1 else ")."
        elif self.source == "gpu_hour":
            text = (f"Generation cost: measured latency x ${self.model.hourly_rate:g} per GPU hour "
                    "(one request at a time on the GPU; batching would lower it for every arm alike).")
        elif self.source == "tokens":
            text = (f"Generation cost: ${self.model.input_usd_per_million:g} per million prompt tokens and "
                    f"${self.model.output_usd_per_million:g} per million completion tokens.")
        else:
            text = "Generation cost: no price configured (price kind none)."
        if self.hourly_rate is not None:
            text += (f" Indexing: embedded tokens (chunks x chunk_size per document) at {self.ix.embed_tokens_per_s:g} "
                     f"tokens/s of machine time at ${self.hourly_rate:g} per hour, or the measured index time when the "
                     f"run recorded one; lexical retrievers ({', '.join(self.ix.lexical_retrievers)}) cost nothing.")
        else:
            text += (f" Indexing: embedded tokens (chunks x chunk_size per document, an upper bound) at "
                     f"${self.ix.embed_usd_per_million:g} per million for dense retrievers, "
                     f"${self.ix.lexical_usd_per_million:g} for lexical ones ({', '.join(self.ix.lexical_retrievers)}).")
        return text

    def answer_cost(self, rec: dict[str, Any]) -> float | None:
        if not schema.is_answered(rec):
            return None
        if self.source == "records":
            return float(rec["cost_usd"])
        pt, ct = rec.get("prompt_tokens"), rec.get("completion_tokens")
        if pt is None and self.model.needs_tokens():
            return None
        return self.model.cost(pt or 0, ct or 0, rec.get("latency_s"))

    def mean_answer_cost(self, run: Run, level: str | None = None) -> float | None:
        costs = [c for c in (self.answer_cost(r) for r in run.answered(level)) if c is not None]
        return mean(costs) if costs else None

    def index_tokens_per_doc(self, run: Run) -> float | None:
        """Mean tokens embedded per document (distinct sample context, by `group`)."""
        if not run.spec.indexed:
            return None
        chunk_size = run.knobs.get("chunk_size")
        per_doc: dict[str, int] = {}
        for r in run.records:
            if r.get("n_chunks") is not None and chunk_size:
                per_doc[str(r.get("group") or r["id"])] = int(r["n_chunks"]) * int(chunk_size)
        return mean(per_doc.values()) if per_doc else None

    def index_cost_per_doc(self, run: Run) -> float:
        if not run.spec.indexed:
            return 0.0
        tokens = self.index_tokens_per_doc(run) or 0.0
        builds, secs = run.metrics.get("index_builds"), run.metrics.get("index_seconds")
        return self.ix.cost(tokens, run.knobs.get("retriever"), self.hourly_rate,
                            secs / builds if secs and builds else None)
