"""The arms a config point can run: one registry of arm specs (see `experiments.arms.base`).

Each arm is one module here (its `ArmSpec` subclass, and the arm class when no other package owns
it) plus its config `conf/arm/<name>.yaml`; the line below registers it. Entries are imported on
first use, and spec modules import `rag`/`longctx` only when they build an arm, so the report can
look specs up without the runner's heavy dependencies.

    spec = arm_spec("rag")                    # the spec class; ValueError naming the allowed arms
    arm = spec.build(generator, cfg)          # cfg: the whole composed config as plain containers
    answers = spec.answer(arm, generator, samples)

A new arm (a test's toy one, a plugin's) can also be added at run time with `register(Spec)`.
"""

from __future__ import annotations

from typing import Any

from eval.registry import Registry
from eval.sample import Sample
from experiments.arms.base import (
    ROLE_LONGCTX,
    ROLE_OTHER,
    ROLE_RAG,
    ROLES,
    Answer,
    ArmSpec,
    Curve,
    IndexShape,
    answer_with_prompts,
)

ARMS = Registry("arm.name", {
    "longctx": "experiments.arms.longctx:LongContextSpec",
    "rag": "experiments.arms.rag:RagSpec",
    "closedbook": "experiments.arms.closedbook:ClosedBookSpec",
    "selfroute": "experiments.arms.selfroute:SelfRouteSpec",
    "router": "experiments.arms.router:RouterSpec",
})


def register(spec: type[ArmSpec]) -> type[ArmSpec]:
    """Add an arm spec under its `name` (usable as a class decorator)."""
    if spec.role not in ROLES:
        raise ValueError(f"arm {spec.name!r}: role={spec.role!r}; allowed: {', '.join(ROLES)}")
    ARMS.register(spec.name, spec)
    return spec


def arm_spec(name: str) -> type[ArmSpec]:
    """The registered spec of `name`; a ValueError naming the registered arms otherwise."""
    spec = ARMS.get(str(name))
    if not (isinstance(spec, type) and issubclass(spec, ArmSpec)):
        raise TypeError(f"arm.name={name!r} is registered as {spec!r}, not an ArmSpec subclass")
    return spec


def spec_of_run(name: str) -> type[ArmSpec]:
    """For reading runs: the spec of `name`, or the plain `ArmSpec` for an arm no module registers."""
    return arm_spec(name) if str(name) in ARMS else ArmSpec


def specs() -> list[type[ArmSpec]]:
    """Every registered spec, in registration order."""
    return [arm_spec(n) for n in ARMS.names()]


def build_arm(name: str, generator, cfg: dict[str, Any]):
    """The arm `name` from the composed config (`cfg`: the whole config as plain containers)."""
    return arm_spec(name).build(generator, cfg)


def answer_group(arm, generator, samples: list[Sample]) -> list[Answer]:
    """Answers of one group of samples from a built arm (its spec found by the arm's `name`)."""
    return arm_spec(arm.name).answer(arm, generator, samples)


__all__ = ["ARMS", "ROLE_LONGCTX", "ROLE_OTHER", "ROLE_RAG", "ROLES", "Answer", "ArmSpec", "Curve", "IndexShape",
           "answer_group", "answer_with_prompts", "arm_spec", "build_arm", "register", "spec_of_run", "specs"]
