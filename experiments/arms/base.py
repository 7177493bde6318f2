"""What an arm is: how it is built, how it answers, what it reads, how it is named and priced.

An arm is one `ArmSpec` subclass (in its own module under `experiments/arms/`, registered in
`experiments/arms/__init__.py`) plus its config file `conf/arm/<name>.yaml`. Everything outside the
arm modules asks the spec instead of branching on the arm's name:

- the runner builds the arm (`build`), lets it answer a group of samples (`answer`), reads its
  index and cache counters (`index_builds`, `cache_stats`), writes its `knobs(cfg)` and hashes
  them with the config `sections` it reads, as `hashed` presents them (`experiments.run.config_hash`);
- the report finds the spec by the `arm` knob stored in metrics.json and asks it for the run's
  `label`, whether it has an index to price (`indexed`) and its `index_shape` (what prices it),
  which index cost an older run's saved config implies (`index_cost_from_config`), what the verdict
  compares it as (`role`: "longctx", "rag" or "other") and at which `token_budget`, how many ranked
  passages it retrieves for a prompt (`retrieval_depth`: where a loss reason and the upper bound read
  evidence recall@k), whether it builds a context from the document (`context`), where it sits on a
  sweep plot (`curve`), how plots and tables name it (`title`, `colour`, `pick`), which of its knobs
  the per-config table shows (`columns`) and which models besides the generator shape its records
  (`model_ids`). The report reads no arm's own knob by name (tests/house_rules.py: "arm knob read").

An arm that routes each question to one of two paths (Self-Route) writes the `role` of the path that
answered into the record's `route` field (`ROLE_RAG` or `ROLE_LONGCTX`); the report counts routes by
role, never by arm name.

A built arm is either a prompt builder (`build(sample) -> Prompt`, answered here by
`answer_with_prompts`) or an object the spec's `answer` drives itself (Self-Route).

Spec modules import `rag`/`longctx` inside `build` only, so the report can read specs without
importing torch or an index library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from eval.sample import Sample
from llm.base import samples_of
from llm.prompt import Generation, Prompt, PromptTooLong

# what the verdict compares an arm as: the whole document, retrieved chunks, or neither (a floor, a router)
ROLE_LONGCTX, ROLE_RAG, ROLE_OTHER = "longctx", "rag", "other"
ROLES = (ROLE_LONGCTX, ROLE_RAG, ROLE_OTHER)


class IndexShape(NamedTuple):
    """What prices an indexed run's index: the model that embeds it (a retriever name the price
    table knows) and the tokens one indexed unit (a chunk) holds."""

    model: str | None
    unit_tokens: int | None


class Curve(NamedTuple):
    """Where a run sits on a sweep plot: its line (`series`, e.g. "bm25 c256"), the line's style
    (`variant`, e.g. the chunk order), its x (e.g. top-k), and how the lines sort (`order`)."""

    series: str
    variant: str
    x: int | None
    order: tuple = ()


@dataclass
class Answer:
    """What one sample got from an arm: a generation, or a reason it was skipped."""

    sample: Sample
    meta: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)  # prompt/completion tokens, latency, ttft, cached
    skipped: str | None = None
    texts: list[str] | None = None  # every answer when the generator gives several per question (`text` the first)


def usage_of(gens: list[Generation], retrieval_s: float | None = None,
             retrieval_cpu_s: float | None = None) -> dict[str, Any]:
    """Tokens and times of one sample's generator calls (Self-Route: both).

    `generation_s`: generator time charged to this request (what a batch costs; with prefix
    reuse a share of one prefill plus a share of the batched decode). `latency_s`: what one user
    waits: `retrieval_s` (RAG) plus each call's time as served to that user (with prefix reuse
    the whole prefill and its batch's decode). `prefill_s` / `prefix_group_size`: the shared
    prefill of the long-context call and how many questions shared it (None without reuse).
    `cached_prompt_tokens` / `cache_write_tokens`: the prompt tokens the endpoint reported reading from and
    writing to its prompt cache (None when no call reported any), which a per-token price bills at its cached
    and write rates. `cpu_s`: the process CPU seconds charged to this request (generation share + retrieval; None
    when a call did not measure them, e.g. a remote endpoint's), what `price.basis: cpu` charges;
    `prefill_cpu_s` the same for the shared prefill. `decode_batch`: how many answers were decoded together with
    this one (the largest of its calls), `decode_steps` the decode steps its batches ran (summed over its calls),
    `decode_policy` the generator's batching setting. `timings_replayed`:
    an answer the response cache served with timings measured under another configuration (llm/cache.py)."""
    ttft = [g.ttft_s for g in gens if g.ttft_s is not None]
    cached = [g.cached_prompt_tokens for g in gens if g.cached_prompt_tokens is not None]
    written = [g.cache_write_tokens for g in gens if g.cache_write_tokens is not None]
    user = sum(g.user_latency_s if g.user_latency_s is not None else g.latency_s for g in gens)
    shared = [g for g in gens if g.prefill_s is not None]
    cpu = [g.cpu_s for g in gens if g.cpu_s is not None]
    batches = [g.decode_batch for g in gens if g.decode_batch is not None]
    steps = [g.decode_steps for g in gens if g.decode_steps is not None]
    policies = [g.decode_policy for g in gens if g.decode_policy is not None]
    return {
        "prompt_tokens": sum(g.prompt_tokens for g in gens),
        "completion_tokens": sum(g.completion_tokens for g in gens),
        "generation_s": round(sum(g.latency_s for g in gens), 4),
        "retrieval_s": None if retrieval_s is None else round(retrieval_s, 6),
        "latency_s": round(user + (retrieval_s or 0.0), 4),
        "prefill_s": shared[-1].prefill_s if shared else None,
        "prefix_group_size": shared[-1].prefix_group_size if shared else None,
        "ttft_s": round(ttft[0], 4) if ttft else None,
        "cached": all(g.cached for g in gens),
        "calls": len(gens),
        "finish_reason": gens[-1].finish_reason if gens else None,  # of the answer that counts
        "cached_prompt_tokens": sum(cached) if cached else None,
        "cache_write_tokens": sum(written) if written else None,
        "cpu_s": round(sum(cpu) + (retrieval_cpu_s or 0.0), 4) if gens and len(cpu) == len(gens) else None,
        "prefill_cpu_s": shared[-1].prefill_cpu_s if shared else None,
        "decode_batch": max(batches) if batches else None,
        "decode_steps": sum(steps) if gens and len(steps) == len(gens) else None,
        "decode_policy": max(policies) if policies else None,
        "timings_replayed": any(getattr(g, "timings_replayed", False) for g in gens),
    }


def answer_with_prompts(arm, generator, samples: list[Sample], prepare: bool = True) -> list[Answer]:
    """Build every sample's prompt, then generate them together (one context: one prefix).

    An arm with a `prepare(samples)` hook sees the whole group first (the long-context arm decides
    there one cut of the document for all its questions); `prepare=False` when the caller already
    prepared the group and passes only part of it (Self-Route's fallback)."""
    if prepare and hasattr(arm, "prepare"):
        arm.prepare(samples)
    answers, ready = [], []
    for sample in samples:
        try:
            prompt = arm.build(sample)
        except PromptTooLong as err:
            answers.append(Answer(sample, skipped=str(err)))
            continue
        ready.append((sample, prompt))
    if not getattr(generator, "generates", True):
        # retrieval only: no answer, but the prompt a generator would have received is counted
        answers += [Answer(s, meta={**p.meta, "prompt_tokens": generator.prompt_tokens(p),
                                    "max_new_tokens": p.max_new_tokens, **_expected_output(generator, s, p)})
                    for s, p in ready]
    else:
        n = samples_of(generator)  # generator.samples: n answers per prompt, one after another
        gens = generator.generate([p for _, p in ready]) if ready else []
        for k, (s, p) in enumerate(ready):
            mine = gens[k * n:(k + 1) * n]
            answers.append(Answer(s, meta=dict(p.meta), text=mine[0].text,
                                  texts=[g.text for g in mine] if n > 1 else None,
                                  usage=usage_of(mine, p.meta.get("retrieval_s"),
                                                 p.meta.get("retrieval_cpu_s"))))
    order = {s.id: i for i, s in enumerate(samples)}
    return sorted(answers, key=lambda a: order[a.sample.id])


def _expected_output(generator, sample: Sample, prompt: Prompt) -> dict[str, Any]:
    """A dry run's expected output tokens for this answer (experiments/dry_run.py), nothing for a retrieval-only
    run's generator."""
    expect = getattr(generator, "expected_output", None)
    if expect is None:
        return {}
    tokens, source = expect(sample, prompt)
    return {"expected_output_tokens": tokens, "output_source": source}


class ArmSpec:
    """The base spec: a prompt-building arm that reads no config section, has no index and no knobs.

    It is also what the report uses for an arm name no module registers (an old or foreign run):
    the label is the name plus any truncation or budget knob, nothing is priced as an index.
    """

    name: ClassVar[str] = "?"
    title: ClassVar[str] = ""  # how plots and tables name the arm (default: its name)
    colour: ClassVar[str | None] = None  # matplotlib colour in the plots (None: the next default colour)
    pick: ClassVar[str] = ""  # the what-if row of its best run, for role "other" (default: "best <title>")
    sections: ClassVar[tuple[str, ...]] = ()  # config sections it reads besides benchmark and generator
    indexed: ClassVar[bool] = False  # builds a retrieval index per document (priced by the report)
    role: ClassVar[str] = ROLE_OTHER  # what the verdict compares it as: "longctx", "rag" or "other"
    context: ClassVar[bool] = True  # puts document text in the prompt (closed book: no)
    columns: ClassVar[tuple[str, ...]] = ()  # its knobs the report's per-config table shows, one column each

    @classmethod
    def display(cls) -> str:
        return cls.title or cls.name

    @classmethod
    def pick_title(cls) -> str:
        return cls.pick or f"best {cls.display()}"

    @classmethod
    def knobs(cls, cfg: Mapping[str, Any]) -> dict[str, Any]:
        """The arm's own settings from the composed config (after arm, benchmark and generator)."""
        return {}

    @classmethod
    def label(cls, knobs: Mapping[str, Any], retrieval_only: bool = False) -> str:
        """The config label of a run with these knobs (the report's row name)."""
        text = str(knobs.get("arm", cls.name))
        if knobs.get("truncation") not in (None, "benchmark"):
            text += f" {knobs.get('truncation')}"
        if knobs.get("budget_tokens") is not None:
            text += f" budget{knobs['budget_tokens']}"
        return text

    @classmethod
    def budget_matched(cls, knobs: Mapping[str, Any]) -> bool:
        """A control cut to a fixed token budget rather than a full config of its role."""
        return False

    @classmethod
    def upper_bound(cls, knobs: Mapping[str, Any]) -> bool:
        """A config that reads the gold answer's evidence (retriever=oracle): a bound to compare with, never a
        candidate the verdict may choose."""
        return False

    @classmethod
    def token_budget(cls, knobs: Mapping[str, Any]) -> int | None:
        """Context tokens a run of these knobs puts in a prompt at most, for budget-matched
        comparisons (None: no fixed budget, the model's window)."""
        return None

    @classmethod
    def retrieval_depth(cls, knobs: Mapping[str, Any]) -> int | None:
        """How many ranked passages a run of these knobs retrieves for a prompt (before a token budget packs
        them): the k at which the report reads the evidence recall@k of records that do not carry
        `evidence_in_top_k`. None: it ranks no passages (the whole document, or no context)."""
        return None

    @classmethod
    def index_cost_from_config(cls, config: Mapping[str, Any]) -> str | None:
        """The index-cost kind (llm.cost.INDEX_LEXICAL or INDEX_DENSE) that a run's saved config implies, for a
        run from before the runner recorded the kind (metrics.json `index_cost`); None: unknown (priced as dense)."""
        return None

    @classmethod
    def model_ids(cls, cfg: Mapping[str, Any], knobs: Mapping[str, Any]) -> list[str]:
        """The models besides the generator that shape a run's records, as "<role> <id>" (the report's
        reproducibility table): `cfg` is the run's saved config (possibly empty for an imported run)."""
        return []

    @classmethod
    def index_shape(cls, knobs: Mapping[str, Any]) -> IndexShape:
        """What prices the index of an `indexed` arm's run (nothing for an arm without one)."""
        return IndexShape(None, None)

    @classmethod
    def curve(cls, knobs: Mapping[str, Any]) -> Curve | None:
        """Where a run of these knobs sits on the sweep plots (None: on none)."""
        return None

    @classmethod
    def hashed(cls, sections: dict[str, Any], multi_document: bool) -> dict[str, Any]:
        """The config `sections` the arm reads (plain dicts, by name) as the config hash sees them:
        an arm may drop a setting that cannot change its records, so older runs keep their hash."""
        return sections

    @classmethod
    def build(cls, generator, cfg: dict[str, Any]):
        """The arm from the whole composed config (plain containers)."""
        raise ValueError(f"arm.name={cls.name!r} has no build")

    @classmethod
    def answer(cls, arm, generator, samples: list[Sample]) -> list[Answer]:
        """Answers of one group of samples (consecutive samples over one context), in their order."""
        return answer_with_prompts(arm, generator, samples)

    @classmethod
    def index_builds(cls, arm) -> int | None:
        return None

    @classmethod
    def index_seconds(cls, arm) -> float | None:
        """Measured chunk + embed + index build time of the arm's indexes, total (None: no index)."""
        return None

    @classmethod
    def index_cost(cls, arm) -> str | None:
        """How the report prices the arm's index: its retriever's declared `index_cost` (None: no index)."""
        return None

    @classmethod
    def cache_stats(cls, arm) -> dict[str, Any] | None:
        return None

    @classmethod
    def chunks_over_limit(cls, arm, samples) -> dict[str, Any] | None:
        """Before any answer: the chunks of `samples` the arm's embedder would cut to its input limit (None: no
        embedder, or it cannot tell)."""
        return None

    @classmethod
    def embedder_truncation(cls, arm) -> dict[str, Any] | None:
        """Chunks the arm's embedder cut to its input limit (`rag.retrievers.DenseRetriever.truncation`)."""
        return None
