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
  function show() {
    const box = el.querySelector('.as-ctx');
    const top = box ? box.scrollTop : 0;
    el.innerHTML = rowsOf(model).join('');
    const now = el.querySelector('.as-ctx');
    if (now) now.scrollTop = top; // a step keeps the reader's place in a long tree
  }
  model.on('change:base', show);
  model.on('change:patch', show);
  show();
}
export { rowsOf };
export default { render };
