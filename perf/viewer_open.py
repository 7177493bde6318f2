"""How long the question viewer (questions.html) takes to open in headless Chromium for a sweep of 2,000 questions
x 5 configs (goal: under 2 s), and how large its files are (goal: the page under 15 MB at any size; 20,000
questions x 5 configs is a report over 100k records).

    python perf/viewer_open.py [--questions 2000] [--repeats 3]

Builds the viewer's rows the report's way (experiments.report.questions.rows over in-memory runs: long context,
three RAG configs and the oracle retriever, every record with its chunk texts, dropped chunks, evidence quotes
and long context's window, as the runner writes them), writes the viewer as the report does (`write_viewer`:
questions.html, and its parts under questions_data/ when they do not fit one file), then opens it in headless
Chromium (driven over its DevTools pipe, a fresh browser for each opening): unfiltered, filtered by URL hash
(`#cell=only_rag`) and searched (`#q=I do not know`, a prediction: every part read). Figures: the page's own clock
from navigation start to its first render (`performance.now()` when the script has read the index, filtered, read
the parts the first 40 questions are in and drawn them), the wall seconds from the navigation to seeing it drawn,
the DOM's element count then, the page's size, the part files' count, total and largest size, the search file's
size, and the machine's load average (a shared machine's figures rise with it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import common  # sets up the path

from experiments.report.agreement import agreements
from experiments.report.page.questions_html import DATA_DIR, QUESTIONS_FILE, write_viewer
from experiments.report.questions.rows import question_rows
from experiments.report.runs import Run

SEARCH = "I do not know"  # a prediction: a search reads every part
WORDS = ("alpha beta gamma delta river stone ledger vault harbor signal copper orchard meadow lantern quarry "
         "beacon summit glacier canyon harvest").split()


def _text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(WORDS))
    return " ".join(out)


def make_runs(n_questions: int, seed: int = 0) -> list[Run]:
    rng = random.Random(seed)
    contexts = [_text(rng, 6000) for _ in range(n_questions // 4 + 1)]  # 4 questions per document
    configs = [("longctx", {"arm": "longctx"}), ("bm25", {"top_k": 4, "chunk_size": 128}),
               ("bm25", {"top_k": 8, "chunk_size": 64}), ("minilm", {"top_k": 4, "chunk_size": 128}),
               ("oracle", {"top_k": 4, "chunk_size": 128})]
    runs = []
    for c, (name, knobs) in enumerate(configs):
        recs = []
        for i in range(n_questions):
            ctx = contexts[i // 4]
            ev = rng.randrange(200, len(ctx) - 300)
            base = {"id": f"q{i:05d}", "benchmark": "sim", "task": "kv", "language": "en",
                    "length_level": ("1k", "4k", "16k")[i % 3], "group": f"doc{i // 4}", "answers": ["vault 42"],
                    "question": f"What is the code of {rng.choice(WORDS)} {i}?", "status": "ok",
                    "prediction": rng.choice(["vault 42", "I do not know", "river 7"]),
                    "prompt_tokens": 5000 if name == "longctx" else 600, "completion_tokens": 9,
                    "latency_s": 1.2, "cost_usd": 1e-4, "finish_reason": "stop",
                    "evidence_quotes": [{"start": ev, "end": ev + 60, "text": ctx[ev:ev + 60]}],
                    "context_chars": len(ctx)}
            base["score"] = float(base["prediction"] == "vault 42")
            if name == "longctx":
                base.update(kept_spans=[[0, len(ctx)]], truncated=False, evidence_retained=1.0,
                            evidence_window={"start": ev - 400, "end": ev + 460, "text": ctx[ev - 400:ev + 460]})
            else:
                size = 4 * knobs["chunk_size"]  # characters: about 4 per token
                # a chunker cuts a document the same way for every question and every config of one chunk size
                grid = list(range(0, len(ctx) - size, size))
                starts = [ev // size * size] + rng.sample(grid, knobs["top_k"] - 1)
                chunks = [{"chunk": s // size, "start": s, "end": s + size, "rank": r + 1, "score": 1.0,
                           "text": ctx[s:s + size]} for r, s in enumerate(starts)]
                base.update(retrieved=chunks[:-1], dropped=chunks[-1:], evidence_in_prompt=1.0,
                            evidence_in_top_k=1.0, first_evidence_rank=1)
            recs.append({**base, "arm": "longctx" if name == "longctx" else "rag"})
        knob = {"arm": "longctx"} if name == "longctx" else {"arm": "rag", "retriever": name, "order": "document",
                                                                **knobs}
        runs.append(Run(Path(f"/sim/{c}"), {"knobs": {**knob, "benchmark": "sim"}, "config_hash": f"h{c}"}, recs))
    return runs


BROWSER = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]


class Browser:
    """Headless Chromium driven over its DevTools pipe (fd 3 in, fd 4 out: no websocket, no network), so the page is
    read when its script says it has drawn, however long after the load event that is (the viewer reads its parts
    asynchronously; `--dump-dom` reads the page at the load event)."""

    def __init__(self, binary: str):
        to_browser, self._send = os.pipe()
        self._recv, from_browser = os.pipe()

        def fds() -> None:  # Chromium reads fd 3 and writes fd 4 (kept open: pass_fds names them)
            ours = os.dup(to_browser), os.dup(from_browser)
            os.dup2(ours[0], 3)
            os.dup2(ours[1], 4)

        self.proc = subprocess.Popen([binary, *BROWSER, "--remote-debugging-pipe", "about:blank"], preexec_fn=fds,
                                     pass_fds=(3, 4, to_browser, from_browser), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._id = b"", 0
        target = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)["sessionId"]

    def call(self, method: str, session: str | None = None, **params) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params, **({"sessionId": session} if session else {})}
        os.write(self._send, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._recv, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed its DevTools pipe")
                self._buffer += chunk
            line, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(line)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def page_figures(self, url: str, timeout: float = 300) -> dict[str, float]:
        """Open `url` and wait until the page says it has drawn: its own figures, and the wall seconds from the
        navigation to seeing them."""
        self.call("Page.navigate", self.session, url="about:blank")
        t0 = time.perf_counter()
        self.call("Page.navigate", self.session, url=url)
        read = ("(function (d) { return d && d.ready === '1' ? [d.readyMs, d.nodes, d.shown || ''].join(',') : ''; })"
                "(document.body && document.body.dataset)")
        while time.perf_counter() - t0 < timeout:
            got = self.call("Runtime.evaluate", self.session, expression=read, returnByValue=True)["result"]
            if got.get("value"):
                ready, nodes, shown = got["value"].split(",")
                return {"ready-ms": int(ready), "nodes": int(nodes), "shown": int(shown or 0),
                        "wall_s": time.perf_counter() - t0}
            time.sleep(0.02)
        raise TimeoutError(f"{url} did not draw within {timeout} s")

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        self.proc.wait(timeout=60)
        os.close(self._send)
        os.close(self._recv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)),
                   None)
    if browser is None:
        raise SystemExit("chromium not installed: apt-get install -y chromium")
    runs = make_runs(args.questions)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        data = question_rows(runs, agreements(runs, 0.5), 0.5, 1.0)
        said = write_viewer(data, Path(tmp))
        build_s = time.perf_counter() - t0
        page = Path(tmp) / QUESTIONS_FILE
        parts = sorted((Path(tmp) / DATA_DIR).glob("part-*.js"))
        views = {"first": "", "filtered": "#cell=only_rag", "search": "#q=" + quote(SEARCH)}
        seen: dict[str, list[dict]] = {k: [] for k in views}
        for _ in range(args.repeats):
            for name, hash_ in views.items():  # each in a fresh browser, as a reader opens a link
                chromium = Browser(browser)
                try:
                    seen[name].append(chromium.page_figures(page.as_uri() + hash_))
                finally:
                    chromium.close()
        figures = {"questions": len(data["questions"]), "configs": len(data["configs"]),
                   "answers": sum(len(q["a"]) for q in data["questions"]), "html_bytes": page.stat().st_size,
                   "rows_and_html_s": round(build_s, 2), "held": said["held"], "part_files": len(parts),
                   "parts_bytes": sum(p.stat().st_size for p in parts),
                   "part_max_bytes": max((p.stat().st_size for p in parts), default=0),
                   "search_file_bytes": sum(p.stat().st_size for p in (Path(tmp) / DATA_DIR).glob("search.js")),
                   "open_ms_median": statistics.median(f["ready-ms"] for f in seen["first"]),
                   "open_ms_max": max(f["ready-ms"] for f in seen["first"]),
                   "open_filtered_only_rag_ms_median": statistics.median(f["ready-ms"] for f in seen["filtered"]),
                   "open_search_ms_median": statistics.median(f["ready-ms"] for f in seen["search"]),
                   "only_rag_questions": seen["filtered"][0]["shown"], "search_hits": seen["search"][0]["shown"],
                   "dom_elements_first_screen": max(f["nodes"] for f in seen["first"]),
                   "load_average_1min": round(os.getloadavg()[0], 1)}
        for name in views:
            figures[f"wall_s_{name}_median"] = round(statistics.median(f["wall_s"] for f in seen[name]), 2)
        common.emit(figures)


if __name__ == "__main__":
    main()
