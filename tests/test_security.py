"""Security: no code execution from data or model output, no remote code, secrets never written,
file names from data never leave their folder.

- The source scan reads every Python file of the project (not .venv) with the tokenizer, so a
  mention inside a comment or a string (a docstring saying "never `eval`") is allowed, while the
  same text as code fails, unless it is in ALLOWED with a reason. Calls whose safety depends on
  their arguments (`torch.load`, `yaml.load`) are checked on the syntax tree.
- Secrets: real `python -m experiments.run` processes with API keys in the environment, and one
  passed on the command line; no file or path under the run folder, and no byte of stdout or
  stderr, may hold them.
"""

from __future__ import annotations

import ast
import http.server
import io
import json
import logging
import os
import re
import subprocess
import sys
import threading
import tokenize
from pathlib import Path

import pytest

from experiments import redact
from tests.conftest import ROOT

# ---------------------------------------------------------------- source scan
SCANNED = ("eval", "rag", "longctx", "llm", "experiments", "perf", "tests", "testsupport")

# name -> pattern; a hit in code (not a comment or string) fails the scan
FORBIDDEN = {
    "eval": r"(?<![\w.])eval\s*\(",
    "exec": r"(?<![\w.])exec\s*\(",
    "compile": r"(?<![\w.])compile\s*\([^)]*['\"]exec['\"]",
    "__import__": r"__import__\s*\(",
    "pickle": r"\b(?:c?[Pp]ickle|cloudpickle|dill|shelve|marshal)\b",
    "read_pickle": r"\bread_pickle\s*\(",
    "joblib.load": r"\bjoblib\.load\s*\(",
    "trust_remote_code=True": r"trust_remote_code\s*=\s*True\b",
    "allow_pickle=True": r"allow_pickle\s*=\s*True\b",
    "shell=True": r"\bshell\s*=\s*True\b",
    "os.system": r"\bos\.(?:system|popen|exec\w*|spawn\w*)\s*\(",
    "yaml unsafe": (r"\byaml\.(?:unsafe_load|full_load|load_all)\s*\("
                    r"|\b(?:Unsafe|Full)?Loader\s*=\s*yaml\.(?:Unsafe|Full)?Loader\b"),
}
# (path relative to the repository, pattern name) -> why this code use is fine
ALLOWED: dict[tuple[str, str], str] = {}


def _source_files() -> list[Path]:
    files = []
    for top in SCANNED:
        files += [p for p in (ROOT / top).rglob("*.py") if ".venv" not in p.parts]
    return sorted(files)


def _mention_ranges(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions of comments and string literals."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING) or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            out.append((tok.start, tok.end))
    return out


def _code_hits(source: str) -> list[tuple[int, str, str]]:
    """(line, pattern name, line text) for every forbidden pattern found in code."""
    lines = source.splitlines()
    ranges = _mention_ranges(source)
    hits = []
    for lineno, line in enumerate(lines, 1):
        for name, pattern in FORBIDDEN.items():
            for m in re.finditer(pattern, line):
                pos = (lineno, m.start())
                if not any(a <= pos < b for a, b in ranges):
                    hits.append((lineno, name, line.strip()))
    return hits


def _call_name(node: ast.Call) -> str:
    parts = []
    f = node.func
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
    return ".".join(reversed(parts))


def _unsafe_calls(source: str) -> list[tuple[int, str]]:
    """`torch.load` without weights_only=True, `yaml.load` without a safe loader."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        kw = {k.arg: k.value for k in node.keywords}
        if name == "torch.load" or name.endswith(".torch.load"):
            ok = isinstance(kw.get("weights_only"), ast.Constant) and kw["weights_only"].value is True
            if not ok:
                out.append((node.lineno, "torch.load without weights_only=True"))
        if name == "yaml.load":
            loader = kw.get("Loader", node.args[1] if len(node.args) > 1 else None)
            if loader is None or "Safe" not in ast.unparse(loader):
                out.append((node.lineno, "yaml.load without SafeLoader"))
    return out


def test_scanner_finds_code_and_ignores_mentions():
    """The scanner itself: code uses are caught, docstring and comment mentions are not."""
    bad = (
        '"""Never eval( or pickle data; torch.load(x) is banned."""\n'
        "import pickle  # pickle is banned\n"
        "x = eval(data)\n"
        "model.eval()\n"
        "y = ast.literal_eval(data)\n"
        "subprocess.run(cmd, shell=True)\n"
        "torch.load(path)\n"
        "torch.load(path, weights_only=True)\n"
        "yaml.load(text)\n"
        "yaml.load(text, Loader=yaml.SafeLoader)\n"
        "s = 'exec(x)'\n"
        "AutoModel.from_pretrained(p, trust_remote_code=True)\n"
    )
    hits = {(line, name) for line, name, _ in _code_hits(bad)}
    assert hits == {(2, "pickle"), (3, "eval"), (6, "shell=True"), (12, "trust_remote_code=True")}
    assert _unsafe_calls(bad) == [(7, "torch.load without weights_only=True"), (9, "yaml.load without SafeLoader")]


def test_source_has_no_code_execution_pickle_or_remote_code():
    files = _source_files()
    assert len(files) > 30, "the scan must see the project's source"
    problems = []
    for path in files:
        rel = str(path.relative_to(ROOT))
        source = path.read_text(encoding="utf-8")
        for lineno, name, text in _code_hits(source):
            if (rel, name) not in ALLOWED:
                problems.append(f"{rel}:{lineno}: {name}: {text}")
        for lineno, what in _unsafe_calls(source):
            problems.append(f"{rel}:{lineno}: {what}")
    assert not problems, ("unsafe code (add to ALLOWED with a reason only if it cannot touch data):\n"
                          + "\n".join(problems))


def test_configs_never_enable_remote_code():
    hits = [str(p.relative_to(ROOT)) for p in (ROOT / "conf").rglob("*.yaml")
            if re.search(r"trust_remote_code\s*:\s*(true|True|yes)", p.read_text(encoding="utf-8"))]
    assert not hits


def test_datasets_are_loaded_only_through_the_no_remote_code_helper():
    """Every `load_dataset(` call sits in one helper, which passes trust_remote_code=False."""
    users = []
    for path in _source_files():
        if path.parts[len(ROOT.parts)] == "tests":
            continue
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and _call_name(node).split(".")[-1] == "load_dataset":
                users.append((str(path.relative_to(ROOT)), ast.unparse(node)))
    for rel, call in users:
        assert rel == "eval/data_files.py", (f"{rel}: {call}: "
                                                    "load datasets through eval.data_files.hub_records")
    if users:
        source = (ROOT / "eval/data_files.py").read_text(encoding="utf-8")
        assert 'kwargs["trust_remote_code"] = False' in source


# ---------------------------------------------------------------- redaction (unit)
SECRET_KEYS = ["api_key", "generator.api_key", "+generator.api_key", "openai_api_key", "OPENAI_API_KEY", "hf_token",
               "access_token", "client_secret", "password", "Authorization", "apiKey", "secret_key",
               "aws_secret_access_key"]
NOT_SECRET_KEYS = ["max_new_tokens", "prompt_tokens", "completion_tokens", "margin_tokens", "tokenizer", "api_key_env",
                   "key", "cache_key", "token_file", "context_tokens_full", "model", "question", "keyword_recall"]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_credential_keys_are_secret(key):
    assert redact.is_secret_key(key)


@pytest.mark.parametrize("key", NOT_SECRET_KEYS)
def test_counts_and_key_names_are_not_secret(key):
    assert not redact.is_secret_key(key)


def test_redact_nested_values_env_secrets_and_overrides(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "env-secret-123456")
    monkeypatch.setenv("SOME_FLAG", "env-secret-not")  # not a secret-like name
    monkeypatch.setenv("TINY_TOKEN", "1")  # too short to be a secret
    obj = {"generator": {"api_key": "cfg-secret-abc", "api_key_env": "MY_SERVICE_API_KEY", "max_new_tokens": 24,
                         "headers": {"Authorization": "Bearer cfg-secret-abc"}},
           "notes": ["calling with env-secret-123456", "+generator.api_key=cli-secret-xyz", "arm=rag", "1 2 3"],
           "override_dirname": "+generator.api_key=cli-secret-xyz,arm=rag", "empty_token": None}
    out = redact.redact(obj)
    text = json.dumps(out)
    for s in ("env-secret-123456", "cfg-secret-abc", "cli-secret-xyz"):
        assert s not in text
    assert out["generator"]["api_key_env"] == "MY_SERVICE_API_KEY" and out["generator"]["max_new_tokens"] == 24
    assert out["notes"][2:] == ["arm=rag", "1 2 3"] and out["empty_token"] is None
    assert "env-secret-not" in redact.redact_text("x env-secret-not y")
    assert obj["generator"]["api_key"] == "cfg-secret-abc", "redact returns a copy"


def test_redact_text_forms():
    text = ('api_key: sk-aaaa1111\nmax_new_tokens: 24\n"hf_token": "hf_bbbb2222"\nAuthorization: Bearer cccc3333\n'
            "generator.api_key=dddd4444 arm=rag\napi_key_env: OPENAI_API_KEY\napi_key: ${oc.env:OPENAI_API_KEY}\n")
    out = redact.redact_text(text)
    for s in ("sk-aaaa1111", "hf_bbbb2222", "cccc3333", "dddd4444"):
        assert s not in out
    assert "max_new_tokens: 24" in out and "arm=rag" in out and "api_key_env: OPENAI_API_KEY" in out
    assert "${oc.env:OPENAI_API_KEY}" in out, "an interpolation names where the key comes from: kept"


def test_redacting_stream_masks_a_secret_split_over_writes():
    sink = io.StringIO()
    stream = redact.RedactingStream(sink, {"split-secret-42"})
    stream.write("error: bad key split-sec")
    stream.write("ret-42 given\nnext line")
    stream.flush()
    assert "split-secret-42" not in sink.getvalue() and sink.getvalue().endswith("next line")
    assert redact.MASK in sink.getvalue()


def test_log_filter_masks_messages_args_and_tracebacks(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_API_KEY", "env-secret-for-logs")
    logger = logging.getLogger("test_security.isolated")
    logger.propagate = False
    log_file = tmp_path / "run.log"
    stream = io.StringIO()
    handlers = [logging.FileHandler(log_file), logging.StreamHandler(stream)]
    for h in handlers:
        h.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        logger.addHandler(h)
    try:
        flt = redact.install_log_filter({"extra-secret-77"}, logger=logger)
        assert redact.install_log_filter(logger=logger) is flt and all(h.filters.count(flt) == 1 for h in handlers)
        child = logging.getLogger("test_security.isolated.child")
        child.warning("calling with key %s and %s", "env-secret-for-logs", {"api_key": "dict-secret-99"})
        try:
            raise RuntimeError("401 Unauthorized for key extra-secret-77")
        except RuntimeError:
            logger.exception("request failed")
    finally:
        for h in handlers:
            logger.removeHandler(h)
            h.close()
    for text in (log_file.read_text(), stream.getvalue()):
        assert "calling with key" in text and "Traceback" in text and "RuntimeError" in text
        for s in ("env-secret-for-logs", "dict-secret-99", "extra-secret-77"):
            assert s not in text


def test_secret_overrides_are_found_by_key_without_their_values():
    argv = ["arm=rag", "+generator.api_key=sk-x1", "generator.api_key_env=MY_KEY", "hydra.run.dir=/tmp/x",
            "++judge.token=abc", "rag.top_k=3"]
    assert redact.secret_overrides(argv) == ["+generator.api_key", "++judge.token"]
    nested = ["++generator.extra_body={api_key:sk-nested-1}", "generator.extra_body={'top_k': 3, \"token\": \"t-99x\"}",
              "generator.extra_body={top_k:3}", "+x={api_key_env:MY_KEY}"]
    assert redact.secret_overrides(nested) == ["++generator.extra_body.api_key", "generator.extra_body.token"]


def test_named_env_secrets_follow_the_variables_the_config_names():
    cfg = {"generator": {"api_key_env": "MY_LLM_CREDS"}, "retriever": [{"key_env": "EMB"}],
           "judge": {"api_key_env": None}}
    environ = {"MY_LLM_CREDS": "creds-value-123", "EMB": "short", "OTHER": "x" * 20}
    assert redact.named_env_secrets(cfg, environ) == {"creds-value-123"}


# ---------------------------------------------------------------- real runs
ENV_SECRET = "sk-test-SECRET-env-4f1c9a"
HF_SECRET = "hf_testSECRETtoken8b2d"
CLI_SECRET = "sk-test-SECRET-cli-77e0b3"
TINY = ["benchmark.languages=[en]", "benchmark.levels=[300]", "benchmark.questions_per_haystack=2",
        "run.progress=false"]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OPENAI_API_KEY": ENV_SECRET,
            "HF_TOKEN": HF_SECRET, "JUDGE_API_KEY": ENV_SECRET, "RAGLC_CACHE_DIR": str(tmp_path / "cache")}


def _leaks(root: Path, secrets: list[str]) -> list[str]:
    found = []
    for p in root.rglob("*"):
        for s in secrets:
            if s in p.name:
                found.append(f"path {p}")
        if p.is_file():
            data = p.read_bytes()
            found += [f"{p.relative_to(root)} holds {s[:12]}..." for s in secrets if s.encode() in data]
    return found


def test_env_secrets_never_reach_run_files(tmp_path, tiny_llm):
    """Keys in the environment only: a complete run (every sample skipped: the 60-token window
    cannot hold a prompt, so no model weights load; SmolLM2's tokenizer from the tiny Llama's folder, not its
    GGUF file) writes no byte of them."""
    run_dir = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "experiments.run", *TINY, "generator.context_window=60",
                          f"generator.model={tiny_llm}", f"hydra.run.dir={run_dir}"], cwd=ROOT, env=_env(tmp_path),
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    written = {p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file()}
    assert {"records.jsonl", "metrics.json", ".hydra/config.yaml", ".hydra/overrides.yaml"} <= written
    assert not _leaks(tmp_path, [ENV_SECRET, HF_SECRET])
    assert ENV_SECRET not in res.stderr + res.stdout and HF_SECRET not in res.stderr + res.stdout


def test_cli_secret_never_reaches_run_files_dir_names_or_stderr(tmp_path, tiny_llm):
    """A key passed as an override, default run folder (its name is built from the overrides):
    the run refuses it (exit 2, one `error:` line) or runs with it masked; either way no file,
    folder name, stdout or stderr holds it."""
    res = subprocess.run([sys.executable, "-m", "experiments.run", f"+generator.api_key={CLI_SECRET}", *TINY,
                          "generator.context_window=60", f"generator.model={tiny_llm}"], cwd=tmp_path,
                         env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert res.returncode in (0, 2), res.stderr[-2000:]
    if res.returncode == 2:
        assert "error:" in res.stderr and "environment" in res.stderr
    else:
        assert list(tmp_path.glob("outputs/runs/*/records.jsonl"))
    assert not _leaks(tmp_path, [CLI_SECRET, ENV_SECRET, HF_SECRET])
    assert CLI_SECRET not in res.stderr + res.stdout


def test_a_secret_inside_a_dict_override_is_refused_before_hydra_runs(tmp_path):
    """`++generator.extra_body={api_key:...}` in the default run folder: refused (exit 2), and no folder
    name, file or stderr holds it (Hydra would build the folder name from the overrides)."""
    res = subprocess.run([sys.executable, "-m", "experiments.run", f"++generator.extra_body={{api_key:{CLI_SECRET}}}",
                          *TINY], cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "generator.extra_body.api_key" in res.stderr, res.stderr[-2000:]
    assert not (tmp_path / "outputs").exists() and CLI_SECRET not in res.stderr + res.stdout


class _EchoingEndpoint(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that answers 401 quoting the Authorization header it got (some
    proxies do): the client's error, and so a failed record's reason, then holds the key."""

    def do_POST(self):  # http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"error": {"message": f"Invalid key: {self.headers.get('Authorization')}",
                                     "type": "invalid_request_error"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_key_from_a_custom_named_variable_never_reaches_records_or_logs(tmp_path, tiny_llm):
    """`generator.api_key_env=MY_LLM_CREDS` (a name no pattern knows) against an endpoint that echoes
    the key: the sample is recorded as failed with the reason, the key masked everywhere."""
    secret = "custom-named-SECRET-5e7d21"
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoingEndpoint)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    run_dir = tmp_path / "run"
    try:
        res = subprocess.run(
            [sys.executable, "-m", "experiments.run", *TINY, "benchmark.questions_per_haystack=1", "generator=openai",
             "generator.model=gpt-4o-mini", f"generator.tokenizer={tiny_llm}", "generator.context_window=8192",
             f"generator.base_url=http://127.0.0.1:{srv.server_address[1]}/v1", "generator.api_key_env=MY_LLM_CREDS",
             "generator.max_retries=0", f"hydra.run.dir={run_dir}"],
            cwd=ROOT, env={**_env(tmp_path), "MY_LLM_CREDS": secret}, capture_output=True, text=True, timeout=300)
    finally:
        srv.shutdown()
    assert res.returncode == 0, res.stderr[-2000:]
    (rec,) = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    assert rec["status"] == "failed" and "401" in rec["reason"] and redact.MASK in rec["reason"], rec
    assert json.loads((run_dir / "metrics.json").read_text())["n_failed"] == 1
    assert not _leaks(tmp_path, [secret]) and secret not in res.stderr + res.stdout


def test_hydra_error_about_a_secret_override_does_not_echo_it(tmp_path):
    res = subprocess.run([sys.executable, "-m", "experiments.run", f"generator.api_key={CLI_SECRET}",
                          f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT, env=_env(tmp_path), capture_output=True,
                         text=True, timeout=120)
    assert res.returncode != 0
    assert CLI_SECRET not in res.stderr + res.stdout
    assert not _leaks(tmp_path, [CLI_SECRET])


def test_job_scrubs_what_hydra_saved(tmp_path):
    """`python -m experiments.run` refuses credential-named overrides, but an environment secret can
    still reach Hydra's files under an innocent key (pasted as a note, say). The job scrubs the
    files Hydra saved before doing anything else (here it stops at once: no sample selected)."""
    run_dir = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "experiments.run", f"+notes.pasted={ENV_SECRET}",
                          "benchmark.limit=0", f"hydra.run.dir={run_dir}"],
                         cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "no samples selected" in res.stderr
    assert not _leaks(run_dir, [ENV_SECRET])
    assert ENV_SECRET not in res.stderr + res.stdout
    import yaml

    cfg = yaml.safe_load((run_dir / ".hydra" / "config.yaml").read_text())
    assert cfg["notes"]["pasted"] == redact.MASK and cfg["generator"]["model"] == "bundled:smollm2"
    assert f"+notes.pasted={redact.MASK}" in yaml.safe_load((run_dir / ".hydra" / "overrides.yaml").read_text())
    hydra_cfg = yaml.safe_load((run_dir / ".hydra" / "hydra.yaml").read_text())
    assert hydra_cfg["hydra"]["job"]["name"] == "run", "the rewritten files are still valid YAML"
    assert redact.scrub_run_dir(run_dir) == [], "scrubbing twice changes nothing"


def test_scrub_run_dir_masks_credential_keys(tmp_path):
    hydra_dir = tmp_path / ".hydra"
    hydra_dir.mkdir()
    (hydra_dir / "config.yaml").write_text(f"generator:\n  api_key: {CLI_SECRET}\n  model: m\n")
    (hydra_dir / "overrides.yaml").write_text(f"- +generator.api_key={CLI_SECRET}\n")
    assert len(redact.scrub_run_dir(tmp_path)) == 2
    assert not _leaks(tmp_path, [CLI_SECRET])


# ---------------------------------------------------------------- paths from data
def test_inside_refuses_names_that_leave_the_folder(tmp_path):
    files = pytest.importorskip("eval.data_files")
    base = tmp_path / "doc"
    (base / "paper").mkdir(parents=True)
    (base / "paper" / "a.md").write_text("ok")
    (tmp_path / "secret.txt").write_text("outside")
    (base / "paper" / "link.md").symlink_to(tmp_path / "secret.txt")
    assert files.inside(base, "paper/a.md") == (base / "paper" / "a.md").resolve()
    for name in ("../secret.txt", "../../etc/passwd", "/etc/passwd", "paper/../../secret.txt", "paper/link.md",
                 "..", "paper/../../doc/../secret.txt"):
        with pytest.raises(files.DataError, match="outside"):
            files.inside(base, name)


LOONG_ITEM = {"level": 1, "set": 1, "length": 100, "type": "paper", "language": "en", "question": "Paper A",
              "instruction": "Which paper is this?", "prompt_template": "{docs}\n\n{instruction}\n\n{question}",
              "doc": ["a.md"], "answer": "A", "shuffle_doc": False, "id": "item-0"}


@pytest.mark.parametrize("doc_type, name", [
    ("paper", "../../secret.md"), ("paper", "../secret.md"), ("paper", "/etc/passwd"), ("paper", "link.md"),
    ("paper", "sub/../../../secret.md"), ("financial", "../../etc/passwd"), ("financial", "../secret"),
])
def test_loong_document_names_cannot_leave_the_document_folder(tmp_path, doc_type, name):
    """A Loong item naming a document outside `doc/` is refused, naming file, line and field;
    neither read nor silently skipped as missing."""
    pytest.importorskip("eval.benchmarks.loong")
    from eval.benchmarks import load_benchmark

    data = tmp_path / "data"
    (data / "doc" / "paper").mkdir(parents=True)
    (data / "doc" / "financial").mkdir(parents=True)
    (data / "doc" / "paper" / "a.md").write_text("# Paper A\nbody\n")
    (data / "doc" / "financial" / "2024-ACME-a.txt").write_text("ACME report\n")
    (tmp_path / "secret.md").write_text("# SECRET-OUTSIDE\n")
    (data / "secret.md").write_text("# SECRET-OUTSIDE\n")
    (data / "doc" / "paper" / "link.md").symlink_to(tmp_path / "secret.md")
    bad = {**LOONG_ITEM, "type": doc_type, "doc": [name], "id": "item-1"}
    (data / "loong.jsonl").write_text(json.dumps(LOONG_ITEM) + "\n" + json.dumps(bad) + "\n")
    try:
        result = load_benchmark({"name": "loong", "path": str(data)})
    except ValueError as err:
        assert "loong.jsonl:2" in str(err) and "doc" in str(err), str(err)
        return
    texts = [s.context for s in result.samples]
    assert not any("SECRET-OUTSIDE" in t for t in texts), "a document outside the folder was read"
    pytest.fail(f"{name!r} was not refused (samples {len(result.samples)}, skipped {result.skipped})")


def test_loong_good_item_loads(tmp_path):
    pytest.importorskip("eval.benchmarks.loong")
    from eval.benchmarks import load_benchmark

    data = tmp_path / "data"
    (data / "doc" / "paper").mkdir(parents=True)
    (data / "doc" / "paper" / "a.md").write_text("# Paper A\nbody\n")
    (data / "loong.jsonl").write_text(json.dumps(LOONG_ITEM) + "\n")
    result = load_benchmark({"name": "loong", "path": str(data)})
    assert len(result.samples) == 1 and "body" in result.samples[0].context


HOSTILE_LITERALS = [
    "__import__('os').system('touch {marker}')",
    "[{{'Q': __import__('os').system('touch {marker}'), 'A': 'a', 'S': ['x']}}]",
    "(lambda: open('{marker}', 'w'))()",
    "[" * 200_000,                       # nesting bomb
    "(" * 1000 + ")" * 1000,
    "9" * 5000,                          # integer parsing limit
    "[" + "1," * 1_000_000 + "]",        # a million items, not dicts
    "{{'Q': 'q'}}.__class__",
]


@pytest.mark.parametrize("payload", HOSTILE_LITERALS, ids=range(len(HOSTILE_LITERALS)))
def test_loogle_qa_pairs_are_parsed_as_literals_never_run(tmp_path, payload):
    """LooGLE's original files hold `qa_pairs` as a Python literal string (the release `eval`s it):
    here code in it is never run, and every hostile value is refused naming file, line and field."""
    pytest.importorskip("eval.benchmarks.loogle")
    from eval.benchmarks import load_benchmark

    marker = tmp_path / "pwned"
    doc = "Alice founded the town of Quourvylt in 1850. " * 20
    row = {"input": doc, "title": "T", "output": "none", "qa_pairs": payload.format(marker=marker)}
    path = tmp_path / "shortdep_qa.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError) as err:
        load_benchmark({"name": "loogle", "path": str(path)})
    assert "shortdep_qa.jsonl:1" in str(err.value) and "qa_pairs" in str(err.value), str(err.value)
    assert len(str(err.value)) < 2000
    assert not marker.exists(), "code from the data ran"
