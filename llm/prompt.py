"""What an arm hands to a generator, and what comes back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eval.sample import PromptTemplate


class PromptTooLong(ValueError):
    """The prompt cannot fit the model's window even with no context: the sample is skipped."""


@dataclass
class Prompt:
    """One chat request: an optional system message and the user message (the filled template).

    `prefix_chars` marks how much of `user` is shared with other prompts over the same context
    (the context ends there), so backends can reuse its KV cache. `meta` carries what the arm
    knows about the context it built (kept spans, retrieved chunks); it is not sent.

    `chat=False` asks for the raw prompt: local backends (transformers, vLLM) tokenize the text
    without the chat template; a chat API gets it as one system message (what LooGLE's released
    scripts do for open and GPT models respectively). `repetition_penalty` (HF semantics) is
    honoured by the transformers backend and sent to OpenAI-compatible servers other than
    OpenAI's, whose API has no such parameter. Both are part of the response-cache key, as is `sample`
    (the k-th of `generator.samples` answers drawn at the model's temperature: each is its own entry).
    """

    user: str
    system: str | None = None
    max_new_tokens: int = 64
    prefix_chars: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    chat: bool = True
    repetition_penalty: float | None = None
    sample: int = 0  # which of a question's independent answers this is (generator.samples > 1): part of the cache key

    @classmethod
    def from_template(cls, tpl: PromptTemplate, context: str, question: str, **kw: Any) -> Prompt:
        """The template filled, with its system message and generation settings."""
        return cls(user=tpl.render(context, question), system=tpl.system, max_new_tokens=tpl.max_new_tokens,
                   chat=tpl.chat, repetition_penalty=tpl.repetition_penalty, **kw)

    def raw_text(self) -> str:
        """The prompt as one text (system message first), for `chat=False`."""
        return (self.system + "\n\n" if self.system else "") + self.user

    def messages(self) -> list[dict[str, str]]:
        if not self.chat:
            return [{"role": "system", "content": self.raw_text()}]
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        return msgs + [{"role": "user", "content": self.user}]


@dataclass
class Generation:
    """One answer. `latency_s` is the generator time charged to this request (with prefix reuse:
    its share of the group's one prefill plus its share of the batched decode). With prefix reuse,
    `prefill_s` is the whole shared-prefix prefill of its group, `prefix_group_size` the number of
    prompts that shared it, and `user_latency_s` what one user waits: the whole prefill plus the
    decode of the batch that answered them. Without reuse those stay None and a user waits `latency_s`.

    `cached_prompt_tokens` are the prompt tokens the endpoint reports it read from its prompt cache (an
    OpenAI-compatible `usage.prompt_tokens_details.cached_tokens`, vLLM's `num_cached_tokens`), priced at a
    provider's cached rate; `cache_write_tokens` those it reports writing to it (Anthropic's
    `cache_creation_input_tokens`), priced at its write rate. None: the endpoint said nothing.

    `cpu_s` is the process CPU time charged to this request (its share of a batch, tokenising included: the work,
    which does not grow with other processes' load), `prefill_cpu_s` that of its group's shared prefill;
    `decode_batch` how many answers were decoded together with it (1: alone), `decode_steps` the decode steps that
    batch ran (each a forward pass for all its answers: its longest answer's tokens less the first, which the
    prefill gives; an answer that ended early still shares every step), `decode_policy` the generator's
    batching policy (its `decode_batch` setting); `timed_under` what its timings were measured under (backend,
    device, prefix reuse, batch policy: the response cache replays no timing measured under another).

    `finish_reason` is how the answer ended, where the backend says: "stop" (end of sequence or a
    stop string), "length" (the token limit), "repetition" (the transformers backend with `stop_loops` ended an
    answer that repeated itself), "lead_in" (stop strings set: the answer ended as a bare lead-in such as "The two
    rules:", before any content; llm/stopping.py), or another reason a server gave ("content_filter", ...);
    None when the backend does not report it.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool = False
    ttft_s: float | None = None
    prefill_s: float | None = None
    prefix_group_size: int | None = None
    user_latency_s: float | None = None
    finish_reason: str | None = None
    cached_prompt_tokens: int | None = None
    cache_write_tokens: int | None = None
    cpu_s: float | None = None
    prefill_cpu_s: float | None = None
    decode_batch: int | None = None
    decode_steps: int | None = None  # decode steps its batch ran (the longest answer's tokens less the first)
    decode_policy: int | None = None
    timed_under: dict | None = None
    timings_replayed: bool = False  # served from the response cache with timings measured under another setup
