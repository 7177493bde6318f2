"""How loud a run is (`run.log_level`): library chatter kept at WARNING unless debugging."""

from __future__ import annotations

import logging
import os
import sys

# libraries whose INFO lines are one per request or per batch (httpx: `HTTP Request: POST ... 200 OK`; newer
# openai releases send through httpx2, which logs under its own name)
CHATTY_LOGGERS = ("bm25s", "jieba", "sentence_transformers", "faiss", "httpx", "httpx2", "httpcore", "httpcore2",
                  "openai", "urllib3")


def set_log_level(level: str) -> None:
    """`run.log_level`: `info` (default) keeps the libraries above at WARNING so their per-request lines do
    not drown the progress bars; `debug` shows everything, per-request HTTP lines included."""
    level = str(level or "info").lower()
    if level not in ("debug", "info", "warning", "error"):
        raise ValueError(f"run.log_level={level!r}; allowed: debug, info, warning, error")
    logging.getLogger().setLevel(level.upper())
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
    quiet_transformers()


def quiet_transformers() -> None:
    """transformers at ERROR and without progress bars: set now where it is loaded, else through the variables it
    reads when it is (importing it only to silence it costs a retrieval-only run seconds: it imports torch)."""
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        return
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
