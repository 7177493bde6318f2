"""The report's settings: conf/report.yaml, overridden by command-line flags."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

DEFAULTS_FILE = Path(__file__).resolve().parents[2] / "conf" / "report.yaml"


@dataclass
class Price:
    input_per_m: float = 0.50  # USD per million prompt tokens
    output_per_m: float = 1.50  # USD per million completion tokens
    gpu_hour: float | None = None  # USD per GPU hour: when set, generation is priced by latency
    from_command_line: bool = False  # a price given on the command line wins over records' own cost_usd


@dataclass
class Indexing:
    embed_per_m: float = 0.02
    lexical_per_m: float = 0.0
    lexical_retrievers: tuple[str, ...] = ("bm25",)
    embed_tokens_per_s: float = 20000.0


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

    def check(self) -> "ReportSettings":
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
        for name in ("input_per_m", "output_per_m", "gpu_hour"):
            v = getattr(self.price, name)
            if v is not None and v < 0:
                raise ValueError(f"price.{name}={v}: must be >= 0")
        if self.resamples < 100:
            raise ValueError(f"bootstrap resamples={self.resamples}: use at least 100")
        return self


def load_settings(path: Path | None = None, **overrides: Any) -> ReportSettings:
    """conf/report.yaml (or `path`), then any override that is not None.

    Overrides: tolerance, correct_threshold, evidence_threshold, queries_per_doc, latency_target_s,
    price_in, price_out, gpu_hour_price.
    """
    path = Path(path) if path else DEFAULTS_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: report settings file not found")
    raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping of settings")
    known = {"tolerance", "correct_threshold", "evidence_threshold", "queries_per_doc", "latency_target_s", "price",
             "indexing", "bootstrap"}
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    price = Price(**(raw.get("price") or {}))
    ix = dict(raw.get("indexing") or {})
    if "lexical_retrievers" in ix:
        ix["lexical_retrievers"] = tuple(ix["lexical_retrievers"])
    boot = raw.get("bootstrap") or {}
    s = ReportSettings(
        tolerance=float(raw.get("tolerance", 2.0)),
        correct_threshold=float(raw.get("correct_threshold", 0.5)),
        evidence_threshold=float(raw.get("evidence_threshold", 1.0)),
        queries_per_doc=float(raw.get("queries_per_doc", 10)),
        latency_target_s=None if raw.get("latency_target_s") is None else float(raw["latency_target_s"]),
        price=price, indexing=Indexing(**ix),
        resamples=int(boot.get("resamples", 2000)), seed=int(boot.get("seed", 0)),
    )
    for key in ("tolerance", "correct_threshold", "evidence_threshold", "queries_per_doc", "latency_target_s"):
        if overrides.get(key) is not None:
            setattr(s, key, float(overrides[key]))
    if overrides.get("gpu_hour_price") is not None:
        if overrides.get("price_in") is not None or overrides.get("price_out") is not None:
            raise ValueError("give either --price-in/--price-out (per million tokens) or --gpu-hour-price, not both")
        s.price = Price(input_per_m=0.0, output_per_m=0.0, gpu_hour=float(overrides["gpu_hour_price"]),
                        from_command_line=True)
    elif overrides.get("price_in") is not None or overrides.get("price_out") is not None:
        s.price = Price(
            input_per_m=float(overrides["price_in"]) if overrides.get("price_in") is not None else s.price.input_per_m,
            output_per_m=float(overrides["price_out"]) if overrides.get("price_out") is not None else s.price.output_per_m,
            gpu_hour=None, from_command_line=True)
    return s.check()
