"""What a run priced its answers with, as data: the price (a conf/price mapping, llm/cost.py's schema) and, under an
hourly price on the cpu basis, the per-token CPU rates a probe measured (llm/work_model.py).

One road for the price: the runner builds its cost model here and writes the same `PricedWith` into its run's
metrics.json (`price`: the mapping as given, `work_rates`: the rates as `WorkModel.to_dict` writes them; plain JSON
values, never a string); the report reads it back with `from_metrics` and prices by `cost_model`, or prices with
its own setting (conf/report.yaml `price:`, `--price`) by the same `cost_model`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llm.cost import CostModel, HourlyCost, build_cost_model
from llm.work_model import WorkModel, WorkPriced


@dataclass(frozen=True)
class PricedWith:
    """A price and, where a probe measured them, the per-token CPU rates that price an answer's CPU seconds."""

    price: Mapping[str, Any] | None = None  # None: no price (costs are None)
    work: WorkModel | None = None

    def cost_model(self) -> CostModel:
        """The price's cost model (llm.cost.build_cost_model; ValueError naming a bad key), charging each answer the
        CPU seconds the work rates give its tokens where it is an hourly price on the cpu basis."""
        model = build_cost_model(self.price)
        if self.work is not None and isinstance(model, HourlyCost) and model.basis == "cpu":
            return WorkPriced(model, self.work)
        return model

    def to_metrics(self) -> dict[str, Any]:
        """The metrics.json keys the runner writes (`price`, `work_rates`), as plain data."""
        return {"price": None if self.price is None else dict(self.price),
                "work_rates": None if self.work is None else self.work.to_dict()}

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> PricedWith:
        """What a run's metrics.json says it priced with (ValueError for work rates this version cannot read)."""
        price, rates = metrics.get("price"), metrics.get("work_rates")
        try:
            work = None if rates is None else WorkModel.from_dict(rates)
        except (KeyError, TypeError) as err:
            raise ValueError(str(err)) from None  # a mapping without a key or of the wrong shape
        return cls(dict(price) if isinstance(price, Mapping) else None, work)
