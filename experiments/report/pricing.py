"""What an answer and an index cost, under the report's price settings.

Generation: the records' own `cost_usd` when every answered record has one and no price was given on the command
line; otherwise the report's price (conf/report.yaml `price:`, in the conf/price vocabulary, or the command-line
flags). One road for the price: a price becomes a cost model by `llm.priced_with.PricedWith.cost_model` (the
runner's and the report's alike), an answer is priced by `llm.cost.record_cost`, and what the runs priced with is
read back from their metrics.json (`price`, `work_rates`, as data). In words: report/pricing_words.py.

Indexing (RAG and Self-Route): a one-off cost per document, the tokens embedded, estimated as the document's
chunks x chunk_size (an upper bound: the last chunk is shorter and overlap is counted twice, as an embedder sees
it). Dense retrievers pay the embedding price per million tokens; lexical ones (BM25) are priced as free. Priced by
time (a GPU-hour price, or records whose own cost came from an hourly price), the tokens become GPU time at the
configured embedding throughput, or, where metrics.json has it, the measured index time (`index_seconds`: chunk +
embed + index build) for every retriever, BM25 included.

Times of a record: `generation_s` + `retrieval_s` is what the request is charged (its share of a
batch); `latency_s` is what one user waits. Records from before those fields had only `latency_s`,
the charged generation time, which is used for both. Long-context records answered with prefix
reuse carry `prefill_s` (their group's whole prefill) and `prefix_group_size`: `answer_cost_at`
recomputes their cost with a prefix cache shared by q questions, or with no prefix cache (each
question pays the whole prefill). Only a time price (hourly) separates the two; token prices do not.

Provider prompt caching (a per-token price with `cached_input_usd_per_million`, conf/price/gpt-4o.yaml,
claude-sonnet-4.yaml): a record's own `cached_prompt_tokens` / `cache_write_tokens` are billed at the cached and
write rates; and for long context at q questions per document, the document (the record's `context_tokens`, the
prompt's shared prefix) is written by the first question and read by the other q - 1 within the cache's
time-to-live (`llm.cost.PerTokenCost.cache_terms`): `answer_cost_provider` per answer, `lc_provider_terms` for
the break-even. The cached price is the report's when it names a per-token one, else that of the runs' records
(metrics.json `price`) when they were all priced by one per-token price. `deployment_cost` (the verdict's cost
ratio and cheapest-config choice) prices long context with provider caching when such a price is known, and
`pricing_words.basis` names the pricing it used.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from statistics import mean
from typing import Any

from experiments import records as schema
from experiments.arms import ROLE_LONGCTX
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from llm.cost import (
    CostModel,
    HourlyCost,
    PerTokenCost,
    TokenTimeModel,
    cache_state_known,
    cost_basis,
    fit_token_rates,
    record_cost,
    token_time_model,
)
from llm.priced_with import PricedWith
from llm.work_model import WorkModel, WorkPriced


class Pricing:
    """The report's prices, asked of llm.cost's model (the runner's): no arithmetic of its own."""

    def __init__(self, settings: ReportSettings, runs: list[Run]):
        self.price, self.ix = settings.price, settings.indexing
        self.model = PricedWith(self.price.spec).cost_model()  # the report's own price, as the runner builds one
        answered = [r for run in runs for r in run.answered()]
        use_records = (not self.price.from_command_line and answered
                       and all(r.get("cost_usd") is not None for r in answered))
        self.source = ("records" if use_records else "hourly" if isinstance(self.model, HourlyCost)
                       else "tokens" if isinstance(self.model, PerTokenCost) else "none")
        # the prices the runs' records were priced by (metrics.json `price`, as the runner wrote it)
        self.run_prices = _distinct(run.metrics["price"] for run in runs if run.metrics.get("price"))
        self.recorded = self._single_run_price()
        self.hourly_rate = self._hourly_rate()
        self._price_time(runs, answered)
        self.cache_model, self.uncacheable_note = self._cache_model()
        self.full_rate_cached = 0  # records' cached prompt tokens priced in full (the price names no cached rate)
        if self.source == "tokens":
            self.full_rate_cached = sum(int(r.get("cached_prompt_tokens") or 0) for r in answered)
        # the model that can price a record again without a cache (None: records' own costs of several prices)
        self.rec_model: CostModel | None = self.model if self.source in ("hourly", "tokens") else self.recorded
        self.token_time = self._token_time(answered)
        self.prefill_note = self.modelled_prefill_note(runs)

    def _single_run_price(self) -> CostModel | None:
        """The cost model of the one price the records were priced by (None: not the records' costs, several
        prices, or one this version cannot read)."""
        if self.source != "records" or len(self.run_prices) != 1:
            return None
        try:
            return PricedWith(self.run_prices[0]).cost_model()
        except ValueError:  # a run's price this version cannot read
            return None

    def _hourly_rate(self) -> float | None:
        """The rate generation is priced by the hour at: the report's hourly price, or the one the records were
        priced by (conf/price/cpu.yaml, h100.yaml), at which indexing is priced by time too; None: neither."""
        if self.source == "hourly":
            return self.model.hourly_rate
        return self.recorded.hourly_rate if isinstance(self.recorded, HourlyCost) else None

    def _price_time(self, runs: list[Run], answered: list[dict[str, Any]]) -> None:
        """What prices a record's time (`time_model`) and its basis (`time_basis`: wall seconds, or process CPU
        seconds over the machine's vcpus); basis cpu charges each answer its tokens at the CPU rates the runs'
        probe measured (`work`, llm/work_model.py; `work_note` when it could not)."""
        price = None  # time is not priced
        if self.source == "hourly":
            price = self.price.spec  # the report's own hourly price
        elif self.source == "records" and self.hourly_rate is not None:
            price = self.run_prices[0]  # the one hourly price the records were priced by
        self.time_model: CostModel = PricedWith(price).cost_model()
        timed = [r for r in answered if r.get("generation_s") is not None or r.get("latency_s") is not None]
        self.time_basis = cost_basis(self.time_model, timed) if self.hourly_rate is not None else None
        self.work: WorkModel | None = None
        self.work_note: str | None = None
        if self.time_basis == "cpu" and isinstance(self.time_model, HourlyCost):
            self.work, self.work_note = _work_rates(runs)
            self.time_model = PricedWith(price, self.work).cost_model()

    def _cache_model(self) -> tuple[PerTokenCost | None, str | None]:
        """The per-token price with a cached rate that prices provider caching (the report's, else the records'
        one price), or None; and why provider caching is not priced though the price names a rate."""
        model = self.model if self.source == "tokens" else self.recorded
        if not isinstance(model, PerTokenCost) or not model.caches:
            return None, None
        if model.cache_control_required:
            return None, (
                f"Provider prompt caching is not priced for {model.name or 'this price'}: the provider "
                "caches only prompt blocks marked `cache_control`, which this client does not send (Anthropic's "
                "OpenAI-compatible endpoint does not cache at all)")
        return model, None

    def _token_time(self, answered: list[dict[str, Any]]) -> TokenTimeModel | None:
        """Long context's document prefill where a backend measured none (HTTP servers, vLLM offline): the price's
        token rates, else rates fitted to the records' tokens and times; None: generation is not priced by time."""
        if not self.time_priced():
            return None
        modelled = token_time_model(self.rec_model) if self.rec_model is not None else None
        if modelled is not None:
            return modelled
        return fit_token_rates([  # only records that say what a server's prefix cache served them
            (max(0, int(r["prompt_tokens"]) - int(r.get("cached_prompt_tokens") or 0)),
             int(r.get("completion_tokens") or 0), float(r["generation_s"]))
            for r in answered if r.get("prefill_s") is None and r.get("prompt_tokens") is not None
            and r.get("generation_s") is not None and cache_state_known(r)])

    def charged_seconds(self, rec: dict[str, Any]) -> float | None:
        """The seconds a record is charged under the report's time basis (wall, or CPU over vcpus)."""
        return self.time_model.charged_seconds(rec)

    def answer_cost(self, rec: dict[str, Any]) -> float | None:
        if not schema.is_answered(rec):
            return None
        if self.source == "records" and self.work is not None:  # the records' CPU seconds, through the work model
            seconds, rate = self.charged_seconds(rec), self.time_rate()
            return None if seconds is None or rate is None else seconds * rate
        if self.source == "records":
            return float(rec["cost_usd"])
        return record_cost(self.time_model if self.source == "hourly" else self.model, rec)  # as the runner prices

    def answer_cost_full(self, rec: dict[str, Any]) -> float | None:
        """One answer's generation cost with no cache of any kind: every prompt token at the full input rate (no
        provider caching) and, under a time price, prefilled. A record's own `cost_usd` is priced again by the
        run's price, so that a cost the provider already discounted is never discounted twice; without a price to
        re-price it by (records of several prices), its `cost_usd`."""
        m = self.rec_model
        if m is None or not schema.is_answered(rec) or rec.get("prompt_tokens") is None:
            return self.answer_cost(rec)
        pt, ct, secs = int(rec["prompt_tokens"]), int(rec.get("completion_tokens") or 0), self.charged_seconds(rec)
        if isinstance(m, PerTokenCost) or (isinstance(m, HourlyCost) and m.basis == "throughput"):
            return (m.cost(pt, ct, secs if secs is not None else 0.0) or 0.0) + m.retrieval_cost(rec)
        base = self.answer_cost(rec)
        cached = min(int(rec.get("cached_prompt_tokens") or 0), pt)
        rate = self.time_rate()
        if base is None or not cached or self.token_time is None or rate is None:
            return base
        return base + self.token_time.prefill_s(cached) * rate  # the prefill a server's prefix cache saved it

    def prefix_terms(self, rec: dict[str, Any], shared_prefix: bool) -> tuple[float, float] | None:
        """(the document's whole prefill, the rest of the answer) in USD, under a time price: measured (`prefill_s`
        shared by `prefix_group_size` questions) or, for long context (`shared_prefix`) from a backend that measured
        no prefill, modelled from tokens: the document's `context_tokens` at the prefill rate of `token_time`, less
        what the record already paid for it (prompt tokens a server's prefix cache served skip the prefill).
        None where neither applies: the answer costs what it cost at every q."""
        rate = self.time_rate()
        if rate is None or not schema.is_answered(rec):
            return None
        prefill, group = self.time_model.prefill_seconds(rec), rec.get("prefix_group_size")
        if prefill is not None and group:
            base = self.answer_cost_full(rec)
            return None if base is None else (float(prefill) * rate, base - float(prefill) / int(group) * rate)
        doc, pt = rec.get("context_tokens"), rec.get("prompt_tokens")
        if not shared_prefix or self.token_time is None or not doc or pt is None or not cache_state_known(rec):
            return None  # (a server that hid what its prefix cache served: what was prefilled is unknown)
        doc = min(int(doc), int(pt))
        cached = min(int(rec.get("cached_prompt_tokens") or 0), int(pt))
        m = self.rec_model
        seconds: float | None
        if isinstance(m, HourlyCost) and m.basis == "throughput":
            seconds = m.seconds(int(pt), int(rec.get("completion_tokens") or 0), 0.0, cached)
        else:
            seconds = self.charged_seconds(rec)
        if seconds is None:
            return None
        whole = self.token_time.prefill_s(doc)
        paid = self.token_time.prefill_s(max(0, doc - cached))
        return whole * rate, max(0.0, seconds - paid) * rate

    def modelled_prefill_note(self, runs: list[Run]) -> str | None:
        """The sentence that says long context's document prefill was modelled from tokens, and by which rates."""
        if not self.time_priced():
            return None
        lc = [r for run in runs if run.spec.role == ROLE_LONGCTX for r in run.answered()
              if r.get("prefill_s") is None and r.get("context_tokens") and r.get("prompt_tokens") is not None]
        unknown = sum(1 for r in lc if not cache_state_known(r))
        hidden = (f"{unknown} long-context answers came from a server that reported no cached-token details: what its "
                  "prefix cache served them is unknown, so they cost what they cost at every queries per document"
                  if unknown else None)
        t, n = self.token_time, len(lc) - unknown
        if t is None or not n:
            return hidden
        text = (f"{n} long-context answers came from a backend that measured no prefill of its own (an HTTP server, "
                f"vLLM offline): their document's prefill share at each queries per document is modelled from tokens "
                f"(context_tokens at {t.prefill_tokens_per_s:,.0f} prefill tokens/s, decode at "
                f"{t.decode_tokens_per_s:,.0f} tokens/s: {t.source})")
        return text + (f"; {hidden}" if hidden else "")

    def answer_cost_provider(self, rec: dict[str, Any], queries_per_doc: float) -> float | None:
        """One long-context answer's generation cost with provider caching when its document gets
        `queries_per_doc` questions: the first writes the document (`context_tokens`), the others read it
        (`PerTokenCost.cache_terms`). None without a per-token price that names a cached rate."""
        terms = self._provider_terms(rec)
        return None if terms is None else terms[1] + terms[0] / max(float(queries_per_doc), 1.0)

    def _provider_terms(self, rec: dict[str, Any]) -> tuple[float, float] | None:
        m = self.cache_model
        if m is None or not schema.is_answered(rec) or rec.get("prompt_tokens") is None:
            return None
        return m.cache_terms(rec["prompt_tokens"], rec.get("completion_tokens") or 0, rec.get("context_tokens") or 0)

    def lc_provider_terms(self, run: Run) -> tuple[float, float, float] | None:
        """(fixed per document, per answer) with provider caching and the cost per answer without it, means over
        the run's answers: q questions cost fixed + q x per_answer, or q x no_cache. None when not priced."""
        m = self.cache_model
        if m is None:
            return None
        terms = [(t[0], t[1], c) for rec in run.answered()
                 if (t := self._provider_terms(rec)) is not None
                 and (c := m.cost(rec["prompt_tokens"], rec.get("completion_tokens") or 0, 0.0)) is not None]
        if not terms:
            return None
        fixed, per_answer, no_cache = (mean(t[i] for t in terms) for i in range(3))
        return fixed, per_answer, no_cache

    def mean_answer_cost(self, run: Run, level: str | None = None) -> float | None:
        costs = [c for c in (self.answer_cost(r) for r in run.answered(level)) if c is not None]
        return mean(costs) if costs else None

    def time_priced(self) -> bool:
        """Generation is priced by measured time (an hourly price, or records priced that way): its costs
        carry the measurement's noise, unlike a price per token."""
        return self.hourly_rate is not None and self.source in ("hourly", "records")

    def time_rate(self) -> float | None:
        """USD per second of machine time, when generation is priced by time."""
        return None if self.hourly_rate is None else self.hourly_rate / 3600

    def answer_cost_at(self, rec: dict[str, Any], queries_per_doc: float, prefix_cache: bool,
                       shared_prefix: bool = False) -> float | None:
        """One answer's generation cost when its document gets `queries_per_doc` questions: with a
        prefix cache the document's prefill is paid once and shared; without one every question
        pays it whole (`prefix_terms`: measured, or modelled from tokens for long context's records, `shared_prefix`,
        from a backend that measured none). Records with no shared prefill (RAG, old runs) cost what they cost."""
        terms = self.prefix_terms(rec, shared_prefix)
        if terms is None:
            return self.answer_cost(rec) if prefix_cache else self.answer_cost_full(rec)
        prefill, rest = terms
        whole = None if prefix_cache else self.no_reuse_cost(rec)
        if whole is not None:
            return whole
        return rest + (prefill / max(float(queries_per_doc), 1.0) if prefix_cache else prefill)

    def no_reuse_cost(self, rec: dict[str, Any]) -> float | None:
        """A prefix-reusing answer priced at the probe's rates as it would compute without reuse (its whole prompt
        prefilled and read by every decode step, llm.work_model.no_reuse_features); None without a work model."""
        if not isinstance(self.time_model, WorkPriced) or rec.get("prefix_group_size") is None:
            return None
        seconds, rate = self.time_model.no_reuse_seconds(rec), self.time_rate()
        return None if seconds is None or rate is None else seconds * rate

    @property
    def rate_draws(self) -> tuple[tuple[float, ...], ...]:
        """The probe's bootstrap draws of its rates, which price a cost's interval (none: the prices are exact
        token counts, or measured time with no probe)."""
        return self.work.draws if self.work is not None and isinstance(self.time_model, WorkPriced) else ()

    def at_rates(self, rates) -> Pricing:
        """The same pricing at other rates of the probe's features (experiments/report/cost_interval.py)."""
        work, time_model = self.work, self.time_model
        if work is None or not isinstance(time_model, WorkPriced):  # (what `rate_draws` needs to give draws)
            raise ValueError("Pricing.at_rates: the pricing has no work model to price at other rates")
        other = copy.copy(self)
        other.work = WorkModel(tuple(float(r) for r in rates), work.n, work.r2, work.rel_error, work.source)
        other.time_model = WorkPriced(time_model.base, other.work)
        return other

    def mean_answer_cost_at(self, run: Run, queries_per_doc: float, prefix_cache: bool = True,
                            level: str | None = None) -> float | None:
        """`mean_answer_cost` with every document asked `queries_per_doc` questions (see `answer_cost_at`); with
        `prefix_cache`, long context under a per-token price with a cached rate is priced with provider caching
        (`answer_cost_provider`)."""
        shared = run.spec.role == ROLE_LONGCTX
        if prefix_cache and self.cache_model is not None and shared:
            costs = [c for c in (self.answer_cost_provider(r, queries_per_doc) for r in run.answered(level))
                     if c is not None]
            return mean(costs) if costs else None
        costs = [c for c in (self.answer_cost_at(r, queries_per_doc, prefix_cache, shared)
                             for r in run.answered(level)) if c is not None]
        return mean(costs) if costs else None

    def lc_cost_terms(self, run: Run) -> tuple[float, float, float] | None:
        """(shared prefill per document, rest per answer) with a prefix cache, and the cost per answer
        without one: total for q questions = fixed + q x rest (cache) or q x no_cache."""
        terms = []
        for rec in run.answered():
            split = self.prefix_terms(rec, run.spec.role == ROLE_LONGCTX)
            if split is None:
                base = self.answer_cost_full(rec)
                if base is not None:
                    terms.append((0.0, base, base))
            else:
                whole = self.no_reuse_cost(rec)
                terms.append((split[0], split[1], split[1] + split[0] if whole is None else whole))
        if not terms:
            return None
        fixed, per_answer, without = (mean(t[i] for t in terms) for i in range(3))
        return fixed, per_answer, without

    def index_tokens_per_doc(self, run: Run) -> float | None:
        """Mean tokens embedded per document (distinct sample context, by `group`)."""
        if not run.spec.indexed:
            return None
        unit = run.spec.index_shape(run.knobs).unit_tokens
        per_doc: dict[str, int] = {}
        for r in run.records:
            if r.get("n_chunks") is not None and unit:
                per_doc[str(r.get("group") or r["id"])] = int(r["n_chunks"]) * unit
        return mean(per_doc.values()) if per_doc else None

    def index_cost_per_doc(self, run: Run) -> float:
        if not run.spec.indexed:
            return 0.0
        tokens = self.index_tokens_per_doc(run) or 0.0
        builds, secs = run.metrics.get("index_builds"), run.metrics.get("index_seconds")
        return self.ix.cost(tokens, index_cost_of(run), self.hourly_rate, secs / builds if secs and builds else None)


def _work_rates(runs: list[Run]) -> tuple[WorkModel | None, str | None]:
    """The per-token CPU rates the runs were priced at (metrics.json `work_rates`, one probe for them all), or None
    and why each answer's measured CPU seconds are kept instead."""
    found = _distinct(run.metrics.get("work_rates") for run in runs)
    if found == [None] or not found:
        return None, ("measured as they came: the runs carry no probe of per-token rates (made before it, or by a "
                      "backend without CPU time), so the machine's load moves these costs")
    if len(found) > 1:
        return None, ("measured as they came: the runs were priced at different probes' rates (another machine or "
                      "setup, or runs without a probe), so no one set of rates prices them all")
    try:
        return PricedWith.from_metrics({"work_rates": found[0]}).work, None
    except ValueError as exc:
        return None, f"measured as they came: the runs' work rates cannot be read ({exc})"


def _distinct(values: Iterable[Any]) -> list[Any]:
    """The distinct values, in their first order (JSON values as the runs wrote them: compared, never turned into
    strings)."""
    out: list[Any] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


def index_cost_of(run: Run) -> str | None:
    """The index-cost kind the run's retriever declared (metrics.json `index_cost`). A run from before retrievers
    declared it: what its arm's spec reads from its saved config (RAG: lexical when the retriever's kind is BM25's),
    else unknown (priced as dense)."""
    if run.metrics.get("index_cost") is not None:
        return str(run.metrics["index_cost"])
    return run.spec.index_cost_from_config(run.config) if isinstance(run.config, dict) else None


def deployment_cost(run: Run, pricing: Pricing, settings: ReportSettings, level: str | None = None) -> float | None:
    """Cost per answer at the report's queries per document, for every arm alike: generation (long
    context with a prefix cache: its document's prefill shared by that many questions) plus the
    run's indexing cost per document spread over them."""
    gen = pricing.mean_answer_cost_at(run, settings.queries_per_doc, True, level)
    if gen is None:
        return None
    return gen + pricing.index_cost_per_doc(run) / settings.queries_per_doc
