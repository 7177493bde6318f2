"""`arm=longctx`: the whole document in the prompt, truncated by the benchmark's policy only when it
must be (or cut to `longctx.budget_tokens`: a budget-matched control). Settings: `longctx:`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from experiments.arms.base import ROLE_LONGCTX, ArmSpec


class LongContextSpec(ArmSpec):
    name = "longctx"
    title = "long context"
    colour = "tab:red"
    sections = ("longctx",)
    role = ROLE_LONGCTX
    columns = ("truncation", "budget_tokens")

    @classmethod
    def knobs(cls, cfg: Mapping[str, Any]) -> dict[str, Any]:
        lc = cfg["longctx"]
        knobs: dict[str, Any] = {"truncation": lc["truncation"] or "benchmark"}
        if lc.get("budget_tokens") is not None:
            knobs["budget_tokens"] = lc["budget_tokens"]
        return knobs

    @classmethod
    def budget_matched(cls, knobs: Mapping[str, Any]) -> bool:
        return knobs.get("budget_tokens") is not None

    @classmethod
    def token_budget(cls, knobs: Mapping[str, Any]) -> int | None:
        return None if knobs.get("budget_tokens") is None else int(knobs["budget_tokens"])

    @classmethod
    def build(cls, generator, cfg: dict[str, Any]):
        from longctx.arm import LongContextArm, LongContextConfig

        return LongContextArm(generator, LongContextConfig(**cfg["longctx"]))
