"""How long the question viewer (questions.html) takes to open in headless Chromium for a sweep of 2,000 questions
x 5 configs (goal: under 2 s), and how large its files are (goal: the page under 15 MB at any size; 20,000
questions x 5 configs is a report over 100k records).

    python perf/viewer_open.py [--questions 2000] [--repeats 3]

Builds the viewer's rows the report's way (experiments.report.questions.rows over in-memory runs: long context,
three RAG configs and the oracle retriever, every record with its chunk texts, dropped chunks, evidence quotes
and long context's window, as the runner writes them), writes the viewer as the report does (`write_viewer`:
questions.html, and its parts under questions_data/ when they do not fit one file), then opens it in headless
Chromium, unfiltered and filtered by URL hash (`#cell=only_rag`). Figures: the page's own clock from navigation
start to its first render (`performance.now()` when the script has read the index, filtered, read the parts the
first 40 questions are in and drawn them), the DOM's element count then, the page's size, the part files' count,
total and largest size, the wall time of a 1400-px screenshot of the page minus a blank page's (browser start and
exit left out), and the machine's load average (a shared machine's figures rise with it).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import common  # sets up the path

from experiments.report.diagnostics import diagnose
from experiments.report.page.questions_html import DATA_DIR, QUESTIONS_FILE, write_viewer
from experiments.report.questions.rows import question_rows
from experiments.report.runs import Run

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


def open_once(browser: str, url: str) -> dict[str, int]:
    """The page's own figures once it has drawn (read from the DOM it dumps)."""
    res = subprocess.run([browser, *BROWSER, "--dump-dom", url], capture_output=True, text=True, timeout=300)
    return {k: int(v) for k, v in re.findall(r'data-(ready-ms|nodes|shown)="(\d+)"', res.stdout)}


def screenshot_wall(browser: str, url: str, out: Path) -> float:
    """Seconds from starting the browser to its screenshot of the loaded page at 1400 px (then it exits)."""
    t0 = time.perf_counter()
    subprocess.run([browser, *BROWSER, "--window-size=1400,900", f"--screenshot={out}", url],
                   capture_output=True, text=True, timeout=300)
    return time.perf_counter() - t0


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
        data = question_rows(runs, diagnose(runs, 0.5, 1.0).agreements, 0.5, 1.0)
        said = write_viewer(data, Path(tmp))
        build_s = time.perf_counter() - t0
        page, blank = Path(tmp) / QUESTIONS_FILE, Path(tmp) / "blank.html"
        parts = sorted((Path(tmp) / DATA_DIR).glob("part-*.js"))
        blank.write_text("<!DOCTYPE html><html><body>blank</body></html>", encoding="utf-8")
        blank_walls, walls, ready, ready_filtered, nodes, shown = [], [], [], [], [], []
        shot = Path(tmp) / "shot.png"
        for _ in range(args.repeats):
            found = open_once(browser, page.as_uri())
            ready.append(found["ready-ms"])
            nodes.append(found["nodes"])
            found_f = open_once(browser, page.as_uri() + "#cell=only_rag")
            ready_filtered.append(found_f["ready-ms"])
            shown.append(found_f["shown"])
            blank_walls.append(screenshot_wall(browser, blank.as_uri(), shot))
            walls.append(screenshot_wall(browser, page.as_uri(), shot))
        common.emit({"questions": len(data["questions"]), "configs": len(data["configs"]),
                     "answers": sum(len(q["a"]) for q in data["questions"]),
                     "html_bytes": page.stat().st_size, "rows_and_html_s": round(build_s, 2),
                     "held": said["held"], "part_files": len(parts),
                     "parts_bytes": sum(p.stat().st_size for p in parts),
                     "part_max_bytes": max((p.stat().st_size for p in parts), default=0),
                     "open_ms_median": statistics.median(ready), "open_ms_max": max(ready),
                     "open_filtered_only_rag_ms_median": statistics.median(ready_filtered),
                     "only_rag_questions": shown[0], "dom_elements_first_screen": max(nodes),
                     "screenshot_wall_s_minus_blank_median": round(statistics.median(walls)
                                                                    - statistics.median(blank_walls), 2),
                     "load_average_1min": round(os.getloadavg()[0], 1)})


if __name__ == "__main__":
    main()
