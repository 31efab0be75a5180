// agentscope static player (plain JS, no dependencies). Log data is written with textContent only.
(function(){
'use strict';
var D = JSON.parse(document.getElementById('as-data').textContent);
var N = D.n, K = D.K, cur = 0, timer = null;
var $ = function(id){ return document.getElementById(id); };
var F = AS_FRAME, el = F.el, tree = F.tree, shortJ = F.shortJ;  // the frame renderer (render/frame.js)
function ptrParts(p){ return p === '' ? [] : p.split('/').slice(1).map(function(s){ return s.replace(/~1/g,'/').replace(/~0/g,'~'); }); }
function clone(v){ return v === undefined ? undefined : JSON.parse(JSON.stringify(v)); }
function getAt(doc, parts){ var o = doc; for (var i=0;i<parts.length;i++){ o = o[Array.isArray(o) ? +parts[i] : parts[i]]; } return o; }
function applyOp(doc, op){
  var parts = ptrParts(op.path);
  if (parts.length === 0){ if (op.op==='add'||op.op==='replace') return clone(op.value);
    if (op.op==='move'||op.op==='copy') return clone(getAt(doc, ptrParts(op.from))); return doc; }
  var last = parts.pop(), parent = getAt(doc, parts);
  var val;
  if (op.op === 'move' || op.op === 'copy'){
    var fp = ptrParts(op.from), fl = fp.pop(), fpar = getAt(doc, fp);
    val = clone(Array.isArray(fpar) ? fpar[+fl] : fpar[fl]);
    if (op.op === 'move'){ if (Array.isArray(fpar)) fpar.splice(+fl,1); else delete fpar[fl]; }
    parent = getAt(doc, parts);
    if (Array.isArray(parent)){ if (last==='-') parent.push(val); else parent.splice(+last,0,val); } else parent[last] = val;
    return doc;
  }
  if (op.op === 'test') return doc;
  if (Array.isArray(parent)){
    if (op.op==='add'){ if (last==='-') parent.push(clone(op.value)); else parent.splice(+last,0,clone(op.value)); }
    else if (op.op==='remove') parent.splice(+last,1);
    else if (op.op==='replace') parent[+last] = clone(op.value);
  } else {
    if (op.op==='remove') delete parent[last]; else parent[last] = clone(op.value);
  }
  return doc;
}
var caches = D.panes.map(function(){ return {i:-1, ctx:null}; });
function ctxAt(p, i){
  var P = D.panes[p], c = caches[p], f = P.frames[i];
  if (!f || (f.k === undefined && f.d === undefined)) return undefined;
  var start, doc;
  if (c.i >= 0 && c.i <= i && i - c.i <= K){ start = c.i + 1; doc = c.ctx; }
  else { start = i; while (start > 0 && P.frames[start].k === undefined) start--; doc = clone(P.frames[start].k); start++; }
  for (var j = start; j <= i; j++){ var fr = P.frames[j];
    if (fr.k !== undefined) doc = clone(fr.k); else if (fr.d) { for (var q=0;q<fr.d.length;q++) doc = applyOp(doc, fr.d[q]); } }
  c.i = i; c.ctx = doc; return doc;
}
function ctxBox(p){ return document.querySelectorAll('#as-ctxs .as-ctx')[p]; }
function renderCtx(p, i, paths){
  var box = ctxBox(p);
  var q = (document.querySelector('.as-ctx-search').value || '').toLowerCase();
  box.textContent = '';
  var f = D.panes[p].frames[i];
  var ctx = ctxAt(p, i);
  if (ctx === undefined){ box.appendChild(el('div','as-note', f ? 'replay needs a machine' : D.panes[p].name + ' ended at entry ' + (D.panes[p].n - 1))); return; }
  var changed = new Set(paths), anc = new Set();
  paths.forEach(function(pp){ var parts = pp.split('/'); for (var k=1;k<parts.length;k++) anc.add(parts.slice(0,k).join('/')); });
  var t = tree(ctx, 'context', '/context', 0, changed, anc, q, false, {n: 2000});
  box.appendChild(t || el('div','as-meta','no match'));
}
function diffTable(rows){
  var box = $('as-cdiff'); box.textContent = '';
  if (!rows.length){ box.appendChild(el('div','as-meta as-cdiff-none','the two contexts are identical')); return; }
  var names = [D.panes[0].name, D.panes[1].name];
  var t = el('table','as-cdiff'), h = el('tr');
  ['path', names[0], names[1]].forEach(function(c){ h.appendChild(el('th', null, c)); }); t.appendChild(h);
  rows.forEach(function(r){ var tr = el('tr','as-d-' + r[1]); tr.dataset.path = r[0];
    var mark = r[1] === 'only-a' ? ' (only in ' + names[0] + ')' : r[1] === 'only-b' ? ' (only in ' + names[1] + ')' : '';
    tr.appendChild(el('td', null, r[0] + mark));
    tr.appendChild(el('td','as-d-a', r[1] === 'only-b' ? '(absent)' : shortJ(r[2])));
    tr.appendChild(el('td','as-d-b', r[1] === 'only-a' ? '(absent)' : shortJ(r[3]))); t.appendChild(tr); });
  box.appendChild(t);
}
var lit = [];
function clearLit(){ lit = F.paint(null, [], lit); }
var heat = false, heatTitles = [];
function setHeat(on){
  // the chart shows either the current step or the coverage heat map (classes of render/coverage.py)
  var C = D.coverage, chart = $('as-chart');
  heat = !!(on && C);
  clearLit();
  heatTitles.forEach(function(x){ x[0].textContent = x[1]; }); heatTitles = [];
  chart.classList.toggle('as-coverage', heat);
  if ($('as-heat-legend')) $('as-heat-legend').hidden = !heat;
  document.querySelectorAll('.as-legend').forEach(function(l){ l.style.display = heat ? 'none' : ''; });  // the step legend
  if (!heat){ show(cur); return; }
  C.states.forEach(function(s){ var e = document.getElementById(s[0]);
    if (!e || !chart.contains(e)) return;
    e.classList.add(s[3]); lit.push([e, [s[3]]]); e.dataset.visits = s[2];
    var t = e.querySelector('title');
    if (t){ heatTitles.push([t, t.textContent]); t.textContent = s[1] + ': ' + s[2] + ' visit' + (s[2] === 1 ? '' : 's'); } });
  $('as-heat-summary').textContent = C.visited + ' of ' + C.total + ' states visited over ' + C.logs + ' log(s); the most visited: ' + C.most + ' entries';
}
function inChart(e){ return $('as-chart').contains(e) || $('as-xcharts').contains(e); }
function chartEl(id){ var e = document.getElementById(id); return e && inChart(e) ? e : null; }
var vio = (D.violations || []).slice().sort(function(a,b){return a-b;});
var mm = Object.keys(D.marks).filter(function(k){ return D.marks[k] === 'mismatch'; }).map(Number).sort(function(a,b){return a-b;});
function spark(i){
  var box = $('as-spark'); box.textContent = '';
  if (!D.usage) return;
  var W = 240, H = 36, u = D.usage, n = u.length, mx = Math.max.apply(null, u.concat([1e-9]));
  var ns = 'http://www.w3.org/2000/svg', svg = document.createElementNS(ns,'svg');
  svg.setAttribute('width', W); svg.setAttribute('height', H); svg.setAttribute('class','as-spark');
  function xy(k){ return [2 + (W-4)*(k/Math.max(n-1,1)), H-2-(H-4)*(u[k]/mx)]; }
  var step = Math.max(1, Math.floor(n/(2*W))), pts = [];
  for (var k = 0; k < n; k += step) pts.push(xy(k).join(',')); pts.push(xy(n-1).join(','));
  var pl = document.createElementNS(ns,'polyline'); pl.setAttribute('points', pts.join(' '));
  pl.setAttribute('fill','none'); pl.setAttribute('stroke','#1565c0'); svg.appendChild(pl);
  var c = xy(Math.min(i, n-1)), ci = document.createElementNS(ns,'circle');
  ci.setAttribute('cx', c[0]); ci.setAttribute('cy', c[1]); ci.setAttribute('r', 3); ci.setAttribute('fill','#d84315');
  ci.setAttribute('class','as-spark-cur'); svg.appendChild(ci);
  box.appendChild(el('div','as-sec','cumulative tokens')); box.appendChild(svg);
  box.appendChild(el('span','as-meta',' ' + Math.round(u[Math.min(i,n-1)]) + ' tokens'));
}
function rows(i){
  var tb = $('as-rows'); tb.textContent = '';
  var n = D.n, lo = Math.max(0, i-8), hi = Math.min(n, i+9);
  for (var k = lo; k < hi; k++){ var r = el('tr');
    r.dataset.index = k; if (k === i) r.className = 'as-current'; if (D.marks[k] === 'mismatch') r.className += ' as-row-mismatch';
    if (vio.indexOf(k) >= 0) r.className += ' as-row-violation';
    if (D.kind === 'fork'){
      var fa = D.panes[0].frames[k], fb = D.panes[1].frames[k];
      if (!fa || !fb || fa.t !== fb.t || fa.id !== fb.id) r.className += ' as-differ';
      r.appendChild(el('td', null, k));
      r.appendChild(el('td', fa ? 'as-al-a' : 'as-al-a as-al-none', fa ? fa.t : '(ended)'));
      r.appendChild(el('td', fb ? 'as-al-b' : 'as-al-b as-al-none', fb ? fb.t : '(ended)'));
      r.appendChild(el('td', null, (fa ? fa.v : '—') + ' / ' + (fb ? fb.v : '—')));
    } else {
      var f = D.panes[0].frames[k];
      [k, f.t, f.id, f.at || '—', f.r || '—', f.v].forEach(function(c){ r.appendChild(el('td', null, c)); });
    }
    r.addEventListener('click', (function(kk){ return function(){ show(kk); }; })(k)); tb.appendChild(r); }
}
function setUrl(i){
  var h = (D.kind === 'fork' && D.divergence !== null && i === D.divergence) ? '#divergence' : '#' + i;
  $('as-link').setAttribute('href', h);
  if (location.hash === h) return;
  try { history.replaceState(null, '', h); } catch (e) { /* a sandboxed frame: keep the page usable */ }
}
// A share link is untrusted text: a malformed escape (`#5%`, `#%E0%A4%A`, `?step=%`) is read as
// the raw text, and anything that is not a step number in range opens at the nearest valid step.
function decodeOr(raw){ try { return decodeURIComponent(raw); } catch (e) { return raw; } }
function startStep(){
  var h = decodeOr((location.hash || '').slice(1)), m = /[?&]step=([^&]*)/.exec(location.search || '');
  var want = (h || (m ? decodeOr(m[1]) : '')).trim();
  if (want === 'divergence') return D.divergence === null || D.divergence === undefined ? 0 : D.divergence;
  if (/^\d+$/.test(want)) return Math.max(0, Math.min(N-1, parseInt(want, 10)));
  return 0;
}
function ctxMode(i){
  var m = $('as-cmode') ? $('as-cmode').value : 'all';
  if (m === 'auto') m = (D.divergence !== null && i >= D.divergence) ? 'diff' : 'all';
  return m;
}
function show(i){
  i = Math.max(0, Math.min(N-1, i|0)); cur = i;
  $('as-slider').value = i; $('as-goto').value = i; $('as-pos').textContent = i + ' / ' + (N-1);
  var marker = $('as-strip').querySelector('.as-strip-cur');
  if (marker){ marker.setAttribute('x', Math.floor(519 * (i / Math.max(N-1,1)))); }
  var fork = D.kind === 'fork', drows = fork ? D.diffs[i] : null;
  var paths = drows ? drows.map(function(r){ return r[0]; }) : null;
  var mode = fork ? ctxMode(i) : 'all';
  var pairs = [];
  D.panes.forEach(function(P, p){
    var pane = document.querySelectorAll('#as-heads .as-pane')[p], f = P.frames[i];
    pane.querySelector('.as-pane-name').textContent = P.name;
    F.drawPanels(pane, f || null, i);  // a side that has ended: the panels empty, and a note
    if (!f){ pane.querySelector('.as-event-slot').appendChild(el('div','as-note as-ended', P.name + ' ended at entry ' + (P.n - 1) + ' (' + P.n + ' entries)')); }
    if (!heat) pairs = pairs.concat(F.framePairs(P.configs, f, p));
  });
  if (!heat) lit = F.paint(chartEl, pairs, lit);
  // the step's verdict above the chart, so it is in view with the chart whatever its size
  var st = $('as-status'); st.textContent = '';
  D.panes.forEach(function(P){ var f = P.frames[i]; if (!f) return;
    var line = el('span', 'as-status-pane'); if (D.panes.length > 1) line.appendChild(el('b', null, P.name + ' '));
    line.appendChild(el('code', 'as-status-type', f.t)); line.appendChild(document.createTextNode(' '));
    var b = F.badge(f); b.className = 'as-status-badge as-badge-' + f.v; line.appendChild(b); line.appendChild(document.createTextNode('  ')); st.appendChild(line); });
  // context: one tree (a log, or the shared prefix of a fork), both trees, or the aligned diff
  var ctxPanes = document.querySelectorAll('#as-ctxs .as-ctx-pane');
  var shared = fork && D.divergence !== null && i < D.divergence && !!drows && drows.length === 0;
  var both = fork && D.panes[0].frames[i] && D.panes[1].frames[i];
  $('as-cdiff').textContent = '';
  if (fork && mode === 'diff' && drows){ diffTable(drows); ctxPanes.forEach(function(c){ c.style.display = 'none'; }); }
  else {
    ctxPanes.forEach(function(c, p){
      var show1 = !fork || !shared || p === 0;
      c.style.display = show1 ? '' : 'none';
      c.querySelector('.as-ctx-name').textContent = !fork ? '' : (shared ? 'both sides (identical before the divergence)' : D.panes[p].name);
      if (show1) renderCtx(p, i, (both && !shared && paths) ? paths : (D.panes[p].frames[i] ? (D.panes[p].frames[i].ch || []) : []));
    });
    if (fork && mode === 'diff' && !drows){ $('as-cdiff').appendChild(el('div','as-note','one side has ended: nothing to compare')); }
  }
  if (fork){
    var s = $('as-summary'); s.textContent = '';
    var la = D.panes[0].n, lb = D.panes[1].n, dv = D.divergence;
    if (dv === null) s.appendChild(el('span', null, 'the logs agree on all ' + D.common + ' shared entries'));
    else if (i < dv) s.appendChild(el('span', null, 'shared entry (prefix of ' + D.common + '); divergence at ' + dv));
    else if (i === dv){
      var ev = [0, 1].map(function(p){ var f = D.panes[p].frames[dv]; return D.panes[p].name + ' ' + (f ? f.t : '(ended)'); });
      s.appendChild(el('span','as-diverge','at the divergence (' + D.divKind + ', entry ' + dv + ': ' + ev.join(' vs ') + ')'));
    }
    else s.appendChild(el('span','as-diverge','past the divergence (' + D.divKind + ') at ' + dv));
    if (i >= la || i >= lb){
      var ended = i >= la ? 0 : 1, other = 1 - ended;
      s.appendChild(el('span','as-ended',' · ' + D.panes[ended].name + ' ended at entry ' + (D.panes[ended].n - 1) + '; ' + D.panes[other].name + ' continues'));
    } else if (drows){
      s.appendChild(el('span','as-meta',' · ' + D.diffCounts[i] + ' differing context path(s)'));  // counted in Python (jsondiff)
    }
  }
  if (D.panes.some(function(P){ return P.paths && P.paths.length; })) activePath(i);
  rows(i); spark(i); setUrl(i);
}
// a collapsed chart: the active path above it, and the expanded box(es) holding an active state
function activePath(i){
  var box = $('as-active-path'); box.textContent = '';
  var on = {};
  D.panes.forEach(function(P, p){ var f = P.frames[i];
    if (!f || f.a === undefined || f.a < 0) return;
    (P.paths[f.a] || []).forEach(function(line){
      box.appendChild(el('div', 'as-active-path', (D.panes.length > 1 ? P.name + ' — ' : '') + line)); });
    P.configs[f.a].forEach(function(id){ on[id] = true; }); });
  // an opened box follows the active path: the box now holding it opens in its place
  var xs = document.querySelectorAll('#as-xcharts details.as-expand'), anyOpen = false;
  xs.forEach(function(d){ anyOpen = anyOpen || d.open; });
  xs.forEach(function(d){ var here = !!on[d.dataset.box];
    d.style.display = here ? '' : 'none'; d.open = here && anyOpen; });
}
(function init(){
  var sl = $('as-slider'); sl.max = N-1; $('as-goto').max = N-1;
  var strip = $('as-strip').querySelector('svg');
  if (strip){ var r = document.createElementNS('http://www.w3.org/2000/svg','rect'); r.setAttribute('class','as-strip-cur');
    r.setAttribute('y',0); r.setAttribute('width',2); r.setAttribute('height',8); r.setAttribute('fill','#263238'); strip.appendChild(r); }
  if (D.note) $('as-note').textContent = D.note;
  if (D.chartNote) $('as-chart-note').appendChild(el('div','as-note as-chart-note', D.chartNote));
  F.zoomable($('as-chart'));
  if (!D.verifiable){ $('as-first-mm').style.display = 'none'; $('as-next-mm').style.display = 'none'; }
  if ($('as-cmode')) $('as-cmode').addEventListener('change', function(){ show(cur); });
  document.querySelectorAll('#as-chart g.as-collapsed').forEach(function(g){
    var d = document.querySelector('#as-xcharts details.as-expand[data-box="' + g.id + '"]');
    if (!d) return;
    g.style.cursor = 'pointer';
    g.addEventListener('click', function(){ d.style.display = ''; d.open = !d.open; if (d.open) d.scrollIntoView({block: 'nearest'}); });
  });
  window.addEventListener('hashchange', function(){ var k = startStep(); if (k !== cur) show(k); });
  sl.addEventListener('input', function(){ show(+sl.value); });
  $('as-goto').addEventListener('change', function(){ show(+$('as-goto').value); });
  $('as-first').addEventListener('click', function(){ show(0); });
  $('as-prev').addEventListener('click', function(){ show(cur-1); });
  $('as-next').addEventListener('click', function(){ show(cur+1); });
  $('as-first-mm').disabled = !mm.length; $('as-next-mm').disabled = !mm.length;
  if (!mm.length){ $('as-first-mm').title = $('as-next-mm').title = 'every recorded hash verified: no mismatch to jump to'; }
  $('as-first-mm').addEventListener('click', function(){ if (mm.length) show(mm[0]); });
  $('as-next-mm').addEventListener('click', function(){ var nx = mm.filter(function(k){ return k > cur; }); if (mm.length) show(nx.length ? nx[0] : mm[0]); });
  if (!vio.length) $('as-first-vio').style.display = 'none';
  else { $('as-first-vio').title = vio.length + ' entr' + (vio.length === 1 ? 'y breaks' : 'ies break') + ' an invariant; the first is ' + vio[0];
    $('as-first-vio').addEventListener('click', function(){ show(vio[0]); }); }
  if ($('as-heat')){ $('as-heat').checked = false; $('as-heat').addEventListener('change', function(){ setHeat($('as-heat').checked); }); }
  if (D.kind !== 'fork') $('as-div').style.display = 'none';
  else { $('as-div').disabled = D.divergence === null; $('as-div').addEventListener('click', function(){ if (D.divergence !== null) show(D.divergence); }); }
  $('as-play').addEventListener('click', function(){
    if (timer){ clearInterval(timer); timer = null; $('as-play').textContent = '▶ play'; return; }
    $('as-play').textContent = '⏸ pause';
    timer = setInterval(function(){ if (cur >= N-1){ clearInterval(timer); timer = null; $('as-play').textContent = '▶ play'; return; } show(cur+1); }, 400);
  });
  document.querySelectorAll('.as-ctx-search').forEach(function(inp){ inp.addEventListener('input', function(){ show(cur); }); });
  document.addEventListener('keydown', function(e){ if (e.target.tagName === 'INPUT') return;
    if (e.key === 'ArrowRight') show(cur+1); else if (e.key === 'ArrowLeft') show(cur-1); });
  show(startStep());
})();
})();
