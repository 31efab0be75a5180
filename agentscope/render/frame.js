// agentscope frame renderer: how one step (a frame) is drawn. The one copy of this code is inlined
// into the static player page and bundled into the anywidget front end, so a fix here is a fix to
// both. It reads the frame data of agentscope/render/player.py (`frame_fields`): t event type,
// id, c causation id, at recorded at, p payload, v verdict, r recorded hash, h replayed hash (absent:
// equal to r), x explanation, ig ignored, ac actors [id, src, status, input], tm timers
// [id, delay], plus the chart's element ids (configs[a], en, ex, tk).
// Log data is written with textContent only; nothing from the log is evaluated or parsed as HTML.
// Works as a classic script (a global AS_FRAME) and as the body of an ES module.
var AS_FRAME = (function(){
'use strict';
function el(tag, cls, text){ var e = document.createElement(tag); if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text); return e; }
function ptrJoin(base, key){ return base + '/' + String(key).replace(/~/g,'~0').replace(/\//g,'~1'); }
var MAXS = 200, MAXD = 12, MAXI = 200;
function leafNode(v){
  if (typeof v === 'string'){
    var s = el('span','as-str');
    if (v.length > MAXS){ s.textContent = '"' + v.slice(0, MAXS);
      var more = el('button','as-more','… +' + (v.length - MAXS) + ' chars');
      more.addEventListener('click', function(){ s.textContent = '"' + v + '"'; more.remove(); });
      var w = el('span'); w.appendChild(s); w.appendChild(more); return w; }
    s.textContent = '"' + v + '"'; return s; }
  if (v === null) return el('span','as-lit','null');
  if (typeof v === 'boolean') return el('span','as-lit', String(v));
  if (typeof v === 'number') return el('span','as-num', String(v));
  return el('span','as-meta', String(v));
}
// A JSON value as a collapsible tree: `changed` and `anc` (Sets of JSON Pointers) mark changed
// members and their ancestors, `q` filters by path or value, `budget.n` caps the nodes drawn.
function tree(v, key, path, depth, changed, anc, q, force, budget){
  var isObj = v !== null && typeof v === 'object';
  var selfMatch = force || !q || path.toLowerCase().indexOf(q) >= 0 || String(key).toLowerCase().indexOf(q) >= 0;
  var cls = (changed.has(path) ? ' as-changed' : '') + (anc.has(path) ? ' as-haschange' : '');
  if (isObj){
    var keys = Array.isArray(v) ? v.map(function(_, i){ return String(i); }) : Object.keys(v);
    var size = Array.isArray(v) ? '[' + keys.length + ']' : '{' + keys.length + '}';
    budget.n--;
    if (depth >= MAXD || budget.n < 0){ if (!selfMatch) return null;
      var d0 = el('div','as-leaf' + cls); d0.dataset.path = path; d0.appendChild(el('span','as-k', key));
      d0.appendChild(document.createTextNode(': ')); d0.appendChild(el('span','as-trunc', size + ' (limit)')); return d0; }
    var det = el('details','as-node' + cls); det.dataset.path = path;
    var sum = el('summary'); sum.appendChild(el('span','as-k', key)); sum.appendChild(document.createTextNode(' '));
    sum.appendChild(el('span','as-meta', size)); det.appendChild(sum);
    var any = false, kf = force || (q && selfMatch);
    for (var i = 0; i < keys.length && i < MAXI; i++){
      var ch = tree(Array.isArray(v) ? v[i] : v[keys[i]], keys[i], ptrJoin(path, keys[i]), depth+1, changed, anc, q, kf, budget);
      if (ch){ det.appendChild(ch); any = true; } }
    if (keys.length > MAXI) det.appendChild(el('div','as-leaf as-trunc','… ' + (keys.length - MAXI) + ' more members'));
    if (q && !selfMatch && !any) return null;
    if (depth < 1 || anc.has(path) || (q && !force)) det.open = true;
    return det;
  }
  budget.n--;
  var text = v === null ? 'null' : String(v);
  if (q && !selfMatch && text.toLowerCase().indexOf(q) < 0) return null;
  var d = el('div','as-leaf' + cls); d.dataset.path = path; d.appendChild(el('span','as-k', key));
  d.appendChild(document.createTextNode(': ')); d.appendChild(leafNode(v)); return d;
}
function shortJ(v, n){ var s = JSON.stringify(v); if (s === undefined) s = String(v); n = n || 120; return s.length > n ? s.slice(0, n) + '…' : s; }

// --- the panels: each reads fields of the frame and returns a node (or null: nothing to show) ---
function badge(f){
  var b = el('span','as-badge as-badge-' + f.v); b.dataset.verdict = f.v;
  if (f.h === undefined && f.v !== 'unchecked') f = Object.assign({}, f, {h: f.r});
  var t = {verified: '✓ verified ' + f.r, mismatch: '✗ mismatch: recorded ' + f.r + ', replayed ' + f.h,
    explained: '≈ explained: recorded ' + f.r + ', replayed ' + f.h + ' — ' + (f.x || ''),
    missing: 'no hash recorded' + (f.h ? ' (replayed ' + f.h + ')' : ''),
    unchecked: 'unchecked (recorded ' + (f.r || '—') + ')'}[f.v] || f.v;
  b.textContent = t; if (f.x) b.title = f.x; return b;
}
function eventBox(f, i){
  var d = el('div','as-event');
  d.appendChild(el('span','as-meta','#' + i + ' ')); d.appendChild(el('span','as-event-type', f.t));
  if (f.ig){ var g = el('span','as-ignored','ignored'); g.title = 'the state did not react to this event'; d.appendChild(g); }
  var meta = 'id ' + f.id + (f.c ? ' · caused by ' + f.c : '') + (f.at ? ' · ' + f.at : '');
  d.appendChild(el('span','as-meta',' ' + meta));
  var keys = Object.keys(f.p || {});
  if (keys.length){ var t = tree(f.p, 'payload', '/event', 0, new Set(), new Set(), '', false, {n: 300}); if (t) d.appendChild(t); }
  else d.appendChild(el('span','as-meta',' (no payload)'));
  return d;
}
function table(head, rows){
  var t = el('table','as-table'), h = el('tr');
  head.forEach(function(c){ h.appendChild(el('th', null, c)); }); t.appendChild(h);
  rows.forEach(function(cells){ var r = el('tr'); cells.forEach(function(c){ r.appendChild(el('td', null, c)); }); t.appendChild(r); });
  return t;
}
function actors(f){
  if (!f.ac) return null;  // not replayed
  var d = el('div');
  if (!f.ac.length) d.appendChild(el('div','as-meta','no actors in flight'));
  else d.appendChild(table(['actor','src','status','input'], f.ac.map(function(a){ return [a[0], a[1], a[2], shortJ(a[3], 100)]; })));
  if (!(f.tm || []).length) d.appendChild(el('div','as-meta','no pending timers'));
  else d.appendChild(table(['timer','delay'], f.tm.map(function(a){ return [a[0], shortJ(a[1], 20)]; })));
  return d;
}
function microsteps(f){
  if (!f.mi) return null;  // one microstep (or none): the chart's lit edges say it all
  var ol = el('ol','as-microsteps');
  f.mi.forEach(function(m){
    var li = el('li'); li.appendChild(el('b','as-ms-type', m[0]));
    m[1].forEach(function(t){
      var line = ' ' + (t[0] === 'on' ? '' : t[0] + ': ') + t[1] + ' → ' + (t[2].length ? t[2].join(', ') : t[1]);
      var s = el('span','as-meta', line); if (t[3]) s.title = 'guard: ' + t[3];
      li.appendChild(s);
    });
    ol.appendChild(li);
  });
  return ol;
}
// The panels of a frame, in page order. A new panel is one field in the frame data (Python:
// render/player.py `frame_fields`) and one entry here: `slot` is the class of the element it fills
// (created at the end of the pane when the page has none), `title` an optional heading above it.
var PANELS = [
  {slot: 'as-badge-slot', draw: badge},
  {slot: 'as-event-slot', draw: eventBox},
  {slot: 'as-microsteps-slot', title: 'microsteps', draw: microsteps},
  {slot: 'as-actors', title: 'actors and timers', draw: actors}
];
function slotOf(root, p){
  var s = root.querySelector('.' + p.slot);
  if (s) return s;
  if (p.title) root.appendChild(el('div', 'as-sec ' + p.slot + '-title', p.title));
  s = el('div', p.slot); root.appendChild(s); return s;
}
// Draw every panel of frame `f` (entry `i`; null: clear them) into `root`. Optional `only` names
// the slots to draw, `skip` the slots drawn elsewhere (the widget puts actors beside the context).
function drawPanels(root, f, i, only, skip){
  PANELS.forEach(function(p){
    if ((only && only.indexOf(p.slot) < 0) || (skip && skip.indexOf(p.slot) >= 0)) return;
    var s = slotOf(root, p); s.textContent = '';
    var n = f ? p.draw(f, i) : null;
    if (n) s.appendChild(n);
    var title = root.querySelector('.' + p.slot + '-title'); if (title) title.style.display = n ? '' : 'none';
  });
}

// --- the chart: a frame lights element ids with classes; `lit` remembers what to undo ---
// pairs: [[element id, "class class"], ...]; lookup(id) -> the chart's element (or null).
function paint(lookup, pairs, lit){
  (lit || []).forEach(function(x){ x[0].classList.remove.apply(x[0].classList, x[1]); });
  var out = [];
  (pairs || []).forEach(function(pc){
    var e = lookup(pc[0]); if (!e) return;
    var cls = String(pc[1]).split(' ').filter(function(c){ return c && !e.classList.contains(c); });
    if (cls.length){ e.classList.add.apply(e.classList, cls); out.push([e, cls]); }
  });
  return out;
}
// The [id, classes] pairs of a frame of pane `p` (0: this log / side a; 1: side b of a fork),
// the same classes as render/chart.py's frame_styling.
function framePairs(configs, f, p){
  if (!f || f.a === undefined || f.a < 0) return [];
  var out = [];
  function add(ids, c){ (ids || []).forEach(function(id){ out.push([id, c]); }); }
  if (p === 0){ add(configs[f.a], 'as-active'); add(f.en, 'as-entered'); add(f.ex, 'as-exited'); add(f.tk, 'as-taken'); }
  else { add(configs[f.a], 'as-active-b'); add(f.tk, 'as-taken-b'); }
  return out;
}
// --- the chart's size: it fits its container; a zoom button shows it at full size (at least its
// readable width, data-readable-width: labels >= 9 px) and the container pans (scrolls) ---
function zoomable(box){
  var svg = box.querySelector('svg[data-readable-width]');
  var old = box.parentNode && box.previousElementSibling;
  if (old && old.classList && old.classList.contains('as-zoom')) old.remove();
  if (!svg) return null;
  var w = svg.getAttribute('width') || '', natural = parseFloat(w) * (/pt$/.test(w) ? 4 / 3 : 1);
  var readable = Math.max(+svg.getAttribute('data-readable-width'), natural || 0);  // its full size
  var b = el('button', 'as-zoom', 'zoom in');
  b.title = 'show the chart at a readable size (scroll to pan); again to fit it to the page';
  b.addEventListener('click', function(){
    var on = box.classList.toggle('as-zoomed');
    svg.style.width = on ? readable + 'px' : '';
    b.textContent = on ? 'fit to page' : 'zoom in';
    if (on){ var a = box.querySelector('.as-active'); if (a && a.scrollIntoView) a.scrollIntoView({block: 'nearest', inline: 'center'}); }
  });
  box.parentNode.insertBefore(b, box);
  return b;
}
return {zoomable: zoomable, el: el, tree: tree, shortJ: shortJ, badge: badge, eventBox: eventBox, actors: actors,
  PANELS: PANELS, drawPanels: drawPanels, paint: paint, framePairs: framePairs};
})();
