// Whether an element is on screen: a box of at least 1 px, not inside a closed expander, and neither it nor an
// ancestor hidden (display, visibility, opacity). Shared by the probes projector.js and overprint.js.
el => {
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1 || el.closest('details:not([open])')) return false;  // a closed expander's content
  for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
    const cs = getComputedStyle(e);
    if (cs.display === 'none' || cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0) return false;
  }
  return true;
}
