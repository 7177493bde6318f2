"""The question viewer's style and script (the page itself: experiments.report.page.questions_html).

The page holds an index of every question it holds (benchmark, level, task, outcome cell, its answers' configs
and loss reasons: what the filters read) and loads the rest (question text, answers, chunks, windows) a part at
a time: each part is a script that calls `rolViewer.part(k, data)`, inline in a small report's page, or a file
under `questions_data/` (its rows gzip-compressed in base64) that the page adds as a <script> element when a
page of results needs it (a browser reads a file:// script where it refuses a fetch). A text search reads the
questions' search texts (`questions_data/search.js`; in a one-file page, every part: all are in it).
"""

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
#held { font-size: .82em; color: #7a4a00; margin: .3em 0 0; }
"""

# Defined before any part: inline parts (a small report's) call it as the page is parsed.
BOOT = """window.rolViewer = {raw: {}, got: {}, part: function (k, data) {
  this.raw[k] = data; if (this.got[k]) this.got[k](); }};"""

SCRIPT = r"""
(function () {
  var I = JSON.parse(document.getElementById('index').textContent), V = window.rolViewer;
  var FILTERS = ['bench', 'level', 'task', 'cell', 'reason', 'config', 'q'];
  var PAGE = 40, shown = 0, hits = [], epoch = 0, busy = null, waiting = {}, parts = {}, failed = {};
  var CELLS = Object.keys(I.cells), SEARCH = 'search', hay = null;
  var Q = I.qs.map(function (r, i) {
    return {i: i, id: r[0], bench: I.benches[r[1]], level: I.levels[r[2]], task: I.tasks[r[3]],
            cell: r[4] < 0 ? undefined : CELLS[r[4]], part: r[5], ac: r[6], ar: r[7]}; });
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function partName(k) {
    return I.dir + '/' + (k === SEARCH ? 'search' : 'part-' + String(k + 1).padStart(5, '0')) + '.js'; }
  function prepare(data) {  // each question's search text, once its part is here
    data.questions.forEach(function (q) {
      var words = [q.id, q.q].concat(q.gold, q.ev || []);
      q.a.forEach(function (a) { if (a.p) words.push(a.p); });
      q.hay = words.join(' \n ').toLowerCase();
    });
    return data;
  }
  function decode(data) {  // a part as written: its rows, or them gzip-compressed and in base64
    if (typeof data !== 'string') return Promise.resolve(data);
    if (typeof DecompressionStream === 'undefined')
      return Promise.reject(new Error('this browser cannot read the compressed parts in ' + I.dir +
                                      ': open questions.html in a current Chrome, Edge, Firefox or Safari'));
    var text = atob(data), bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text().then(JSON.parse);
  }
  function load(k) {
    if (!waiting[k]) waiting[k] = new Promise(function (resolve, reject) {
      if (k in V.raw) return resolve();
      V.got[k] = resolve;
      var tag = document.createElement('script');
      tag.src = partName(k);
      tag.onerror = function () {
        reject(new Error('cannot read ' + tag.src + ': keep questions.html beside its folder ' + I.dir)); };
      document.head.appendChild(tag);
    }).then(function () { return decode(V.raw[k]); }).then(function (data) {
      delete V.raw[k];
      if (k !== SEARCH) parts[k] = prepare(data);
      return data;
    });
    return waiting[k];
  }
  function loadAll(mine) {
    var done = 0, all = [];
    for (var k = 0; k < I.nparts; k++) all.push(load(k).then(function () {
      done++;
      if (mine === epoch && !failed[mine] && done < I.nparts)
        say('searching: ' + done + ' of ' + I.nparts + ' files read');
    }));
    return Promise.all(all);
  }
  function loadHay(mine) {  // every question's search text: its own file, else read off every part
    if (hay) return Promise.resolve();
    var texts = I.search ? load(SEARCH) : loadAll(mine).then(function () {
      return Q.map(function (q) { return full(q).hay; }); });
    return texts.then(function (t) { hay = t.map(function (x) { return x.toLowerCase(); }); });
  }
  function full(q) { return parts[q.part].questions[q.i - I.starts[q.part]]; }
  function say(text) { document.getElementById('count').textContent = text; }
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
  function pairs(xs) { return xs.map(function (x) { return [x, x]; }); }
  options('bench', pairs(I.benches), 'benchmark');
  options('level', pairs(I.levels), 'level');
  options('task', pairs(I.tasks.filter(function (t) { return t; }).slice().sort()), 'task');
  options('cell', CELLS.map(function (k) { return [k, I.cells[k]]; }), 'outcome');
  options('reason', pairs(I.reasons), 'loss reason');
  options('config', I.configs.map(function (c) {
    return [c.label, c.label + (I.benches.length > 1 ? ' (' + c.bench + ')' : '')]; }), 'config');
  function matches(q, s) {
    if (s.bench && q.bench !== s.bench) return false;
    if (s.level && q.level !== s.level) return false;
    if (s.task && q.task !== s.task) return false;
    if (s.cell && q.cell !== s.cell) return false;
    var mine = q.ac.map(function (c, j) { return j; });
    if (s.config) mine = mine.filter(function (j) { return I.configs[q.ac[j]].label === s.config; });
    if (s.config && !mine.length) return false;
    var reason = s.reason ? I.reasons.indexOf(s.reason) + 1 : 0;
    if (s.reason && !mine.some(function (j) { return q.ar[j] === reason; })) return false;
    if (s.q && hay[q.i].indexOf(s.q.toLowerCase()) < 0) return false;
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
  function chunkList(box, chunks, dropped, texts) {
    chunks.forEach(function (c) {
      var d = el('div', 'chunk');
      d.appendChild(el('strong', '', 'rank ' + c[0] + ': '));
      marked(d, texts[c[1]], c[2]);
      box.appendChild(d);
    });
    dropped.forEach(function (c) {
      var d = el('div', 'chunk dropped');
      d.appendChild(el('strong', '', 'rank ' + c[0] + ', dropped by the prompt budget: '));
      marked(d, texts[c[1]], c[2]);
      box.appendChild(d);
    });
  }
  function armBox(a, open, texts) {
    var cfg = I.configs[a.c];
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
        lazy(box, 'chunks in the prompt (' + a.ch.length + ')', function (det) {
          chunkList(det, a.ch, a.dr || [], texts); }, open);
    }
    if (a.w !== undefined || a.tr !== undefined) {
      box.appendChild(el('div', 'meta', 'truncated: ' + (a.tr ? 'yes' : 'no') + ' · evidence kept ' +
          (a.er === undefined ? '-' : Math.round(100 * a.er) + '%')));
      if (a.w) lazy(box, 'context around the evidence', function (det) {
        var d = el('div', 'chunk'); marked(d, texts[a.w[0]], a.w[1], a.w[2]); det.appendChild(d); }, open);
    }
    return box;
  }
  function article(q, s) {
    var f = full(q), texts = parts[q.part].texts, art = el('article');
    art.dataset.id = q.id;
    var meta = el('div', 'meta', q.id + ' · ' + q.bench + ' · level ' + q.level + ' · ' + (q.task || '') +
        (f.depth !== undefined ? ' · evidence at ' + f.depth + '% depth' : ' '));
    if (q.cell) {
      meta.appendChild(document.createTextNode(' '));
      meta.appendChild(el('span', 'cell ' + q.cell, I.cells[q.cell]));
    }
    art.appendChild(meta);
    art.appendChild(el('div', 'qtext', f.q || '(no question text)'));
    art.appendChild(el('div', 'gold', 'gold: ' + f.gold.join(' | ')));
    if (f.ev) {
      var ev = el('div', 'ev', 'evidence: ');
      f.ev.forEach(function (t, i) {
        if (i) ev.appendChild(document.createTextNode(' … '));
        ev.appendChild(el('mark', '', t));
      });
      art.appendChild(ev);
    }
    var arms = el('div', 'arms');
    f.a.forEach(function (a) {
      if (!s.config || I.configs[a.c].label === s.config) arms.appendChild(armBox(a, s.open === q.id, texts)); });
    art.appendChild(arms);
    return art;
  }
  var list = document.getElementById('list'), more = document.getElementById('more');
  function renderMore(s, mine) {  // the next page of hits, once the parts that hold them are read
    if (busy && busy.epoch === mine) return busy.promise;
    var page = hits.slice(shown, shown + PAGE), need = {}, job = {epoch: mine};
    page.forEach(function (q) { need[q.part] = true; });
    job.promise = Promise.all(Object.keys(need).map(function (k) { return load(Number(k)); })).then(function () {
      if (busy === job) busy = null;
      if (mine !== epoch) return;
      var frag = document.createDocumentFragment();
      page.forEach(function (q) { frag.appendChild(article(q, s)); });
      shown += page.length;
      list.appendChild(frag);
      more.hidden = shown >= hits.length;
      more.textContent = 'show ' + Math.min(PAGE, hits.length - shown) + ' more of ' + (hits.length - shown);
    }, function (err) { if (busy === job) busy = null; say(String(err.message || err)); throw err; });
    busy = job;
    return job.promise;
  }
  function ready() {
    document.body.dataset.ready = '1';
    document.body.dataset.readyMs = String(Math.round(performance.now()));  // from navigation start
    document.body.dataset.nodes = String(document.getElementsByTagName('*').length);
  }
  function apply() {
    var s = state(), mine = ++epoch;
    FILTERS.forEach(function (k) { var c = document.getElementById(k); if (c) c.value = s[k] || ''; });
    return (s.q ? loadHay(mine) : Promise.resolve()).then(function () {
      if (mine !== epoch) return;
      hits = Q.filter(function (q) { return matches(q, s); });
      list.textContent = ''; shown = 0;
      say(hits.length + ' of ' + Q.length + ' questions shown');
      document.body.dataset.shown = String(hits.length);
      return renderMore(s, mine);
    }).then(function () { if (mine === epoch) ready(); }, function (err) {
      failed[mine] = true;
      if (mine === epoch) { say(String(err.message || err)); document.body.dataset.failed = '1'; }
    });
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
  more.addEventListener('click', function () { renderMore(state(), epoch); });
  if ('IntersectionObserver' in window)
    new IntersectionObserver(function (es) {
      if (es[0].isIntersecting && shown < hits.length) renderMore(state(), epoch); }).observe(more);
  window.addEventListener('hashchange', apply);
  apply();
})();
"""

__all__ = ["BOOT", "SCRIPT", "STYLE"]
