// agentscope chart widget (anywidget ESM, bundled after render/frame.js: AS_FRAME is the frame
// renderer the static player uses too). The drawing arrives once (`svg`); each step only sends
// `lit` ([element id, classes] pairs) and AS_FRAME.paint moves the classes. Everything shown was
// escaped in Python; log data is never evaluated.
function render({ model, el }) {
  el.classList.add('as-chartw');
  const head = document.createElement('div');
  const boxes = document.createElement('div');
  const body = document.createElement('div');
  el.append(head, boxes, body);
  let index = new Map();
  let lit = [];
  function reindex() {
    index = new Map();
    el.querySelectorAll('[id]').forEach((e) => { if (!index.has(e.id)) index.set(e.id, e); });
  }
  function restyle() { lit = AS_FRAME.paint((id) => index.get(id) || null, model.get('lit'), lit); }
  function setStep() { el.dataset.step = String(model.get('step')); }
  function setHead() { head.innerHTML = model.get('head') || ''; }
  function setBoxes() {
    // an opened box follows the active path: the box now holding it opens in its place
    const open = !!boxes.querySelector('details[open]');
    boxes.innerHTML = model.get('boxes') || '';
    if (open) boxes.querySelectorAll('details').forEach((d) => { d.open = true; });
    lit = lit.filter(([e]) => body.contains(e));
    reindex(); restyle();
  }
  function setSvg() {
    body.innerHTML = model.get('svg') || '';
    lit = [];
    body.querySelectorAll('g.as-collapsed').forEach((g) => {
      g.style.cursor = 'pointer';
      g.addEventListener('click', () => {
        const d = boxes.querySelector('details[data-box="' + g.id + '"]');
        if (d) { d.open = !d.open; if (d.open) d.scrollIntoView({ block: 'nearest' }); }
      });
    });
    const box = body.querySelector('.as-chart');
    if (box) AS_FRAME.zoomable(box);
    reindex(); restyle();
  }
  model.on('change:svg', setSvg);
  model.on('change:head', setHead);
  model.on('change:boxes', setBoxes);
  model.on('change:lit', restyle);
  model.on('change:step', setStep);
  setStep();
  setSvg();
  setHead();
  setBoxes();
}
export default { render };
