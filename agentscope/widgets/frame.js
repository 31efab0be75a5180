// agentscope frame panels widget (anywidget ESM, bundled after render/frame.js): the widget side of
// the one frame renderer. The kernel sends the frame data (`frame`, render/player.py's
// frame_fields) and the entry index; AS_FRAME.drawPanels draws the panels the static player draws.
// `only` / `skip` choose the panels of this element (slot classes); log data is textContent only.
// `title` (a fork side's name) heads the panels; `note` says why there is no frame (a side ended).
function render({ model, el }) {
  el.classList.add('as-root', 'as-framew');
  const title = document.createElement('b');
  title.className = 'as-pane-name';
  el.append(title);
  const note = document.createElement('div');
  note.className = 'as-note as-ended';
  function draw() {
    const f = model.get('frame');
    const has = !!(f && Object.keys(f).length);
    const only = model.get('only');
    title.textContent = model.get('title') || '';
    title.style.display = title.textContent ? '' : 'none';
    AS_FRAME.drawPanels(el, has ? f : null, model.get('index'), only && only.length ? only : null,
      model.get('skip'));
    if (!note.parentNode) el.append(note);
    note.textContent = has ? '' : (model.get('note') || '');
    note.style.display = note.textContent ? '' : 'none';
    el.dataset.index = String(model.get('index'));
  }
  model.on('change:frame', draw);
  model.on('change:index', draw);
  model.on('change:note', draw);
  draw();
}
export default { render };
