// agentscope context tree (anywidget ESM). The rows arrive as escaped HTML (`base`, now and then)
// and each step sends only `patch`, the RFC 6902 add/remove/replace operations from `base` to the
// rows shown. The rows were escaped in Python; log data is never evaluated or turned into markup.
function rowsOf(model) {
  const rows = (model.get('base') || []).slice();
  for (const op of model.get('patch') || []) {
    const key = String(op.path).slice(1);
    const i = key === '-' ? rows.length : Number(key);
    if (op.op === 'add') rows.splice(i, 0, String(op.value));
    else if (op.op === 'remove') rows.splice(i, 1);
    else if (op.op === 'replace') rows[i] = String(op.value);
  }
  return rows;
}
function render({ model, el }) {
  el.classList.add('as-treew');
  // Folders the reader opened or closed, by JSON Pointer (`data-path`): a step redraws the tree,
  // and the reader's choice outlives it (the kernel's defaults apply to every other folder).
  const chosen = new Map();
  el.addEventListener('click', (e) => {
    const summary = e.target instanceof Element ? e.target.closest('summary') : null;
    const node = summary ? summary.parentElement : null;
    if (node && node.matches('details.as-node') && node.dataset.path !== undefined) {
      chosen.set(node.dataset.path, !node.open); // the click toggles it after this handler
    }
  });
  // The reader's place in a long tree, kept from its scroll events: reading scrollTop during a
  // step would make the browser lay out the page the step just changed, once per step.
  let top = 0;
  el.addEventListener('scroll', (e) => {
    if (e.target instanceof Element && e.target.matches('.as-ctx')) top = e.target.scrollTop;
  }, { capture: true, passive: true });
  let queued = false;
  function show() {
    queued = false;
    el.innerHTML = rowsOf(model).join('');
    if (chosen.size) {
      for (const node of el.querySelectorAll('details.as-node')) {
        const open = chosen.get(node.dataset.path);
        if (open !== undefined) node.open = open;
      }
    }
    const now = top ? el.querySelector('.as-ctx') : null;
    if (now) now.scrollTop = top; // a step keeps the reader's place in a long tree
  }
  function later() { // base and patch of one message: one redraw
    if (!queued) { queued = true; queueMicrotask(show); }
  }
  model.on('change:base', later);
  model.on('change:patch', later);
  show();
}
export { rowsOf };
export default { render };
