"""How long `benchmark=corpus` takes to parse a folder of mixed files: a first run and a cached rerun.

    python perf/corpus_parse.py [--files 1000] [--mb 50] [--dir DIR] [--workers N]

Writes `--files` files (txt, md, html, pdf and docx in equal shares; about `--mb` million characters of
text in all, sizes varying 0.5x-1.5x; a tenth of the txt/md/html files in Chinese; a quarter of the PDFs
set in matplotlib's DejaVuSans with Greek and Cyrillic words, the rest in Helvetica) into `--dir`
(reused when it holds the same build: its `.build.json` says so) or a temporary folder, then times
`eval.corpus.folder.read_folder` with an empty parse cache (`first_seconds`) and again with the filled one
(`cached_seconds`), the cache in a temporary folder. Goal (issue 24), 1,000 files of about 50 MB on 2
cores: first run under 60 s, cached rerun under 5 s. `*_cpu_seconds` (this process and its parsing
processes) and the load average say how much a busy machine slowed the wall times. The last line is
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import tempfile
import textwrap
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import common  # sets up the path

from eval.corpus.cache import FILE_NAME, ParsedDocumentCache
from eval.corpus.folder import default_workers, read_folder

KINDS = ("txt", "md", "html", "pdf", "docx")
WORDS = ("report revenue region service warranty delivery customer contract invoice payment supplier quarter "
         "growth margin policy claim refund shipment order account budget forecast audit risk board meeting "
         "annual review product market price volume team project deadline release support hotline office").split()
FOREIGN = "naïve café Ελλάδα Москва déjà Αθήνα Санкт-Петербург".split()
HANZI = ("公司总部位于杭州年度会议在十月举行收入增长客户服务合同发票付款供"
         "应商季度利润政策退款订单账户预算审计风险董事会产品市场价格团队项目")


def paragraphs(rng: random.Random, chars: int, chinese: bool, foreign: bool) -> list[str]:
    """About `chars` characters of sentences in paragraphs of 4-8 sentences."""
    out, size = [], 0
    while size < chars:
        sentences = []
        for _ in range(rng.randint(4, 8)):
            if chinese:
                sentences.append("".join(rng.choice(HANZI) for _ in range(rng.randint(12, 30))) + "。")
            else:
                pool = WORDS + FOREIGN if foreign else WORDS
                words = [rng.choice(pool) for _ in range(rng.randint(8, 18))]
                sentences.append(" ".join(words).capitalize() + ".")
        text = ("" if chinese else " ").join(sentences)
        out.append(text)
        size += len(text) + 2
    return out


def _pdf(path: Path, paras: list[str], ttf: bool) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(False)
    if ttf:
        import matplotlib

        pdf.add_font("DejaVu", fname=str(Path(matplotlib.get_data_path()) / "fonts/ttf/DejaVuSans.ttf"))
        pdf.set_font("DejaVu", size=9)
    else:
        pdf.set_font("Helvetica", size=9)
    lines = [line for p in paras for line in textwrap.wrap(p, 100) + [""]]
    for start in range(0, len(lines), 60):  # a line at a time: much faster than multi_cell
        pdf.add_page()
        for i, line in enumerate(lines[start:start + 60]):
            if line:
                pdf.text(10, 15 + 4.5 * i, line)
    pdf.output(str(path))


def _docx(path: Path, paras: list[str]) -> None:
    import docx

    d = docx.Document()
    d.add_heading(paras[0][:40], level=1)
    for p in paras:
        d.add_paragraph(p)
    d.save(str(path))


def write_file(job: tuple[Path, str, int, int]) -> None:
    """One file of kind `kind` with about `chars` characters of text, from seed `seed`."""
    path, kind, chars, seed = job
    rng = random.Random(seed)
    chinese = kind in ("txt", "md", "html") and seed % 10 == 0
    ttf = kind == "pdf" and seed % 4 == 0
    paras = paragraphs(rng, chars, chinese, foreign=ttf or (kind not in ("pdf",) and seed % 3 == 0))
    if kind == "pdf":
        _pdf(path, paras, ttf)
    elif kind == "docx":
        _docx(path, paras)
    elif kind == "html":
        body = "".join(f"<p>{p}</p>\n" for p in paras)
        path.write_text(f"<html><head><title>Doc {seed}</title><style>p {{margin: 0}}</style></head><body>"
                        f"<h1>Doc {seed}</h1>\n{body}</body></html>", encoding="utf-8")
    elif kind == "md":
        path.write_text(f"# Doc {seed}\n\n" + "\n\n".join(paras), encoding="utf-8")
    else:
        path.write_text("\n\n".join(paras), encoding="utf-8")


def build(folder: Path, files: int, mb: float, seed: int = 0) -> float:
    """Write the folder (unless it holds this build already); seconds it took (0: reused)."""
    spec = {"files": files, "mb": mb, "seed": seed, "kinds": list(KINDS)}  # as JSON reads it back
    marker = folder / ".build.json"
    if marker.is_file() and json.loads(marker.read_text()) == spec:
        return 0.0
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    mean = mb * 1e6 / files
    jobs = [(folder / KINDS[i % len(KINDS)] / f"doc{i:05d}.{KINDS[i % len(KINDS)]}", KINDS[i % len(KINDS)],
             int(mean * rng.uniform(0.5, 1.5)), i) for i in range(files)]
    for kind in KINDS:
        (folder / kind).mkdir(exist_ok=True)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(default_workers()) as pool:
        list(pool.map(write_file, jobs, chunksize=4))
    marker.write_text(json.dumps(spec))
    return time.perf_counter() - t0


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the parsing processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed_read(folder: Path, cache_path: Path, workers: int | None) -> tuple[float, float, list, list,
                                                                           ParsedDocumentCache]:
    """(wall seconds, CPU seconds, documents, bad files, the cache with its counts) of one `read_folder`."""
    cache = ParsedDocumentCache(cache_path)
    t0, c0 = time.perf_counter(), _cpu_seconds()
    docs, bad = read_folder(folder, cache=cache, workers=workers)
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    cache.close()
    return seconds, cpu, docs, bad, cache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--mb", type=float, default=50.0, help="million characters of text in all the files")
    parser.add_argument("--dir", help="write (or reuse) the files here instead of a temporary folder")
    parser.add_argument("--workers", type=int, default=None, help="parsing processes (default: one per CPU)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corpus-parse-") as tmp:
        folder = Path(args.dir) if args.dir else Path(tmp) / "docs"
        build_seconds = build(folder, args.files, args.mb)
        cache_path = Path(tmp) / "cache" / FILE_NAME
        first, first_cpu, docs, bad, cold = timed_read(folder, cache_path, args.workers)
        cached, cached_cpu, again, _, warm = timed_read(folder, cache_path, args.workers)
        if [(d.doc_id, d.text) for d in again] != [(d.doc_id, d.text) for d in docs]:
            raise SystemExit("the cached rerun gave other text than the first run")
        common.emit({
            "files": args.files, "documents": len(docs), "bad_files": len(bad),
            "text_mchars": round(sum(len(d.text) for d in docs) / 1e6, 1),
            "text_mb_utf8": round(sum(len(d.text.encode()) for d in docs) / 1e6, 1),
            "file_mb": round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6, 1),
            "documents_with_warnings": sum(1 for d in docs if d.warnings),
            "cpus": default_workers(), "os_cpu_count": os.cpu_count(), "workers": args.workers or default_workers(),
            "build_seconds": round(build_seconds, 1),
            "first_seconds": round(first, 2), "cached_seconds": round(cached, 2),
            "first_cpu_seconds": round(first_cpu, 1), "cached_cpu_seconds": round(cached_cpu, 2),
            "load_average_1min": round(os.getloadavg()[0], 1),
            "first_misses": cold.misses, "cached_hits": warm.hits,
            "cache_mb": round(cache_path.stat().st_size / 1e6, 1),
            "first_under_60s": first < 60, "cached_under_5s": cached < 5,
        })


if __name__ == "__main__":
    main()
