"""Asking the generator: its config (a conf/generator/ name or a YAML file) and the `Asker` that sends texts
through llm/ with the response cache."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from llm.cache import response_key
from llm.factory import build_generator
from llm.prompt import Prompt

MAX_NEW_TOKENS = 160
CLOSED_BOOK_TOKENS = 32
LOCAL_BATCH = 16  # requests per batch for a backend without max_concurrency (local: one prefill, batched decoding)
CONF = Path(__file__).resolve().parents[1] / "conf" / "generator"


class GeneratorFailed(RuntimeError):
    """A generator call failed; what was kept so far stays written."""


def generator_config(spec: str, settings: Iterable[str] = ()) -> dict[str, Any]:
    """The generator's config: `conf/generator/<spec>.yaml`, or the YAML file `spec`, with `KEY=VALUE` settings."""
    from omegaconf import OmegaConf

    path = Path(spec)
    if spec.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"--generator {spec!r}: no such file")
    else:
        path = CONF / f"{spec}.yaml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in CONF.glob("*.yaml")))
            raise ValueError(f"--generator {spec!r}: not a name in conf/generator/ ({known}) nor a .yaml file")
    try:
        cfg = OmegaConf.merge(OmegaConf.load(path), OmegaConf.from_dotlist(list(settings)))
        data = OmegaConf.to_container(cfg, resolve=True)
    except Exception as err:  # noqa: BLE001 - OmegaConf's parse and interpolation errors, named with the file
        raise ValueError(f"--generator {path}: {type(err).__name__}: {err}") from None
    if not isinstance(data, dict) or not data.get("backend"):
        raise ValueError(f"--generator {path}: a generator config needs `backend` (see conf/generator/)")
    if data["backend"] == "none":
        raise ValueError(f"--generator {path}: backend `none` generates nothing; pick a model")
    return cast(dict[str, Any], data)  # a YAML file's keys are strings


class Asker:
    """Texts in, reply texts out, through the configured generator and its response cache."""

    def __init__(self, cfg: dict[str, Any], cache_dir: str | Path):
        self.cfg = cfg
        self.generator = build_generator(cfg, cache_dir=cache_dir)
        self._prompt = Prompt
        self._key = response_key
        self.asked = 0  # requests handed to the generator (cached ones included)

    @property
    def label(self) -> dict[str, str]:
        return {"generator": str(self.generator.model_id), "backend": str(self.cfg.get("backend"))}

    def prompt(self, system: str | None, user: str, max_new_tokens: int, shared_chars: int = 0) -> Any:
        """A request; `shared_chars`: the length of the user message's start that other requests share (a local
        backend reads it once for all of them and decodes them as one batch)."""
        return self._prompt(user=user, system=system, max_new_tokens=max_new_tokens, prefix_chars=shared_chars)

    def cached(self, prompts: list[Any]) -> int:
        """How many of `prompts` the response cache already answers."""
        cache = getattr(self.generator, "cache", None)
        if cache is None:
            return 0
        params = self.generator.sampling_params()
        return sum(cache.get(self._key(self.generator.model_id, p, params)) is not None for p in prompts)

    @property
    def calls(self) -> int:
        """Requests the backend actually answered (not from the cache)."""
        return int(getattr(self.generator, "calls", self.asked))

    def ask(self, prompts: list[Any], what: str) -> list[str]:
        self.asked += len(prompts)
        try:
            return [g.text for g in self.generator.generate(prompts)]
        except KeyboardInterrupt:
            raise
        except Exception as err:  # any backend failure ends the run with its name and reason
            raise GeneratorFailed(f"the generator {self.generator.model_id!r} ({self.cfg.get('backend')}) failed "
                                  f"on {what}: {type(err).__name__}: {err}") from err
