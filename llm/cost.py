"""What one generation cost, in US dollars, from the `price` config group (conf/price/*.yaml).

Two ways to pay for tokens:

- `per_token` (APIs): `input_usd_per_million` and `output_usd_per_million`;
  cost = prompt_tokens * input / 1e6 + completion_tokens * output / 1e6.
  Provider prompt caching (optional keys): `cached_input_usd_per_million` (a prompt token read from the
  provider's cache: OpenAI bills it at 50-90% off, Anthropic at 10% of the input price),
  `cache_write_usd_per_million` (a prompt token written to the cache: Anthropic 125% of the input price;
  default the input price, as OpenAI's automatic caching charges nothing more), `min_cached_prefix_tokens`
  (shorter prefixes are not cached: 1,024 at OpenAI and Anthropic) and `cache_ttl_s` (how long an entry
  lives unused: the what-if assumes a document's questions come within it). `cache_control_required: true`: the
  provider caches only prompt blocks the request marks (Anthropic), which this client never sends, so the report
  models no provider caching for it. A long-prompt tier: above `long_prompt_threshold_tokens` prompt tokens (cached
  ones included) the whole request is billed at `long_input_usd_per_million` / `long_output_usd_per_million` (and
  `long_cached_input_usd_per_million` / `long_cache_write_usd_per_million`, by default the base cache rates scaled
  like the input rate): Claude Sonnet 4 and Gemini 2.5 Pro above 200k. `batch_discount` (0.5: OpenAI's and
  Anthropic's batch APIs at half price) applies to every rate with `batch: true`. A record's
  `cached_prompt_tokens` (what the endpoint reported: OpenAI-compatible
  `usage.prompt_tokens_details.cached_tokens`) are priced at the cached rate and its `cache_write_tokens`
  at the write rate; with no cached rate in the price they are priced at the full input rate, and
  `full_rate_cached_tokens` counts them so the run can say so.
- `hourly` (self-hosted: a GPU or a CPU machine rented by the hour): `usd_per_hour` per device,
  times `devices`, charged for the time the request occupied them. `basis: latency` charges the
  measured `latency_s` of the record (right for one request at a time, as the transformers
  backend runs; the vLLM offline backend reports each request's share of its batch's wall time).
  `basis: throughput` charges tokens at a measured rate instead (right for a batching server whose
  per-request latencies overlap): seconds = prompt_tokens / prefill_tokens_per_s +
  completion_tokens / decode_tokens_per_s (prompt tokens the server reports as read from its prefix
  cache skip the prefill), plus the record's measured retrieval seconds (`retrieval_cost`).
  `basis: cpu` charges the work the request did, not a wall clock: its process CPU
  seconds (records' `cpu_s`: its share of the generator's batch plus its retrieval, tokenising included)
  divided by the machine's `vcpus` (the CPU seconds an hour of the machine holds), so a machine shared with
  other processes does not make an answer dearer (conf/price/cpu.yaml). A record without `cpu_s` (a remote
  endpoint, an old run) is charged its wall seconds instead, and the run says so (`cost_basis`).

`build_cost_model(None)` (or `kind: none`) gives a model whose costs are None: no price table,
no invented number.

The same schema prices generation at run time (records' `cost_usd`) and in the report's what-if
(conf/report.yaml `price:` is a conf/price mapping or a preset name, see `load_price`). The report's
one-off indexing cost uses `IndexingPrice` (USD per million embedded tokens, or machine time at the
generation's hourly rate).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

PRESETS_DIR = Path(__file__).resolve().parents[1] / "conf" / "price"

KINDS = ("per_token", "hourly", "none")
LONG_PROMPT_KEYS = ("long_input_usd_per_million", "long_output_usd_per_million",
                    "long_cached_input_usd_per_million", "long_cache_write_usd_per_million")
PER_TOKEN_KEYS = frozenset({"kind", "name", "input_usd_per_million", "output_usd_per_million",
                            "cached_input_usd_per_million", "cache_write_usd_per_million", "min_cached_prefix_tokens",
                            "cache_ttl_s", "cache_control_required", "long_prompt_threshold_tokens", *LONG_PROMPT_KEYS,
                            "batch_discount", "batch"})
BASES = ("latency", "throughput", "cpu")


class CostModel:
    """Turns one record's usage into US dollars (None when no price is configured)."""

    kind: str | None = None
    hourly_rate: float | None = None  # USD per hour of all devices (hourly prices only)

    def cost(self, prompt_tokens: int, completion_tokens: int, latency_s: float | None, cached_tokens: int = 0,
             cache_write_tokens: int = 0) -> float | None:
        return None

    def needs_tokens(self) -> bool:
        """Whether `cost` reads the token counts (False: only the latency)."""
        return False

    def charged_seconds(self, rec: Mapping[str, Any]) -> float | None:
        """The seconds a record (or a usage dict) is charged: its wall seconds (`wall_seconds`)."""
        return wall_seconds(rec)

    def prefill_seconds(self, rec: Mapping[str, Any]) -> float | None:
        """A long-context record's whole shared prefill in the seconds `charged_seconds` counts."""
        return None if rec.get("prefill_s") is None else float(rec["prefill_s"])

    def retrieval_cost(self, rec: Mapping[str, Any]) -> float:
        """What a record's retrieval costs beside `cost` (which prices its tokens or its charged seconds): nothing,
        but on an hourly price's throughput basis, whose seconds come from tokens alone."""
        return 0.0

    def describe(self) -> dict[str, Any]:
        return {"kind": None}


@dataclass
class PerTokenCost(CostModel):
    input_usd_per_million: float
    output_usd_per_million: float
    name: str | None = None
    cached_input_usd_per_million: float | None = None  # None: the price names no cached rate
    cache_write_usd_per_million: float | None = None  # None: a cache write costs the input price
    min_cached_prefix_tokens: int = 0
    cache_ttl_s: float | None = None
    # the provider caches only prompt blocks the request marks (Anthropic's `cache_control`), which this client does
    # not send: the report prices no provider caching it would model (what an endpoint reports is still billed)
    cache_control_required: bool = False
    # a prompt above this many tokens (cached ones included) is billed whole at the long_* rates
    long_prompt_threshold_tokens: int | None = None
    long_input_usd_per_million: float | None = None
    long_output_usd_per_million: float | None = None
    long_cached_input_usd_per_million: float | None = None  # default: the cached rate x the long tier's input ratio
    long_cache_write_usd_per_million: float | None = None  # default: the write rate x the same ratio
    batch_discount: float = 0.0  # the share off every token through the provider's batch API
    batch: bool = False  # price as sent through the batch API (batch_discount applies)
    kind = "per_token"

    def __post_init__(self) -> None:
        self.full_rate_cached_tokens = 0  # cached prompt tokens priced at the full rate (no cached rate known)

    def needs_tokens(self) -> bool:
        return True

    @property
    def caches(self) -> bool:
        """Whether the price names a cached-input rate (provider prompt caching can be priced)."""
        return self.cached_input_usd_per_million is not None

    @property
    def write_rate(self) -> float:
        return self.input_usd_per_million if self.cache_write_usd_per_million is None \
            else self.cache_write_usd_per_million

    def long_prompt(self, prompt_tokens: float) -> bool:
        """Whether a prompt of this many tokens is billed at the long-prompt tier."""
        return self.long_prompt_threshold_tokens is not None and prompt_tokens > self.long_prompt_threshold_tokens

    def rates(self, prompt_tokens: float) -> tuple[float, float, float, float]:
        """USD per million (input, output, cached read, cache write) for a prompt of this many tokens: the long
        tier's above its threshold, and the batch discount when priced as batched."""
        inp, out = self.input_usd_per_million, self.output_usd_per_million
        read = inp if self.cached_input_usd_per_million is None else self.cached_input_usd_per_million
        write = self.write_rate
        long_inp, long_out = self.long_input_usd_per_million, self.long_output_usd_per_million
        # the long rates are set whenever the threshold is (checked where the price is read)
        if self.long_prompt(prompt_tokens) and long_inp is not None and long_out is not None:
            scale = long_inp / inp if inp else 1.0
            inp, out = long_inp, long_out
            read = self.long_cached_input_usd_per_million if self.long_cached_input_usd_per_million is not None \
                else read * scale
            write = self.long_cache_write_usd_per_million if self.long_cache_write_usd_per_million is not None \
                else write * scale
        keep = 1.0 - (self.batch_discount if self.batch else 0.0)
        return inp * keep, out * keep, read * keep, write * keep

    def cost(self, prompt_tokens: int, completion_tokens: int, latency_s: float | None, cached_tokens: int = 0,
             cache_write_tokens: int = 0) -> float | None:
        cached, written = max(0, int(cached_tokens or 0)), max(0, int(cache_write_tokens or 0))
        if cached + written > prompt_tokens:
            raise ValueError(f"{cached} cached + {written} cache-write prompt tokens exceed the prompt's "
                             f"{prompt_tokens} tokens")
        if cached and not self.caches:
            self.full_rate_cached_tokens += cached
        inp, out, read, write = self.rates(prompt_tokens)
        fresh = prompt_tokens - cached - written
        return (fresh * inp + cached * read + written * write + completion_tokens * out) / 1e6

    def cache_terms(self, prompt_tokens: float, completion_tokens: float, prefix_tokens: float) -> tuple[float, float]:
        """One document's answers with provider caching of its shared `prefix_tokens` (the first question
        writes the prefix, the others read it within the time-to-live): (fixed cost per document, cost per
        answer); q answers cost fixed + q x per_answer. A prefix below `min_cached_prefix_tokens`, or a price
        without a cached rate, is not cached: (0, the plain cost)."""
        plain = self.cost(int(round(prompt_tokens)), int(round(completion_tokens)), 0.0) or 0.0
        if not self.caches or prefix_tokens < max(1, self.min_cached_prefix_tokens):
            return 0.0, plain
        inp, _, read_rate, write_rate = self.rates(prompt_tokens)
        prefix = min(float(prefix_tokens), float(prompt_tokens))
        read = prefix * read_rate / 1e6
        write = prefix * write_rate / 1e6
        per_answer = plain - prefix * inp / 1e6 + read
        return write - read, per_answer

    def describe(self) -> dict[str, Any]:
        out = {"kind": "per_token", "name": self.name, "input_usd_per_million": self.input_usd_per_million,
               "output_usd_per_million": self.output_usd_per_million}
        for key in ("cached_input_usd_per_million", "cache_write_usd_per_million", "cache_ttl_s",
                    "long_prompt_threshold_tokens", *LONG_PROMPT_KEYS):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.min_cached_prefix_tokens:
            out["min_cached_prefix_tokens"] = self.min_cached_prefix_tokens
        for key in ("cache_control_required", "batch_discount", "batch"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


@dataclass
class HourlyCost(CostModel):
    usd_per_hour: float
    devices: int = 1
    basis: str = "latency"
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    name: str | None = None
    vcpus: int = 1  # basis cpu: the CPU seconds one second of the machine holds
    kind = "hourly"

    def charged_seconds(self, rec: Mapping[str, Any]) -> float | None:
        """basis cpu: the record's process CPU seconds over the machine's vcpus (its wall seconds when it has none);
        other bases: its wall seconds."""
        repeats = _median(rec.get("cpu_repeats_s"))
        if self.basis == "cpu" and repeats is not None:  # run.timing_repeats: the re-timings' median
            return repeats / self.vcpus
        if self.basis == "cpu" and rec.get("cpu_s") is not None:
            return float(rec["cpu_s"]) / self.vcpus
        return wall_seconds(rec)

    def prefill_seconds(self, rec: Mapping[str, Any]) -> float | None:
        if self.basis == "cpu" and rec.get("prefill_cpu_s") is not None:
            return float(rec["prefill_cpu_s"]) / self.vcpus
        return super().prefill_seconds(rec)

    @property
    def hourly_rate(self) -> float:  # type: ignore[override]  # CostModel's field, computed here
        return self.usd_per_hour * self.devices

    def retrieval_cost(self, rec: Mapping[str, Any]) -> float:
        """basis throughput: the record's measured retrieval seconds (its query embedding, search and rerank), which
        the token rates leave out, at the hourly rate; other bases charge them in `charged_seconds` already."""
        if self.basis != "throughput":
            return 0.0
        return float(rec.get("retrieval_s") or 0.0) * self.hourly_rate / 3600.0

    def needs_tokens(self) -> bool:
        return self.basis == "throughput"

    def seconds(self, prompt_tokens: int, completion_tokens: int, latency_s: float, cached_tokens: int = 0) -> float:
        if self.basis in ("latency", "cpu"):  # cpu: `latency_s` is already what `charged_seconds` counts
            return float(latency_s)
        prefill, decode = self.prefill_tokens_per_s, self.decode_tokens_per_s
        if prefill is None or decode is None:  # (both are set on a throughput price: checked where it is read)
            raise ValueError("price.basis=throughput needs price.prefill_tokens_per_s and price.decode_tokens_per_s")
        prefilled = max(0, prompt_tokens - int(cached_tokens or 0))  # a prefix-cache hit skips its prefill
        return prefilled / prefill + completion_tokens / decode

    def cost(self, prompt_tokens: int, completion_tokens: int, latency_s: float | None, cached_tokens: int = 0,
             cache_write_tokens: int = 0) -> float | None:
        if self.basis in ("latency", "cpu") and latency_s is None:
            return None
        # latency_s is set for the bases that read it (just checked); the throughput basis does not read it
        seconds = self.seconds(prompt_tokens, completion_tokens, latency_s or 0.0, cached_tokens)
        return seconds * self.usd_per_hour * self.devices / 3600.0

    def describe(self) -> dict[str, Any]:
        out = {"kind": "hourly", "name": self.name, "usd_per_hour": self.usd_per_hour, "devices": self.devices,
               "basis": self.basis}
        if self.basis == "throughput":
            out.update(prefill_tokens_per_s=self.prefill_tokens_per_s, decode_tokens_per_s=self.decode_tokens_per_s)
        if self.basis == "cpu":
            out["vcpus"] = self.vcpus
        return out


@dataclass
class TokenTimeModel:
    """Machine seconds from tokens: what a prefill of n tokens and a decode of m tokens take. It models the share of
    a long-context answer that its document's prefill is, where a backend measured no prefill of its own (vLLM
    offline, every HTTP server), so that the report's queries per document apply to every backend alike.
    `source` says where the rates came from (the price's throughput rates, or a fit on the runs' records)."""

    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    source: str

    def prefill_s(self, tokens: float) -> float:
        return max(0.0, float(tokens)) / self.prefill_tokens_per_s


def fit_token_rates(rows: list[tuple[float, float, float]], min_rows: int = 4) -> TokenTimeModel | None:
    """Prefill and decode rates fitted to (prefilled tokens, completion tokens, charged seconds) rows by least squares
    through the origin (seconds = prefilled / prefill_rate + completion / decode_rate). None where the rows cannot
    separate the two (too few, every row the same shape, or a rate that comes out zero or negative)."""
    rows = [(float(p), float(c), float(s)) for p, c, s in rows if p >= 0 and c >= 0 and s >= 0]
    if len(rows) < min_rows:
        return None
    spp = sum(p * p for p, _, _ in rows)
    scc = sum(c * c for _, c, _ in rows)
    spc = sum(p * c for p, c, _ in rows)
    sps = sum(p * s for p, _, s in rows)
    scs = sum(c * s for _, c, s in rows)
    det = spp * scc - spc * spc
    if det <= 1e-9 * max(spp * scc, 1e-300):
        return None
    a = (sps * scc - scs * spc) / det  # seconds per prefilled token
    b = (scs * spp - sps * spc) / det  # seconds per completion token
    if a <= 0 or b <= 0:
        return None
    return TokenTimeModel(1.0 / a, 1.0 / b, f"fitted on {len(rows)} records' charged seconds")


def token_time_model(model: CostModel) -> TokenTimeModel | None:
    """The price's own token rates (an hourly price on a throughput basis), or None."""
    if isinstance(model, HourlyCost) and model.basis == "throughput" \
            and model.prefill_tokens_per_s is not None and model.decode_tokens_per_s is not None:  # (both set then)
        return TokenTimeModel(model.prefill_tokens_per_s, model.decode_tokens_per_s, "the price's throughput rates")
    return None


def record_cost(model: CostModel, rec: Mapping[str, Any]) -> float | None:
    """What one answer (a record, or an answer's usage and timings) costs under `model`: its tokens, the prompt
    tokens its endpoint read from and wrote to a prompt cache at their rates (bounded by its prompt), or its charged
    seconds, plus its retrieval where the price's seconds come from tokens alone (`retrieval_cost`). The runner
    prices each answer by it and the report prices again by it. None: no price, or no token counts where the price
    needs them."""
    prompt = rec.get("prompt_tokens")
    if prompt is None and model.needs_tokens():
        return None
    prompt = int(prompt or 0)
    read = min(int(rec.get("cached_prompt_tokens") or 0), prompt)
    written = min(int(rec.get("cache_write_tokens") or 0), prompt - read)
    cost = model.cost(prompt, int(rec.get("completion_tokens") or 0), model.charged_seconds(rec), read, written)
    return None if cost is None else cost + model.retrieval_cost(rec)


def wall_seconds(rec: Mapping[str, Any]) -> float | None:
    """Machine time a record (or a usage dict) took by the wall clock: generation share + retrieval; records from
    before those fields: `latency_s`. A record re-timed (`run.timing_repeats`) is charged the median of its
    re-timings."""
    repeats = _median(rec.get("generation_repeats_s"))
    if repeats is not None:
        return repeats + float(rec.get("retrieval_s") or 0.0)
    if rec.get("generation_s") is not None:
        return float(rec["generation_s"]) + float(rec.get("retrieval_s") or 0.0)
    lat = rec.get("latency_s")
    return None if lat is None else float(lat)


def _median(values) -> float | None:
    xs = sorted(float(x) for x in values or [] if x is not None)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def cost_basis(model: CostModel, records: Sequence[Mapping[str, Any]]) -> str | None:
    """What the answered `records`' time was priced by under `model`: "cpu" (process CPU seconds), "wall", or
    "cpu and wall" when some records had no CPU time; None for a price that is not by the hour."""
    if not isinstance(model, HourlyCost):
        return None
    if model.basis != "cpu":
        return "wall" if model.basis == "latency" else model.basis
    with_cpu = sum(r.get("cpu_s") is not None for r in records)
    return "cpu" if with_cpu == len(records) else "wall" if not with_cpu else "cpu and wall"


def full_rate_note(model: CostModel, cached_tokens: int) -> str | None:
    """The sentence that says cached prompt tokens were priced at the full input rate (the price names no cached
    rate), or None when nothing was: the run's log and metrics.json and the report's pricing line use it."""
    if not cached_tokens or not isinstance(model, PerTokenCost) or model.caches:
        return None
    return (f"{cached_tokens} prompt tokens the endpoint reported as read from its prompt cache were priced at the "
            f"full input rate: price {model.name or '(unnamed)'} has no cached_input_usd_per_million")


def cache_state_known(rec: Mapping[str, Any]) -> bool:
    """Whether a record says what its endpoint's prompt cache served: cached tokens reported (0 included), or a
    local generator's (its process CPU time measured: no server cache between). A server that sends no cached-token
    details (`vllm serve` without `--enable-prompt-tokens-details`) leaves it unknown."""
    return rec.get("cached_prompt_tokens") is not None or rec.get("cpu_s") is not None


def cache_state_note(model: CostModel, records: list[Mapping[str, Any]]) -> str | None:
    """The sentence that says answers came from a server without cached-token details under a price of time, or
    None: its prefix cache may have served part of their prompts unseen, so their cost at another number of
    questions per document cannot be modelled from their tokens (the report fits no token rates on them)."""
    unknown = sum(1 for r in records if r.get("prompt_tokens") is not None and not cache_state_known(r))
    if not unknown or not isinstance(model, HourlyCost) or model.basis == "cpu":
        return None
    return (f"{unknown} of {len(records)} answers came from a server that reported no cached-token details "
            "(usage.prompt_tokens_details.cached_tokens; `vllm serve --enable-prompt-tokens-details` sends them): "
            f"under price {model.name or '(unnamed)'}, which charges time, what its prefix cache served is unknown, "
            "so the report's cost at other queries per document is not modelled from their tokens")


def _number(cfg: Mapping[str, Any], key: str, positive: bool = True) -> float:
    value = cfg.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"price.{key} must be a number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"price.{key} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


def build_cost_model(price_cfg: Mapping[str, Any] | None) -> CostModel:
    """The `price` config (a dict, or None for no pricing) -> a CostModel."""
    if price_cfg is None:
        return CostModel()
    cfg = dict(price_cfg)
    kind, name = cfg.get("kind"), cfg.get("name")
    if kind == "none":  # conf/price/none.yaml: priced at nothing known
        return CostModel()
    if kind == "per_token":
        unknown = sorted(set(cfg) - PER_TOKEN_KEYS)
        if unknown:
            raise ValueError(f"price.{unknown[0]}: not a per_token price key; known: "
                             f"{', '.join(sorted(PER_TOKEN_KEYS))}")
        optional: dict[str, Any] = {key: _number(cfg, key, positive=False) for key in ("cached_input_usd_per_million",
                                                                        "cache_write_usd_per_million")
                    if cfg.get(key) is not None}
        if cfg.get("cache_ttl_s") is not None:
            optional["cache_ttl_s"] = _number(cfg, "cache_ttl_s")
        if cfg.get("min_cached_prefix_tokens") is not None:
            minimum = cfg["min_cached_prefix_tokens"]
            if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0:
                raise ValueError(f"price.min_cached_prefix_tokens must be a whole number >= 0, got {minimum!r}")
            optional["min_cached_prefix_tokens"] = minimum
        if "cache_write_usd_per_million" in optional and "cached_input_usd_per_million" not in optional:
            raise ValueError("price.cache_write_usd_per_million is set without price.cached_input_usd_per_million: "
                             "a cache that is written is read at the cached rate; give both")
        optional.update(_tier_and_batch(cfg))
        return PerTokenCost(_number(cfg, "input_usd_per_million", positive=False),
                            _number(cfg, "output_usd_per_million", positive=False), name, **optional)
    if kind == "hourly":
        basis = cfg.get("basis", "latency")
        if basis not in BASES:
            raise ValueError(f"price.basis={basis!r}; allowed: {', '.join(BASES)}")
        devices = cfg.get("devices", 1)
        if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
            raise ValueError(f"price.devices must be a positive integer, got {devices!r}")
        rates: tuple[float | None, float | None] = (None, None)
        if basis == "throughput":
            rates = (_number(cfg, "prefill_tokens_per_s"), _number(cfg, "decode_tokens_per_s"))
        vcpus = cfg.get("vcpus", 1)
        if not isinstance(vcpus, int) or isinstance(vcpus, bool) or vcpus < 1:
            raise ValueError(f"price.vcpus must be a positive integer, got {vcpus!r}")
        return HourlyCost(_number(cfg, "usd_per_hour", positive=False), devices, basis, *rates, name=name,
                          vcpus=vcpus)
    raise ValueError(f"price.kind={kind!r}; allowed: {', '.join(KINDS)} (or no price config for no costs)")


def _flag(cfg: Mapping[str, Any], key: str) -> bool:
    value = cfg.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"price.{key} must be true or false, got {value!r}")
    return value


def _tier_and_batch(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The optional long-prompt tier, batch discount and cache_control flag of a per-token price, checked."""
    out: dict[str, Any] = {"cache_control_required": _flag(cfg, "cache_control_required"), "batch": _flag(cfg, "batch")}
    threshold = cfg.get("long_prompt_threshold_tokens")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise ValueError(f"price.long_prompt_threshold_tokens must be a whole number >= 1, got {threshold!r}")
        for key in LONG_PROMPT_KEYS[:2]:
            if cfg.get(key) is None:
                raise ValueError(f"price.long_prompt_threshold_tokens is set without price.{key}")
        out["long_prompt_threshold_tokens"] = threshold
    for key in LONG_PROMPT_KEYS:
        if cfg.get(key) is not None:
            if threshold is None:
                raise ValueError(f"price.{key} is set without price.long_prompt_threshold_tokens")
            out[key] = _number(cfg, key, positive=False)
    if cfg.get("batch_discount") is not None:
        discount = _number(cfg, "batch_discount", positive=False)
        if discount >= 1:
            raise ValueError(f"price.batch_discount is the share off (0.5 for half price), got {discount!r}")
        out["batch_discount"] = discount
    if out["batch"] and not out.get("batch_discount"):
        raise ValueError("price.batch=true needs price.batch_discount (the share off through the batch API)")
    return out


def load_price(spec: Mapping[str, Any] | str | None) -> dict[str, Any] | None:
    """A price given as a mapping (conf/price vocabulary) or a preset name (conf/price/<name>.yaml)."""
    if spec is None or isinstance(spec, Mapping):
        return None if spec is None else dict(spec)
    path = PRESETS_DIR / f"{spec}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in PRESETS_DIR.glob("*.yaml")))
        raise ValueError(f"price preset {spec!r} not found in {PRESETS_DIR}; known: {known}")
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: expected a mapping")
    return cast(dict[str, Any], cfg)  # a YAML file's keys are strings


INDEX_LEXICAL, INDEX_DENSE = "lexical", "dense"  # the index-cost kinds a retriever declares (`index_cost`)
INDEX_COSTS = (INDEX_LEXICAL, INDEX_DENSE)


@dataclass
class IndexingPrice:
    """RAG's one-off cost per document: the tokens its index embeds.

    A retriever declares its index-cost kind (`index_cost` in rag/retrievers.py, recorded in the run's
    metrics.json): dense ones pay `embed_usd_per_million`, lexical ones `lexical_usd_per_million`. Under an
    hourly price (`usd_per_hour`, all devices) a dense index costs machine time instead: the
    measured seconds when known, else the tokens at `embed_tokens_per_s`; a lexical one is free.
    """

    embed_usd_per_million: float = 0.02
    lexical_usd_per_million: float = 0.0
    embed_tokens_per_s: float = 20000.0

    def cost(self, tokens: float, index_cost: str | None, usd_per_hour: float | None = None,
             seconds: float | None = None) -> float:
        """`index_cost`: INDEX_LEXICAL or INDEX_DENSE (None, an index of unknown kind: priced as dense)."""
        if index_cost not in (None, *INDEX_COSTS):
            raise ValueError(f"index cost kind {index_cost!r}; known: {', '.join(INDEX_COSTS)}")
        lexical = index_cost == INDEX_LEXICAL
        if usd_per_hour is not None:
            if seconds is not None:  # measured build time: every retriever pays for it, lexical ones too
                return seconds * usd_per_hour / 3600
            if lexical:
                return 0.0
            return tokens / self.embed_tokens_per_s * usd_per_hour / 3600
        return tokens * (self.lexical_usd_per_million if lexical else self.embed_usd_per_million) / 1e6
