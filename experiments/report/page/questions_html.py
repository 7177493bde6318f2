"""questions.html: the question viewer, one self-contained static page beside report.html.

No network, no CDN, works from file://. The rows (experiments.report.questions.rows) go in as one JSON block;
a small script of its own filters them (benchmark, level, task, outcome cell, loss reason, config, a text
search) and renders only what is in view: 40 questions at a time, more as the reader scrolls, and a
question's chunks and context window only when its box is opened, so 2,000 questions x 5 configs stay a
light page. The filters live in the URL's hash (`questions.html#cell=only_rag&level=1k`), which is how the
report's first screen and agreement table link to a filtered view (`questions_link`); `open=<question id>`
opens that question's chunks and context window.
"""

from __future__ import annotations

import html
import json
from typing import Any
from urllib.parse import quote

QUESTIONS_FILE = "questions.html"
FILTERS = ("bench", "level", "task", "cell", "reason", "config", "q")


def questions_link(**filters: Any) -> str:
    """The viewer's URL filtered to `filters` (keys in FILTERS; None values left out)."""
    unknown = set(filters) - set(FILTERS)
    if unknown:
        raise ValueError(f"unknown viewer filter(s) {', '.join(sorted(unknown))}; known: {', '.join(FILTERS)}")
    parts = [f"{k}={quote(str(v), safe='')}" for k, v in filters.items() if v not in (None, "")]
    return QUESTIONS_FILE + ("#" + "&".join(parts) if parts else "")


STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1a1a1a; line-height: 1.4; }
header { position: sticky; top: 0; background: #f6f8fb; border-bottom: 1px solid #ccd; padding: .6em 1em; z-index: 2; }
header h1 { font-size: 1.15em; margin: 0 0 .4em; }
header label { margin-right: .8em; font-size: .88em; white-space: nowrap; }
header select, header input { font-size: .95em; max-width: 16em; }
#count { font-size: .88em; margin: .4em 0 0; color: #333; }
main { padding: .5em 1em 3em; }
article { border: 1px solid #ccd; border-radius: 4px; margin: .8em 0; padding: .5em .7em; }
.meta { font-size: .82em; color: #555; }
.qtext { font-weight: 600; margin: .25em 0; }
.gold, .ev { font-size: .88em; }
.cell { display: inline-block; padding: 0 .4em; border-radius: 3px; font-size: .8em; background: #eee; }
.cell.only_rag { background: #d8efd8; } .cell.only_lc { background: #dde6f7; }
.cell.both_wrong { background: #f6dcdc; } .cell.both_right { background: #eef0e2; }
.arms { display: flex; gap: .6em; overflow-x: auto; margin-top: .4em; }
.arm { flex: 1 1 0; min-width: 15em; border: 1px solid #dde; border-radius: 3px; padding: .35em .5em;
       font-size: .86em; }
.arm.right { border-left: 4px solid #4a4; } .arm.wrong { border-left: 4px solid #c44; }
.arm h3 { font-size: .95em; margin: 0 0 .2em; }
.pred { background: #f7f7f7; padding: .15em .3em; white-space: pre-wrap; }
.reason { color: #a22; font-weight: 600; }
.chunk { border-top: 1px dotted #bbb; padding-top: .2em; margin-top: .2em; white-space: pre-wrap; font-size: .92em; }
.chunk.dropped { color: #777; }
.cut { color: #999; text-decoration: line-through; }
mark { background: #ffe066; }
details > summary { cursor: pointer; color: #225; }
#more { margin: 1em; }
"""

SCRIPT = r"""
(function () {
  var D = JSON.parse(document.getElementById('data').textContent);
  var FILTERS = ['bench', 'level', 'task', 'cell', 'reason', 'config', 'q'];
  var PAGE = 40, shown = 0, hits = [];
  var REASONS = ['retrieval miss', 'cut by the prompt budget', 'truncated away', 'reading miss',
                 'no evidence known', 'not served'];
  D.questions.forEach(function (q) {
    var words = [q.id, q.q].concat(q.gold, q.ev || []);
    q.a.forEach(function (a) { if (a.p) words.push(a.p); });
    q.hay = words.join(' \n ').toLowerCase();
  });
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function state() {
    var s = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf('=');
      var k = decodeURIComponent(i < 0 ? kv : kv.slice(0, i));
      if (FILTERS.indexOf(k) >= 0 || k === 'open') s[k] = decodeURIComponent(i < 0 ? '' : kv.slice(i + 1));
    });
    return s;
  }
  function options(id, values, label) {
    var sel = document.getElementById(id);
    sel.appendChild(el('option', '', 'any ' + label)).value = '';
    values.forEach(function (v) { var o = el('option', '', v[1]); o.value = v[0]; sel.appendChild(o); });
  }
  function uniq(xs) { var seen = {}; return xs.filter(function (x) { return x && !seen[x] && (seen[x] = 1); }); }
  function pairs(xs) { return xs.map(function (x) { return [x, x]; }); }
  var benches = uniq(D.questions.map(function (q) { return q.bench; }));
  options('bench', pairs(benches), 'benchmark');
  options('level', D.levels.map(function (l) { return [l, l]; }), 'level');
  options('task', pairs(uniq(D.questions.map(function (q) { return q.task; })).sort()), 'task');
  options('cell', Object.keys(D.cells).map(function (k) { return [k, D.cells[k]]; }), 'outcome');
  options('reason', REASONS.map(function (r) { return [r, r]; }), 'loss reason');
  options('config', D.configs.map(function (c) {
    return [c.label, c.label + (benches.length > 1 ? ' (' + c.bench + ')' : '')]; }), 'config');
  function matches(q, s) {
    if (s.bench && q.bench !== s.bench) return false;
    if (s.level && q.level !== s.level) return false;
    if (s.task && q.task !== s.task) return false;
    if (s.cell && q.cell !== s.cell) return false;
    var answers = s.config ? q.a.filter(function (a) { return D.configs[a.c].label === s.config; }) : q.a;
    if (s.config && !answers.length) return false;
    if (s.reason && !answers.some(function (a) { return a.r === s.reason; })) return false;
    if (s.q && q.hay.indexOf(s.q.toLowerCase()) < 0) return false;
    return true;
  }
  function marked(parent, text, marks, cuts) {
    var edges = [0, text.length];
    (marks || []).concat(cuts || []).forEach(function (m) {
      edges.push(Math.min(m[0], text.length), Math.min(m[1], text.length)); });
    edges.sort(function (a, b) { return a - b; });
    function inside(list, a) { return (list || []).some(function (m) { return m[0] <= a && a < m[1]; }); }
    for (var i = 0; i + 1 < edges.length; i++) {
      var a = edges[i], b = edges[i + 1];
      if (b <= a) continue;
      var piece = text.slice(a, b), node = document.createTextNode(piece);
      if (inside(marks, a)) { var m = el('mark'); m.appendChild(node); node = m; }
      if (inside(cuts, a)) { var c = el('span', 'cut'); c.appendChild(node); node = c; }
      parent.appendChild(node);
    }
  }
  function num(x, d) { return x === undefined || x === null ? '-' : Number(x).toFixed(d); }
  function lazy(parent, title, fill, open) {
    var det = el('details'), sum = el('summary', '', title), done = false;
    det.appendChild(sum);
    det.addEventListener('toggle', function () { if (det.open && !done) { done = true; fill(det); } });
    parent.appendChild(det);
    if (open) det.open = true;  // #open=<question id>: that question's boxes start open
    return det;
  }
  function chunkList(box, chunks, dropped) {
    chunks.forEach(function (c) {
      var d = el('div', 'chunk');
      d.appendChild(el('strong', '', 'rank ' + c[0] + ': '));
      marked(d, D.texts[c[1]], c[2]);
      box.appendChild(d);
    });
    dropped.forEach(function (c) {
      var d = el('div', 'chunk dropped');
      d.appendChild(el('strong', '', 'rank ' + c[0] + ', dropped by the prompt budget: '));
      marked(d, D.texts[c[1]], c[2]);
      box.appendChild(d);
    });
  }
  function armBox(a, open) {
    var cfg = D.configs[a.c];
    var right = a.s !== undefined && a.r === undefined && a.st === 'ok';
    var box = el('div', 'arm ' + (a.r ? 'wrong' : right ? 'right' : ''));
    box.dataset.config = cfg.label;
    box.appendChild(el('h3', '', cfg.label));
    if (a.st !== 'ok') box.appendChild(el('div', 'meta', a.st + (a.why ? ': ' + a.why : '')));
    if (a.p !== undefined) box.appendChild(el('div', 'pred', a.p));
    box.appendChild(el('div', 'meta', 'score ' + num(a.s, 2) + ' · ended: ' + (a.f || '-') +
        (a.route ? ' · answered by ' + a.route : '')));
    box.appendChild(el('div', 'meta', num(a.pt, 0) + ' prompt + ' + num(a.ct, 0) + ' answer tokens · ' +
        num(a.lat, 2) + ' s' + (a.usd !== undefined ? ' · $' + Number(a.usd).toPrecision(3) : '')));
    if (a.r) box.appendChild(el('div', 'reason', 'lost: ' + a.r + (a.sig ? ' (by ' + a.sig + ')' : '')));
    if (a.aic !== undefined)
      box.appendChild(el('div', 'meta', 'gold answer in the context: ' + (a.aic ? 'yes' : 'no')));
    if (a.ch) {
      box.appendChild(el('div', 'meta', 'evidence first at rank ' +
          (a.fr === undefined ? '- (not in the ranking)' : a.fr) +
          ' · evidence in prompt ' + (a.ip === undefined ? '-' : Math.round(100 * a.ip) + '%') +
          (a.dr && a.dr.length ? ' · ' + a.dr.length + ' chunk(s) dropped by the budget' : '')));
      if (a.ch.length || (a.dr && a.dr.length))
        lazy(box, 'chunks in the prompt (' + a.ch.length + ')', function (det) { chunkList(det, a.ch, a.dr || []); },
             open);
    }
    if (a.w !== undefined || a.tr !== undefined) {
      box.appendChild(el('div', 'meta', 'truncated: ' + (a.tr ? 'yes' : 'no') + ' · evidence kept ' +
          (a.er === undefined ? '-' : Math.round(100 * a.er) + '%')));
      if (a.w) lazy(box, 'context around the evidence', function (det) {
        var d = el('div', 'chunk'); marked(d, D.texts[a.w[0]], a.w[1], a.w[2]); det.appendChild(d); }, open);
    }
    return box;
  }
  function article(q, s) {
    var art = el('article');
    art.dataset.id = q.id;
    var meta = el('div', 'meta', q.id + ' · ' + q.bench + ' · level ' + q.level + ' · ' + (q.task || '') +
        (q.depth !== undefined ? ' · evidence at ' + q.depth + '% depth' : ' '));
    if (q.cell) {
      meta.appendChild(document.createTextNode(' '));
      meta.appendChild(el('span', 'cell ' + q.cell, D.cells[q.cell]));
    }
    art.appendChild(meta);
    art.appendChild(el('div', 'qtext', q.q || '(no question text)'));
    art.appendChild(el('div', 'gold', 'gold: ' + q.gold.join(' | ')));
    if (q.ev) {
      var ev = el('div', 'ev', 'evidence: ');
      q.ev.forEach(function (t, i) {
        if (i) ev.appendChild(document.createTextNode(' … '));
        ev.appendChild(el('mark', '', t));
      });
      art.appendChild(ev);
    }
    var arms = el('div', 'arms');
    q.a.forEach(function (a) {
      if (!s.config || D.configs[a.c].label === s.config) arms.appendChild(armBox(a, s.open === q.id)); });
    art.appendChild(arms);
    return art;
  }
  var list = document.getElementById('list'), more = document.getElementById('more');
  function renderMore(s) {
    var end = Math.min(hits.length, shown + PAGE), frag = document.createDocumentFragment();
    for (; shown < end; shown++) frag.appendChild(article(hits[shown], s));
    list.appendChild(frag);
    more.hidden = shown >= hits.length;
    more.textContent = 'show ' + Math.min(PAGE, hits.length - shown) + ' more of ' + (hits.length - shown);
  }
  function apply() {
    var s = state();
    FILTERS.forEach(function (k) { var c = document.getElementById(k); if (c) c.value = s[k] || ''; });
    hits = D.questions.filter(function (q) { return matches(q, s); });
    list.textContent = ''; shown = 0;
    document.getElementById('count').textContent = hits.length + ' of ' + D.questions.length + ' questions shown';
    document.body.dataset.shown = String(hits.length);
    renderMore(s);
  }
  function toHash() {
    var parts = [], open = state().open;
    FILTERS.forEach(function (k) {
      var v = document.getElementById(k).value;
      if (v) parts.push(k + '=' + encodeURIComponent(v));
    });
    if (open) parts.push('open=' + encodeURIComponent(open));
    history.replaceState(null, '', parts.length ? '#' + parts.join('&') : location.pathname);
    apply();
  }
  FILTERS.forEach(function (k) {
    document.getElementById(k).addEventListener(k === 'q' ? 'input' : 'change', toHash); });
  more.addEventListener('click', function () { renderMore(state()); });
  if ('IntersectionObserver' in window)
    new IntersectionObserver(function (es) {
      if (es[0].isIntersecting && shown < hits.length) renderMore(state()); }).observe(more);
  window.addEventListener('hashchange', apply);
  apply();
  document.body.dataset.ready = '1';
  document.body.dataset.readyMs = String(Math.round(performance.now()));  // from navigation start
  document.body.dataset.nodes = String(document.getElementsByTagName('*').length);
})();
"""


def _json_block(payload: dict[str, Any]) -> str:
    """The payload as JSON safe inside a <script> element."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def questions_html(payload: dict[str, Any], title: str = "Every question: RAG vs long context") -> str:
    """The whole page: filters, the JSON rows, the script."""
    selects = "".join(f'<label>{html.escape(name)} <select id="{key}"></select></label>'
                      for key, name in (("bench", "benchmark"), ("level", "level"), ("task", "task"),
                                        ("cell", "outcome"), ("reason", "lost to"), ("config", "config")))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<header>"
            f"<h1>{html.escape(title)} <a href=\"report.html\" style=\"font-size:.7em\">back to the report</a></h1>"
            f"{selects}<label>search <input id=\"q\" type=\"search\" placeholder=\"question, answer, id\"></label>"
            "<p id=\"count\"></p></header>\n<main><div id=\"list\"></div>"
            "<button id=\"more\" hidden></button></main>\n"
            f"<script type=\"application/json\" id=\"data\">{_json_block(payload)}</script>\n"
            f"<script>{SCRIPT}</script>\n</body>\n</html>\n")


__all__ = ["FILTERS", "QUESTIONS_FILE", "questions_html", "questions_link"]
