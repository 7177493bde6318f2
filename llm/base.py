"""The `Generator` interface and the tokenizer view both arms use for budgeting."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal, Protocol

from llm.byte_offsets import ByteTable
from llm.prompt import Generation, Prompt


class Tokenizer(Protocol):
    def count(self, text: str) -> int: ...

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Char span of every token of `text` (no special tokens)."""
        ...


class HFTokenizer:
    """A Hugging Face fast tokenizer seen as counts and char offsets."""

    def __init__(self, tokenizer):
        self.hf = tokenizer
        self._bytes: ByteTable | None | Literal[False] = False  # False: not read yet

    def count(self, text: str) -> int:
        return len(self.hf(text, add_special_tokens=False)["input_ids"])

    def offsets(self, text: str) -> list[tuple[int, int]]:
        backend = getattr(self.hf, "backend_tokenizer", None)
        if backend is not None:  # straight from the Rust tokenizer: 20% faster on 256k tokens
            enc = backend.encode(text, add_special_tokens=False)
            ids, offsets = enc.ids, enc.offsets
        else:
            enc = self.hf(text, add_special_tokens=False, return_offsets_mapping=True)
            ids, offsets = enc["input_ids"], [tuple(o) for o in enc["offset_mapping"]]
        if self._bytes is False:
            self._bytes = ByteTable.for_tokenizer(self.hf)
        if self._bytes is None:
            return offsets
        return self._bytes.realign(text, ids, offsets)  # exact where the vocabulary dropped bytes


class Generator(ABC):
    """Prompts in, texts with usage out. Greedy unless the config says otherwise."""

    model_id: str
    context_window: int
    tokenizer: Tokenizer
    generates: bool = True  # False for the tokenizer-only generator of retrieval-only runs

    @abstractmethod
    def prompt_tokens(self, prompt: Prompt) -> int:
        """Exact number of tokens the backend will see for this prompt (chat template included)."""

    @abstractmethod
    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        ...

    def sampling_params(self) -> dict:
        """Everything besides the prompt that changes the output (part of the cache key)."""
        return {}

    # whether answering again costs only machine time (a local model): the response cache then re-times an answer
    # whose timings were measured under another setup instead of replaying them
    local: bool = False

    def timing_context(self) -> dict:
        """What an answer's timings depend on besides the prompt and sampling (backend, device, prefix reuse, batch
        policy): the response cache replays no timing measured under another (llm/cache.py)."""
        return {"backend": type(self).__name__}


def samples_of(generator: Generator) -> int:
    """How many answers per question `generator` gives (1 unless generator.samples asked for more:
    llm.factory.SampledGenerator returns them prompt after prompt)."""
    return int(getattr(generator, "samples", 1) or 1)
