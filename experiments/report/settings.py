"""The report's settings: conf/report.yaml, overridden by command-line flags."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from omegaconf import OmegaConf

from llm.cost import CostModel, IndexingPrice, load_price
from llm.priced_with import PricedWith

DEFAULTS_FILE = Path(__file__).resolve().parents[2] / "conf" / "report.yaml"


DEFAULT_PRICE = {"kind": "per_token", "input_usd_per_million": 0.50, "output_usd_per_million": 1.50}
OLD_PRICE_KEYS = {"input_per_m": "input_usd_per_million", "output_per_m": "output_usd_per_million",
                  "gpu_hour": "kind: hourly + usd_per_hour"}
OLD_INDEXING_KEYS = {"embed_per_m": "embed_usd_per_million", "lexical_per_m": "lexical_usd_per_million"}


@dataclass
class Price:
    """The generation price, in the conf/price vocabulary (llm/cost.py's schema)."""

    spec: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_PRICE))
    from_command_line: bool = False  # a price given on the command line wins over records' own cost_usd

    def model(self) -> CostModel:
        """The price's cost model, built as the runner builds its own (llm.priced_with)."""
        return PricedWith(self.spec).cost_model()


Indexing = IndexingPrice  # conf/report.yaml `indexing:` (llm/cost.py)


def _renamed(section: str, given: dict[str, Any], old: dict[str, str]) -> None:
    stale = sorted(set(given) & set(old))
    if stale:
        raise ValueError(f"report settings: {section}.{stale[0]} is no longer read; use the conf/price vocabulary: "
                         + ", ".join(f"{k} -> {old[k]}" for k in stale))


ROUTER_FAMILIES = ("own", "shared")  # experiments.report.verdict.family says what each guarantees
# What Δ is the mean of: every question counts once ("question"), or every document does, the mean of its questions'
# differences ("document": for teams whose documents matter equally, however many questions each has)
WEIGHTS = ("question", "document")


@dataclass
class ReportSettings:
    tolerance: float = 2.0
    correct_threshold: float = 0.5
    evidence_threshold: float = 1.0
    queries_per_doc: float = 10.0
    latency_target_s: float | None = 10.0
    price: Price = field(default_factory=Price)
    indexing: Indexing = field(default_factory=Indexing)
    resamples: int = 2000
    seed: int = 0
    splits: int = 20  # partitions of the documents the cross-fitted choice is repeated over (median aggregated)
    plan_difference: float = 5.0  # points: the difference that matters, what the plan sizes a sweep for by default
    plan_sweeps: int = 200  # simulated sweeps per candidate size in the plan
    floor_share: float = 0.05  # no decision when both chosen configs answer at most this share correctly (or 1 - it)
    router_points_per_1k_tokens: float = 0.0  # score points the learned router gives up to save 1,000 prompt tokens
    router_family: str = "own"  # the routers' claims: "own" family at 5%, or "shared" 5% with the arm decisions
    weight: str = "question"  # Δ is the mean over questions, or over documents (WEIGHTS)

    def check(self) -> ReportSettings:
        if self.tolerance < 0:
            raise ValueError(f"tolerance={self.tolerance}: must be >= 0 (points of score x100)")
        if not 0 <= self.correct_threshold <= 1:
            raise ValueError(f"correct_threshold={self.correct_threshold}: must be in 0..1")
        if not 0 < self.evidence_threshold <= 1:
            raise ValueError(f"evidence_threshold={self.evidence_threshold}: must be in (0, 1]")
        if self.queries_per_doc <= 0:
            raise ValueError(f"queries_per_doc={self.queries_per_doc}: must be > 0")
        if self.latency_target_s is not None and self.latency_target_s <= 0:
            raise ValueError(f"latency_target_s={self.latency_target_s}: must be > 0")
        self.price.model()  # raises ValueError naming a bad price key
        if not 0 <= self.floor_share < 0.5:
            raise ValueError(f"floor_share={self.floor_share}: must be in [0, 0.5)")
        if self.router_points_per_1k_tokens < 0:
            raise ValueError(f"router_points_per_1k_tokens={self.router_points_per_1k_tokens}: must be >= 0")
        if self.resamples < 100:
            raise ValueError(f"bootstrap resamples={self.resamples}: use at least 100")
        if self.plan_difference <= 0:
            raise ValueError(f"plan difference={self.plan_difference}: must be > 0 (points)")
        if self.plan_sweeps < 20:
            raise ValueError(f"plan sweeps={self.plan_sweeps}: use at least 20")
        if self.splits < 1:
            raise ValueError(f"bootstrap splits={self.splits}: use at least 1")
        if self.router_family not in ROUTER_FAMILIES:
            raise ValueError(f"router_family={self.router_family!r}: one of {', '.join(ROUTER_FAMILIES)}")
        if self.weight not in WEIGHTS:
            raise ValueError(f"weight={self.weight!r}: one of {', '.join(WEIGHTS)} (what Δ is the mean over)")
        return self

    @property
    def per_document(self) -> bool:
        """Δ is the mean over documents (`weight: document`)."""
        return self.weight == "document"


KNOWN_SETTINGS = ("tolerance", "correct_threshold", "evidence_threshold", "queries_per_doc", "latency_target_s",
                  "price", "indexing", "bootstrap", "floor_share", "router_points_per_1k_tokens", "plan",
                  "router_family", "weight")
NUMBER_OVERRIDES = ("tolerance", "correct_threshold", "evidence_threshold", "queries_per_doc", "latency_target_s",
                    "floor_share", "resamples", "seed", "splits", "router_points_per_1k_tokens", "plan_difference",
                    "plan_sweeps")
WHOLE_NUMBERS = ("resamples", "seed", "splits", "plan_sweeps")


def load_settings(path: Path | None = None, **overrides: Any) -> ReportSettings:
    """conf/report.yaml (or `path`), then any override that is not None.

    Overrides: tolerance, correct_threshold, evidence_threshold, queries_per_doc, latency_target_s,
    price (a conf/price preset name), price_in, price_out, gpu_hour_price, router_points_per_1k_tokens,
    router_family, weight.
    """
    s = _from_file(_read_file(Path(path) if path else DEFAULTS_FILE))
    if overrides.get("router_family") is not None:
        s.router_family = str(overrides["router_family"])
    if overrides.get("weight") is not None:
        s.weight = str(overrides["weight"])
    for key in NUMBER_OVERRIDES:
        if overrides.get(key) is not None:
            setattr(s, key, int(overrides[key]) if key in WHOLE_NUMBERS else float(overrides[key]))
    s.price = _command_line_price(s.price, overrides)
    return s.check()


def _command_line_price(file_price: Price, overrides: dict[str, Any]) -> Price:
    """The price --price, --gpu-hour-price or --price-in/--price-out give (one kind at most); without them the
    file's."""
    per_token = overrides.get("price_in") is not None or overrides.get("price_out") is not None
    if overrides.get("price") is not None:
        if per_token or overrides.get("gpu_hour_price") is not None:
            raise ValueError("give either --price (a conf/price preset) or --price-in/--price-out or --gpu-hour-price")
        return Price(load_price(str(overrides["price"])) or {"kind": "none"}, from_command_line=True)
    if overrides.get("gpu_hour_price") is not None:
        if per_token:
            raise ValueError("give either --price-in/--price-out (per million tokens) or --gpu-hour-price, not both")
        return Price({"kind": "hourly", "name": "--gpu-hour-price", "usd_per_hour": float(overrides["gpu_hour_price"]),
                      "devices": 1, "basis": "latency"}, from_command_line=True)
    if not per_token:
        return file_price
    file_spec = file_price.spec if file_price.spec.get("kind") == "per_token" else {}
    given = {"input_usd_per_million": overrides.get("price_in"), "output_usd_per_million": overrides.get("price_out")}
    return Price({"kind": "per_token", "name": "--price-in/--price-out",
                  **{k: float(v if v is not None else file_spec.get(k, 0.0)) for k, v in given.items()}},
                 from_command_line=True)


def _read_file(path: Path) -> dict[str, Any]:
    """The settings file's mapping, refused (naming the file) when missing, not a mapping, or with unknown keys."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: report settings file not found")
    raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping of settings")
    unknown = set(raw) - set(KNOWN_SETTINGS)
    if unknown:
        raise ValueError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(sorted(KNOWN_SETTINGS))}")
    return cast(dict[str, Any], raw)  # a YAML file's keys are strings


def _from_file(raw: dict[str, Any]) -> ReportSettings:
    """The settings a file says, with the defaults for what it leaves out."""
    raw_price = raw.get("price")
    if isinstance(raw_price, dict):
        _renamed("price", raw_price, OLD_PRICE_KEYS)
    price = Price(load_price(raw_price) or {"kind": "none"})
    ix = dict(raw.get("indexing") or {})
    _renamed("indexing", ix, OLD_INDEXING_KEYS)
    if "lexical_retrievers" in ix:
        raise ValueError("indexing.lexical_retrievers is no setting any more: a retriever declares its index cost "
                         "(`index_cost` in rag/retrievers.py) and its run records it; remove the key")
    boot, plan = raw.get("bootstrap") or {}, raw.get("plan") or {}
    return ReportSettings(
        tolerance=float(raw.get("tolerance", 2.0)),
        correct_threshold=float(raw.get("correct_threshold", 0.5)),
        evidence_threshold=float(raw.get("evidence_threshold", 1.0)),
        queries_per_doc=float(raw.get("queries_per_doc", 10)),
        latency_target_s=None if raw.get("latency_target_s") is None else float(raw["latency_target_s"]),
        price=price, indexing=Indexing(**ix),
        resamples=int(boot.get("resamples", 2000)), seed=int(boot.get("seed", 0)),
        splits=int(boot.get("splits", 20)),
        plan_difference=float(plan.get("difference", 5.0)),
        plan_sweeps=int(plan.get("sweeps", 200)),
        floor_share=float(raw.get("floor_share", 0.05)),
        router_points_per_1k_tokens=float(raw.get("router_points_per_1k_tokens", 0.0)),
        router_family=str(raw.get("router_family", "own")),
        weight=str(raw.get("weight", "question")),
    )
