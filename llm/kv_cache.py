"""The KV cache of the prefix-reuse decoder: a layer written in place, a fixed attention width, steady kernels.

Decoding several questions over one shared document prefix (llm/transformers_backend.py) keeps one cache
of the document. Transformers' `DynamicLayer` concatenates at every step, copying the whole cache; the
`GrowingLayer` here writes into a buffer allocated once, and `fixed_width` hands attention the whole buffer
so a kernel that plans per shape plans once per document. Every helper falls back to plain transformers
behaviour (correct, only slower) where this transformers version's cache is not what it expects.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache, lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor


@cache
def cache_kwarg(forward) -> str:
    """The name a model's forward takes its KV cache by: `cache` from transformers 5 (which still accepts
    `past_key_values` with a warning until 5.40), `past_key_values` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"


def cache_arg(model, cache) -> dict:
    """`{name: cache}` for `model(...)` and `model.generate(...)`, named as this transformers version wants."""
    return {cache_kwarg(type(model).forward): cache}


CAPACITY_STEP = 256  # a GrowingLayer's capacity is a multiple of this: documents of like length share its shape


def grow_in_place(cache, room: int) -> bool:
    """Make the full-attention layers of an empty `DynamicCache` `GrowingLayer`s keeping at least `room` tokens
    free after their first update. False (the cache left as it is: correct, only slower) where this transformers
    version's cache has no `layers` of plain `DynamicLayer`s to replace."""
    try:
        from transformers.cache_utils import DynamicLayer
    except ImportError:
        return False
    layers = getattr(cache, "layers", None)
    if not isinstance(layers, list) or not layers or any(type(layer) is not DynamicLayer for layer in layers):
        return False
    if any(getattr(layer, "is_initialized", False) for layer in layers):
        return False  # only an empty cache: its layers are replaced before they hold anything
    grower = growing_layer_class()
    for i in range(len(layers)):
        layers[i] = grower(room)
    return True


def growing_layers(cache) -> list:
    """The cache's layers when every one is a filled `GrowingLayer` (else [])."""
    layers = list(getattr(cache, "layers", None) or [])
    grower = growing_layer_class()
    ok = layers and all(isinstance(layer, grower) and layer._k is not None for layer in layers)
    return layers if ok else []


@contextmanager
def fixed_width(cache, need: int) -> Iterator[int | None]:
    """While inside, a cache of `GrowingLayer`s (with room for `need` tokens, grown first if short) hands
    attention its whole buffer, so the key length stays the buffer's capacity, step after step; yields that
    width (what an attention mask must span), or None for any other cache (the key length grows as usual)."""
    layers = growing_layers(cache)
    if not layers:
        yield None
        return
    for layer in layers:
        layer.reserve(need)
        layer.fixed = True
    try:
        yield int(layers[0]._k.shape[-2])
    finally:
        for layer in layers:
            layer.fixed = False


@lru_cache(maxsize=1)
def growing_layer_class():
    """`GrowingLayer`, built on this transformers version's `DynamicLayer` (imported only when used)."""
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        """A `DynamicLayer` that writes into a buffer allocated once (zeroed, at least `room` tokens longer than
        its first update, rounded up to CAPACITY_STEP), instead of concatenating, which copies the whole cache at
        every step (57% of the GPU time of a decode step over a 52k-token prefix on an H200; written in place, the
        4-question step took 25 ms instead of 57). `keys` / `values` are views of the filled part, so everything
        `DynamicLayer` reads stays true; `crop` only moves the end, so the prefix written first is never copied or
        overwritten. With `fixed` set (`fixed_width`), `update` hands attention the whole buffer: the key length
        then stays the capacity, so a kernel that plans per shape (cuDNN's attention) plans once per document, not
        once per step (the columns past the filled end hold zeros or old tokens, which the caller's mask blocks).
        Past its capacity it grows (doubling), as a plain layer would."""

        def __init__(self, room: int):
            super().__init__()
            self.room = int(room)
            self.fixed = False
            self._k: Tensor | None = None
            self._v: Tensor | None = None
            self._n = 0

        def reserve(self, size: int) -> None:
            """Make the buffer hold at least `size` tokens (a new zeroed buffer, the filled part copied)."""
            old_k, old_v = self._k, self._v
            if old_k is None or old_v is None:
                raise RuntimeError("GrowingLayer.reserve before the first update: there is no buffer to grow")
            if size <= old_k.shape[-2]:
                return
            size = -(-int(size) // CAPACITY_STEP) * CAPACITY_STEP
            k = old_k.new_zeros((*old_k.shape[:-2], size, old_k.shape[-1]))
            v = old_v.new_zeros((*old_v.shape[:-2], size, old_v.shape[-1]))
            k[..., : self._n, :].copy_(old_k[..., : self._n, :])
            v[..., : self._n, :].copy_(old_v[..., : self._n, :])
            self._k, self._v = k, v

        def update(self, key_states, value_states, *args, **kwargs):
            import torch

            n = int(key_states.shape[-2])
            end = self._n + n
            if self._k is None or self._v is None:  # both are set together
                size = -(-(end + self.room) // CAPACITY_STEP) * CAPACITY_STEP
                self._k = key_states.new_zeros((*key_states.shape[:-2], size, key_states.shape[-1]))
                self._v = value_states.new_zeros((*value_states.shape[:-2], size, value_states.shape[-1]))
                self.dtype, self.device = key_states.dtype, key_states.device
                self.is_initialized = True
            elif end > self._k.shape[-2]:
                self.reserve(max(end, 2 * self._k.shape[-2]))
            with torch.inference_mode():
                self._k[..., self._n:end, :].copy_(key_states)
                self._v[..., self._n:end, :].copy_(value_states)
            self._n = end
            self.keys, self.values = self._k[..., :end, :], self._v[..., :end, :]
            return (self._k, self._v) if self.fixed else (self.keys, self.values)

        def crop(self, max_length: int) -> None:
            if max_length < 0:
                max_length = self._n + max_length
            if self._k is None or self._v is None or self._n <= max_length:
                return
            self._n = max(0, int(max_length))
            self.keys, self.values = self._k[..., : self._n, :], self._v[..., : self._n, :]

        def batch_repeat_interleave(self, repeats: int) -> None:
            raise NotImplementedError("a GrowingLayer holds one sequence: copy.deepcopy a plain DynamicCache")

    return GrowingLayer


@contextmanager
def steady_attention(device) -> Iterator[None]:
    """On CUDA, decode with PyTorch's flash / memory-efficient attention kernels, not cuDNN's: cuDNN builds a plan
    for every new key length, and a decode step adds a key every step (measured on an H200, torch 2.11, 32 tokens
    after a 51k-token prompt: 1.9-2.4 s with cuDNN, 0.5-0.75 s without, the prefill 20% slower without). Nothing
    elsewhere (CPU, or a torch without `torch.nn.attention`)."""
    if not str(getattr(device, "type", device)).startswith("cuda"):
        yield
        return
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        yield
        return
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        yield
