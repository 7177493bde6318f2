"""Keep secrets out of everything the project writes: Hydra's saved config, logs, stderr.

API keys are read from the environment only (`generator.api_key_env` names the variable). Still, a
user may pass one on the command line (`+generator.api_key=sk-...`), and a library may put one in
an exception message. This module finds such secrets and masks them:

- **by key**: the value of any key named like a credential (`api_key`, `openai_api_key`,
  `hf_token`, `access_token`, `client_secret`, `password`, `authorization`, ...). Counts such as
  `max_new_tokens`, `tokenizer` and key *names* such as `api_key_env: OPENAI_API_KEY` are not
  secrets and are kept.
- **by value**: any occurrence of a secret found in the environment (variables named like
  `*_API_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASSWORD`, `*_ACCESS_KEY`) of at least `MIN_ENV_SECRET`
  characters, and any value found under a credential key elsewhere in the same document.

Entry points:

- `redact(obj)`: a copy of a dict / list / string with secrets masked.
- `redact_text(text)`: a string with secrets masked (also `key=value` and `key: value` forms).
- `redact_file(path)`: rewrite a text file in place (atomically) when it holds a secret.
- `scrub_run_dir(run_dir)`: `redact_file` on Hydra's `.hydra/*.yaml` (and any `multirun.yaml`)
  of a run directory; call it at job start, before anything else reads or copies them.
- `RedactingFilter` / `install_log_filter()`: a `logging.Filter` on every handler of the root
  logger (Hydra's console and `<run_dir>/<job>.log` handlers), so no log line carries a secret.
- `RedactingStream` / `protect_stderr()`: a wrapper of `sys.stderr` masking what is written there
  (Hydra's own error messages echo overrides).
- `secret_overrides(argv)`: command-line overrides that set a credential-named key, also inside
  a dict value (`generator.extra_body={api_key:...}`), so a launcher can refuse them before Hydra
  writes anything.
- `named_env_secrets(cfg)`: the values of environment variables that the config names as key
  sources (`api_key_env: MY_LLM_CREDS`), whatever the variable is called.
"""

from __future__ import annotations

import io
import logging
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from eval.storage import atomic_write_text

MASK = "<redacted>"
MIN_ENV_SECRET = 6  # shorter environment values ("1", "true") are not treated as secrets
MIN_TEXT_SECRET = 4  # shorter config values are masked under their key only, not everywhere

# Environment variable names whose values are secrets.
_ENV_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|SECRET_KEY|ACCESS_KEY|ACCESS_KEY_ID|PASSWORD|PASSWD|CREDENTIALS?|PRIVATE_KEY)$",
    re.IGNORECASE,
)
# Words that make a key a credential (after splitting the key on _ - . and camelCase).
_SECRET_WORDS = {"token", "secret", "password", "passwd", "pwd", "apikey", "credential", "credentials",
                 "authorization", "bearer", "passphrase"}
_KEY_QUALIFIERS = {"api", "access", "private", "secret", "auth", "openai", "client", "signing", "session"}
# A trailing word that says the value is a *name* or a location, not the secret itself.
_NOT_SECRET_SUFFIX = {"env", "var", "variable", "name", "path", "file", "dir", "url", "id_env", "field"}
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


def is_secret_key(key: Any) -> bool:
    """Whether a config / JSON key names a credential (`api_key`, `hf_token`, `password`, ...)."""
    if not isinstance(key, str):
        return False
    key = key.lstrip("+~")
    last = key.rsplit(".", 1)[-1]
    words = [w.lower() for w in _WORD_SPLIT.split(last) if w]
    if not words or words[-1] in _NOT_SECRET_SUFFIX:
        return False
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(w == "key" and i > 0 and words[i - 1] in _KEY_QUALIFIERS for i, w in enumerate(words))


def is_secret_env_name(name: str) -> bool:
    return bool(_ENV_NAME.search(name))


def env_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """Values of secret-named environment variables (at least MIN_ENV_SECRET characters)."""
    environ = os.environ if environ is None else environ
    return {v for k, v in environ.items() if is_secret_env_name(k) and v and len(v.strip()) >= MIN_ENV_SECRET}


def _maskable(value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, str):
        v = value.strip()
        # empty, already masked, or an interpolation naming where the secret comes from
        return bool(v) and v != MASK and not v.startswith("${")
    return isinstance(value, (int, float))


def _split_override(text: str) -> tuple[str, str] | None:
    """`key=value` (Hydra override syntax, `+`/`++`/`~` prefixes allowed) -> (key, value)."""
    m = re.fullmatch(r"\s*([+~]{0,2}[A-Za-z_][\w.\-/@]*)\s*=(.*)", text, re.DOTALL)
    return (m.group(1), m.group(2)) if m else None


def collect_secrets(obj: Any, found: set[str] | None = None) -> set[str]:
    """Values held under credential keys anywhere in `obj` (also in `key=value` strings)."""
    found = set() if found is None else found
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if is_secret_key(k) and _maskable(v) and not isinstance(v, (Mapping, list, tuple)):
                found.add(str(v).strip())
            collect_secrets(v, found)
    elif isinstance(obj, (list, tuple, set)):
        for v in obj:
            collect_secrets(v, found)
    elif isinstance(obj, str):
        kv = _split_override(obj)
        if kv and is_secret_key(kv[0]) and _maskable(kv[1]):
            found.add(kv[1].strip().strip("'\""))
    return found


# `key: value` / `key=value` / `"key": "value"` with a credential-like key: value masked in text.
_KV = re.compile(
    r"""(?P<key>["']?[+~]{0,2}[A-Za-z_][\w.\-]*["']?)(?P<sep>\s*[:=]\s*)(?P<q>["']?)(?P<value>(?:(?:Bearer|Basic|Token)\s+)?[^\s"',}\]]+)(?P=q)"""
)


def _mask_kv(match: re.Match) -> str:
    key = match.group("key").strip("'\"")
    value = match.group("value")
    if is_secret_key(key) and _maskable(value) and value not in ("null", "None", "~", "|", ">"):
        return f"{match.group('key')}{match.group('sep')}{match.group('q')}{MASK}{match.group('q')}"
    return match.group(0)


def _all_secrets(extra: Iterable[str] | None) -> list[str]:
    secrets = env_secrets() | {s for s in (extra or ()) if s}
    # longest first, so a secret containing another one is masked whole
    return sorted((s for s in secrets if len(s) >= MIN_TEXT_SECRET or s in (extra or ())), key=len, reverse=True)


def redact_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """`text` with environment secrets, the given `secrets`, and credential-keyed values masked."""
    if not text:
        return text
    for s in _all_secrets(secrets):
        if s in text:
            text = text.replace(s, MASK)
    return _KV.sub(_mask_kv, text)


def redact(obj: Any, secrets: Iterable[str] | None = None) -> Any:
    """A copy of `obj` (dicts, lists, strings, scalars) with secrets masked."""
    secrets = set(secrets or ()) | collect_secrets(obj)
    return _redact(obj, _all_secrets(secrets))


def _redact(obj: Any, secrets: list[str]) -> Any:
    if isinstance(obj, Mapping):
        return {k: (MASK if is_secret_key(k) and _maskable(v) and not isinstance(v, (Mapping, list, tuple))
                    else _redact(v, secrets)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_redact(v, secrets) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_redact(v, secrets) for v in obj)
    if isinstance(obj, str):
        kv = _split_override(obj)
        if kv and is_secret_key(kv[0]) and _maskable(kv[1]):
            return f"{kv[0]}={MASK}"
        for s in secrets:
            if s in obj:
                obj = obj.replace(s, MASK)
        return obj
    return obj


def redact_file(path: str | Path, secrets: Iterable[str] | None = None) -> bool:
    """Mask secrets in a text file, rewriting it atomically; True when it changed.

    YAML and JSON files are parsed (safely) first so that every value found under a credential key
    is masked wherever else it appears in the file too (Hydra repeats overrides in several places).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    found = set(secrets or ())
    if path.suffix in (".yaml", ".yml", ".json", ".jsonl"):
        found |= _secrets_in_structured(text, path.suffix)
    new = redact_text(text, found)
    if new == text:
        return False
    atomic_write_text(path, new, fsync=True, mode=path.stat().st_mode & 0o777)
    return True


def _secrets_in_structured(text: str, suffix: str) -> set[str]:
    import json

    docs: list[Any] = []
    try:
        if suffix in (".yaml", ".yml"):
            import yaml

            docs = list(yaml.safe_load_all(text))
        elif suffix == ".json":
            docs = [json.loads(text)]
        else:
            docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    except Exception:  # noqa: BLE001 - unparsable: text-level masking still applies
        return set()
    found: set[str] = set()
    for doc in docs:
        collect_secrets(doc, found)
    return found


def scrub_run_dir(run_dir: str | Path, secrets: Iterable[str] | None = None) -> list[Path]:
    """Mask secrets in the files Hydra saved for a run (`.hydra/*.yaml`, `multirun.yaml`).

    Call at job start, before the run writes anything else. Returns the files rewritten.
    Secrets found in any of them (an override in `overrides.yaml`, say) are masked in all.
    """
    run_dir = Path(run_dir)
    files = sorted((run_dir / ".hydra").glob("*.yaml")) + sorted(run_dir.glob("multirun.yaml"))
    parent = run_dir.parent / "multirun.yaml"  # a sweep's shared file, one level up
    if parent.exists():
        files.append(parent)
    found = set(secrets or ())
    for f in files:
        try:
            found |= _secrets_in_structured(f.read_text(encoding="utf-8"), f.suffix)
        except (OSError, UnicodeDecodeError):
            continue
    return [f for f in files if redact_file(f, found)]


def _override_secrets(arg: str) -> list[tuple[str, str]]:
    """(key, value) of each credential an override sets: `k=v` itself, or `k={..., api_key: v}` inside it."""
    kv = _split_override(arg)
    if not kv:
        return []
    if is_secret_key(kv[0]) and _maskable(kv[1]):
        return [(kv[0], kv[1].strip().strip("'\""))]
    return [(f"{kv[0]}.{m.group('key').strip(chr(39) + chr(34))}", m.group("value")) for m in _KV.finditer(kv[1])
            if is_secret_key(m.group("key").strip("'\"")) and _maskable(m.group("value"))
            and m.group("value") not in ("null", "None", "~")]


def secret_overrides(argv: Iterable[str]) -> list[str]:
    """Keys of command-line overrides that set a credential (`generator.api_key=...`), values left out."""
    return [key for arg in argv for key, _ in _override_secrets(arg)]


def named_env_secrets(cfg: Any, environ: Mapping[str, str] | None = None) -> set[str]:
    """Values of the environment variables a config names under `*_env` keys (`api_key_env: MY_CREDS`)."""
    environ = os.environ if environ is None else environ
    found: set[str] = set()
    if isinstance(cfg, Mapping):
        for k, v in cfg.items():
            if (isinstance(k, str) and k.endswith("_env") and isinstance(v, str)
                    and len(environ.get(v, "").strip()) >= MIN_ENV_SECRET):
                found.add(environ[v].strip())
            found |= named_env_secrets(v, environ)
    elif isinstance(cfg, (list, tuple)):
        for v in cfg:
            found |= named_env_secrets(v, environ)
    return found


class RedactingFilter(logging.Filter):
    """Masks secrets in log records (message, arguments, exception and stack text)."""

    def __init__(self, secrets: Iterable[str] | None = None):
        super().__init__()
        self.secrets = set(secrets or ())

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string: keep what there is
            message = str(record.msg)
        record.msg, record.args = redact_text(message, self.secrets), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text, self.secrets)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info, self.secrets)
        return True


def install_log_filter(secrets: Iterable[str] | None = None, logger: logging.Logger | None = None) -> RedactingFilter:
    """Add one `RedactingFilter` to every handler of `logger` (the root logger by default).

    Filters on handlers (not loggers) see records propagated from every module's logger. Call it
    after logging is configured (inside the Hydra task function); calling it again adds no
    duplicate.
    """
    logger = logger or logging.getLogger()
    existing = next((f for h in logger.handlers for f in h.filters if isinstance(f, RedactingFilter)), None)
    flt = existing or RedactingFilter(secrets)
    if existing is not None and secrets:
        flt.secrets |= set(secrets)
    for handler in logger.handlers:
        if flt not in handler.filters:
            handler.addFilter(flt)
    return flt


class RedactingStream(io.TextIOBase):
    """A text stream that masks secrets line by line before passing text on (for sys.stderr).

    Text is held until a newline (or `flush`) so a secret split over two writes is still masked.
    """

    def __init__(self, inner, secrets: Iterable[str] | None = None):
        self.inner, self.secrets, self._pending = inner, set(secrets or ()), ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending or "\r" in self._pending:
            cut = max(self._pending.rfind("\n"), self._pending.rfind("\r")) + 1
            done, self._pending = self._pending[:cut], self._pending[cut:]
            self.inner.write(redact_text(done, self.secrets))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.inner.write(redact_text(self._pending, self.secrets))
            self._pending = ""
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self):  # type: ignore[override]  # TextIOBase's attribute, read from the wrapped stream
        return getattr(self.inner, "encoding", "utf-8")

    def writable(self) -> bool:
        return True


def protect_stderr(argv: Iterable[str] | None = None) -> RedactingStream:
    """Replace `sys.stderr` by a `RedactingStream` masking environment secrets and the values of
    credential overrides in `argv` (default `sys.argv`). Idempotent."""
    argv = sys.argv[1:] if argv is None else list(argv)
    secrets = {value for a in argv for _, value in _override_secrets(a)}
    if isinstance(sys.stderr, RedactingStream):
        sys.stderr.secrets |= secrets
        return sys.stderr
    sys.stderr = RedactingStream(sys.stderr, secrets)
    return sys.stderr
