"""What the HTML report's first screen shows in a 1400 x 900 browser window, whether its first
table (the answer) fits the window's width, and whether every other table of the report does (none scrolls
sideways or hides a column past the window's edge: a wide table is split into parts, page/table_parts.py).

    python perf/first_screen.py                      # simulated run folders (written to a temp dir)
    python perf/first_screen.py RUN_DIRS --out DIR   # a report of your own runs

Without RUN_DIRS it writes simulated run folders with every kind of row: a benchmark where RAG is
clearly better and one where long context is (experiments.simulate.sweeps.known_truth_sweep,
40 documents x 10 questions), the report's usual synthetic sweep (3 length levels, inconclusive) and
a benchmark of one document (its row shows "-" for the interval). Then it builds the report, takes a
screenshot of the first screen with headless Chromium (`--screenshot`, `--window-size=1400,900`) and
measures the layout.

How the width is measured: not from the screenshot's pixels (a table cut off by its scrolling
wrapper looks like a table that fits, and borders are hard to tell from other lines) but by the
browser's own layout engine. A copy of report.html gets a small script that, once the page has
loaded, writes the first table's bounding box, its wrapper's visible and scrollable widths and the
window's width into the page; Chromium's `--dump-dom` prints the page, and this script reads the
numbers back. A table fits when its right edge is inside the window and its wrapper has nothing
to scroll (scrollWidth <= clientWidth). Exit 0 when every table fits and the page has no sideways scroll, 1 when
one does not (each printed with its section and the columns it hides), 2 when Chromium is missing. The last line
is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import common  # sets up the path

from experiments.report.page.build import build_report
from experiments.simulate.sweeps import known_truth_sweep, make_sweep, write_run

WINDOW = (1400, 900)
BROWSERS = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PROBE = """<script>
window.addEventListener('load', function () {
  var t = document.querySelector('table'), w = t.parentElement, r = t.getBoundingClientRect();
  var h2 = document.querySelector('h2'), img = document.querySelector('img');
  var out = {window_width: window.innerWidth, window_height: window.innerHeight,
             table_left: r.left, table_right: r.right, table_top: r.top, table_bottom: r.bottom,
             wrapper_client_width: w.clientWidth, wrapper_scroll_width: w.scrollWidth,
             page_scroll_width: document.documentElement.scrollWidth,
             table_class: t.className, rows: t.tBodies[0].rows.length,
             table_before_first_h2: !!(h2 && (t.compareDocumentPosition(h2) & Node.DOCUMENT_POSITION_FOLLOWING)),
             first_image: img ? img.getAttribute('data-file') : null,
             first_image_bottom: img ? img.getBoundingClientRect().bottom : null};
  // every table: does its wrapper scroll sideways, and which columns lie past the page's right edge
  out.tables = [];
  document.querySelectorAll('table').forEach(function (table) {
    var wrap = table.parentElement, edge = Math.min(wrap.getBoundingClientRect().right, window.innerWidth);
    var sec = table.closest('section'), h2 = sec ? sec.querySelector('h2') : null, hidden = [], head = [];
    table.querySelectorAll('thead th').forEach(function (th) {
      head.push(th.textContent);
      if (th.getBoundingClientRect().right > edge + 0.5) hidden.push(th.textContent);
    });
    out.tables.push({section: h2 ? h2.textContent : 'first screen', head: head.slice(0, 3).join(' | '),
                     right: table.getBoundingClientRect().right, client_width: wrap.clientWidth,
                     scroll_width: wrap.scrollWidth, hidden: hidden});
  });
  var pre = document.createElement('pre');
  pre.id = 'first-screen-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def browser() -> str | None:
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def simulated_runs(root: Path) -> list[Path]:
    """Run folders with a rag row, a longctx row, three inconclusive levels and a one-document row."""
    known_truth_sweep(root / "rag_better", 0.2, n_rag_configs=2, seed=1, benchmark="sim_rag", level="8k")
    known_truth_sweep(root / "longctx_better", -0.2, n_rag_configs=2, seed=2, benchmark="sim_longctx", level="8k")
    make_sweep(root / "synthetic", per_level=12, generator="sim")
    base = {"benchmark": "one_doc", "task": "t", "language": "en", "length_level": "2k", "status": "ok",
            "group": "the-only-document", "completion_tokens": 5, "latency_s": 1.0}
    recs = [{**base, "id": f"q{i}", "score": float(i % 2), "prompt_tokens": 2000} for i in range(6)]
    write_run(root / "one_doc" / "lc", {"arm": "longctx", "benchmark": "one_doc", "generator": "sim"},
              [{**r, "arm": "longctx"} for r in recs])
    write_run(root / "one_doc" / "rag", {"arm": "rag", "benchmark": "one_doc", "generator": "sim", "retriever": "bm25",
                                         "chunk_size": 64, "top_k": 2, "order": "document"},
              [{**r, "arm": "rag", "score": 1.0, "prompt_tokens": 200} for r in recs])
    return [root]


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    return struct.unpack(">II", head[16:24])


def _chromium(exe: str, *args: str) -> subprocess.CompletedProcess:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
           f"--window-size={WINDOW[0]},{WINDOW[1]}", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if res.returncode != 0:
        raise RuntimeError(f"chromium exited {res.returncode}: {res.stderr[-1500:]}")
    return res


def measure(exe: str, html: Path, work: Path) -> dict:
    """The first table's layout in the window, read back from the browser (see the module docstring)."""
    probe = work / "first_screen_probe.html"
    probe.write_text(html.read_text(encoding="utf-8").replace("</body>", PROBE + "\n</body>"), encoding="utf-8")
    res = _chromium(exe, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    m = re.search(r'<pre id="first-screen-probe">(.*?)</pre>', res.stdout, re.S)
    if not m:
        raise RuntimeError(f"the page did not finish loading: {res.stdout[:300]} {res.stderr[-800:]}")
    return json.loads(m.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*", help="run folders or multirun folders (default: simulated ones)")
    ap.add_argument("--out", type=Path, default=None, help="where the report and screenshot go (default: a temp dir)")
    args = ap.parse_args(argv)
    exe = browser()
    if exe is None:
        print("chromium not found (tried " + ", ".join(BROWSERS) + "): install it, e.g. `apt-get install -y "
              "chromium`, to check the first screen", file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="first_screen_"))
    dirs = args.dirs or [str(d) for d in simulated_runs(out / "runs")]
    files = build_report(dirs, out / "report")
    shot = out / "first_screen.png"
    _chromium(exe, f"--screenshot={shot}", files["report.html"].as_uri())
    seen = measure(exe, files["report.html"], out)
    fits = seen["table_right"] <= seen["window_width"] and seen["wrapper_scroll_width"] <= seen["wrapper_client_width"]
    wide = [t for t in seen["tables"] if too_wide(t, seen["window_width"])]
    width, height = png_size(shot)
    print(f"report: {files['report.html']}\nscreenshot: {shot} ({width} x {height} px)")
    print(f"first table ({seen['table_class'] or 'no class'}, {seen['rows']} rows): x {seen['table_left']:.0f} to "
          f"{seen['table_right']:.0f} of a {seen['window_width']}-px window, wrapper {seen['wrapper_client_width']} px "
          f"wide with {seen['wrapper_scroll_width']} px of content: {'fits' if fits else 'does NOT fit'}")
    print(f"tables: {len(seen['tables'])}, {len(wide)} wider than the window or scrolling sideways; page "
          f"{seen['page_scroll_width']} px wide")
    for t in wide:
        print(f"  {t['section']}: [{t['head']} ...] {t['scroll_width']} px of content in {t['client_width']} px, "
              f"hidden: {', '.join(t['hidden']) or '-'}")
    image_bottom = seen["first_image_bottom"]
    common.emit({"screenshot": str(shot), "screenshot_px": [width, height], "window_px": list(WINDOW),
                 "first_table_class": seen["table_class"], "first_table_rows": seen["rows"],
                 "first_table_right_px": round(seen["table_right"]),
                 "first_table_bottom_px": round(seen["table_bottom"]),
                 "first_table_before_sections": seen["table_before_first_h2"], "first_image": seen["first_image"],
                 "first_image_bottom_px": None if image_bottom is None else round(image_bottom),
                 "first_table_fits": fits, "tables": len(seen["tables"]),
                 "tables_too_wide": [f"{t['section']}: {t['head']}" for t in wide],
                 "columns_hidden": sorted({h for t in wide for h in t["hidden"]}),
                 "page_scroll_width_px": seen["page_scroll_width"]})
    return 0 if fits and not wide and seen["page_scroll_width"] <= seen["window_width"] else 1


def too_wide(table: dict, window_width: int) -> bool:
    """A table that scrolls sideways in its wrapper, or whose right edge lies past the window's."""
    return table["scroll_width"] > table["client_width"] or table["right"] > window_width + 0.5


if __name__ == "__main__":
    sys.exit(main())
