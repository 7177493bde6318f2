"""What one generation cost, in US dollars, from the `price` config group (conf/price/*.yaml).

Two ways to pay for tokens:

- `per_token` (APIs): `input_usd_per_million` and `output_usd_per_million`;
  cost = prompt_tokens * input / 1e6 + completion_tokens * output / 1e6.
- `hourly` (self-hosted: a GPU or a CPU machine rented by the hour): `usd_per_hour` per device,
  times `devices`, charged for the time the request occupied them. `basis: latency` charges the
  measured `latency_s` of the record (right for one request at a time, as the transformers
  backend runs; the vLLM offline backend reports each request's share of its batch's wall time).
  `basis: throughput` charges tokens at a measured rate instead (right for a batching server whose
  per-request latencies overlap): seconds = prompt_tokens / prefill_tokens_per_s +
  completion_tokens / decode_tokens_per_s.

`build_cost_model(None)` (or `kind: none`) gives a model whose costs are None: no price table,
no invented number.

The same schema prices generation at run time (records' `cost_usd`) and in the report's what-if
(conf/report.yaml `price:` is a conf/price mapping or a preset name, see `load_price`). The report's
one-off indexing cost uses `IndexingPrice` (USD per million embedded tokens, or machine time at the
generation's hourly rate).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

PRESETS_DIR = Path(__file__).resolve().parents[1] / "conf" / "price"

KINDS = ("per_token", "hourly", "none")
BASES = ("latency", "throughput")


class CostModel:
    """Turns one record's usage into US dollars (None when no price is configured)."""

    kind: str | None = None
    hourly_rate: float | None = None  # USD per hour of all devices (hourly prices only)

    def cost(self, prompt_tokens: int, completion_tokens: int, latency_s: float) -> float | None:
        return None

    def needs_tokens(self) -> bool:
        """Whether `cost` reads the token counts (False: only the latency)."""
        return False

    def describe(self) -> dict[str, Any]:
        return {"kind": None}


@dataclass
class PerTokenCost(CostModel):
    input_usd_per_million: float
    output_usd_per_million: float
    name: str | None = None
    kind = "per_token"

    def needs_tokens(self) -> bool:
        return True

    def cost(self, prompt_tokens: int, completion_tokens: int, latency_s: float) -> float | None:
        return (prompt_tokens * self.input_usd_per_million + completion_tokens * self.output_usd_per_million) / 1e6

    def describe(self) -> dict[str, Any]:
        return {"kind": "per_token", "name": self.name, "input_usd_per_million": self.input_usd_per_million,
                "output_usd_per_million": self.output_usd_per_million}


@dataclass
class HourlyCost(CostModel):
    usd_per_hour: float
    devices: int = 1
    basis: str = "latency"
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    name: str | None = None
    kind = "hourly"

    @property
    def hourly_rate(self) -> float:  # type: ignore[override]
        return self.usd_per_hour * self.devices

    def needs_tokens(self) -> bool:
        return self.basis == "throughput"

    def seconds(self, prompt_tokens: int, completion_tokens: int, latency_s: float) -> float:
        if self.basis == "latency":
            return float(latency_s)
        return prompt_tokens / self.prefill_tokens_per_s + completion_tokens / self.decode_tokens_per_s  # type: ignore[operator]

    def cost(self, prompt_tokens: int, completion_tokens: int, latency_s: float) -> float | None:
        if self.basis == "latency" and latency_s is None:
            return None
        return self.seconds(prompt_tokens, completion_tokens, latency_s) * self.usd_per_hour * self.devices / 3600.0

    def describe(self) -> dict[str, Any]:
        out = {"kind": "hourly", "name": self.name, "usd_per_hour": self.usd_per_hour, "devices": self.devices,
               "basis": self.basis}
        if self.basis == "throughput":
            out.update(prefill_tokens_per_s=self.prefill_tokens_per_s, decode_tokens_per_s=self.decode_tokens_per_s)
        return out


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
        return PerTokenCost(_number(cfg, "input_usd_per_million", positive=False),
                            _number(cfg, "output_usd_per_million", positive=False), name)
    if kind == "hourly":
        basis = cfg.get("basis", "latency")
        if basis not in BASES:
            raise ValueError(f"price.basis={basis!r}; allowed: {', '.join(BASES)}")
        devices = cfg.get("devices", 1)
        if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
            raise ValueError(f"price.devices must be a positive integer, got {devices!r}")
        rates = (None, None)
        if basis == "throughput":
            rates = (_number(cfg, "prefill_tokens_per_s"), _number(cfg, "decode_tokens_per_s"))
        return HourlyCost(_number(cfg, "usd_per_hour", positive=False), devices, basis, *rates, name=name)
    raise ValueError(f"price.kind={kind!r}; allowed: {', '.join(KINDS)} (or no price config for no costs)")


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
    return cfg


@dataclass
class IndexingPrice:
    """RAG's one-off cost per document: the tokens its index embeds.

    Dense retrievers pay `embed_usd_per_million`, lexical ones `lexical_usd_per_million`. Under an
    hourly price (`usd_per_hour`, all devices) a dense index costs machine time instead: the
    measured seconds when known, else the tokens at `embed_tokens_per_s`; a lexical one is free.
    """

    embed_usd_per_million: float = 0.02
    lexical_usd_per_million: float = 0.0
    lexical_retrievers: tuple[str, ...] = ("bm25",)
    embed_tokens_per_s: float = 20000.0

    def is_lexical(self, retriever: str | None) -> bool:
        return str(retriever or "").lower() in {x.lower() for x in self.lexical_retrievers}

    def cost(self, tokens: float, retriever: str | None, usd_per_hour: float | None = None,
             seconds: float | None = None) -> float:
        lexical = self.is_lexical(retriever)
        if usd_per_hour is not None:
            if seconds is not None:  # measured build time: every retriever pays for it, lexical ones too
                return seconds * usd_per_hour / 3600
            if lexical:
                return 0.0
            return tokens / self.embed_tokens_per_s * usd_per_hour / 3600
        return tokens * (self.lexical_usd_per_million if lexical else self.embed_usd_per_million) / 1e6
