// agentscope frame panels widget (anywidget ESM, bundled after render/frame.js): the widget side of
// the one frame renderer. The kernel sends the frame data (`frame`, render/player.py's
// frame_fields) and the entry index; AS_FRAME.drawPanels draws the panels the static player draws.
// `only` / `skip` choose the panels of this element (slot classes); log data is textContent only.
function render({ model, el }) {
  el.classList.add('as-root', 'as-framew');
  function draw() {
    const f = model.get('frame');
    const only = model.get('only');
    AS_FRAME.drawPanels(el, f && Object.keys(f).length ? f : null, model.get('index'),
      only && only.length ? only : null, model.get('skip'));
    el.dataset.index = String(model.get('index'));
  }
  model.on('change:frame', draw);
  model.on('change:index', draw);
  draw();
}
export default { render };
