// Measures what a projector shows on an Attention Lab page: computed font sizes per kind of text, labels cut
// short (ellipsis, overflow, a chart label outside its chart), and the WCAG contrast of every text on its
// background. Read by tests/e2e/test_presentation_browser.py; returns plain JSON.
(scope) => {
  const main = document.querySelector(scope === 'sidebar' ? '[data-testid=stSidebar]' : '[data-testid=stMain]') || document.body;
  const shown = SHOWN;  // tests/e2e/shown.js, put in by tests/browser.py's probe()
  const ownText = el => [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
  const px = el => parseFloat(getComputedStyle(el).fontSize);
  const name = el => {
    const id = el.closest('[data-testid]');
    return `${el.tagName.toLowerCase()}${id ? '@' + id.getAttribute('data-testid') : ''}: ${(el.textContent || '').trim().slice(0, 40)}`;
  };
  const parse = c => {
    const m = c.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,/]+/).filter(Boolean).map(parseFloat);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  const background = el => {
    // the backgrounds drawn behind the element's centre: an ancestor counts only where its box is under the text
    // (a slider's value is a child of the thumb but drawn above it)
    const r = el.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
    const layers = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const b = e.getBoundingClientRect();
      if (e !== document.documentElement && e !== document.body && (x < b.left || x > b.right || y < b.top || y > b.bottom)) continue;
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  };
  const lum = c => {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const opacity = el => { let o = 1; for (let e = el; e && e.nodeType === 1; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity); return o; };
  const out = {title: [], body: [], chart_title: [], axis_title: [], tick: [], legend: [], annotation: [],
               cell: [], truncated: [], contrast: [], sidebar_expanded: null, background: null};
  const add = (kind, el, text) => out[kind].push([px(el), name(el)]);
  const side = document.querySelector('[data-testid=stSidebar]');
  out.sidebar_expanded = side ? side.getAttribute('data-collapsed') !== 'true' : null;
  out.background = getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor;
  const contrast = (el, fillProp) => {
    const cs = getComputedStyle(el);
    let fg = parse(fillProp ? cs.fill : cs.color);
    if (!fg) return;
    const bg = background(el.parentElement && fillProp ? el.parentElement : el);
    fg = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
    const size = px(el), bold = parseInt(cs.fontWeight) >= 700;
    const need = (size >= 24 || (bold && size >= 18.66)) ? 3 : 4.5;
    out.contrast.push([Math.round(ratio(fg, bg) * 100) / 100, need, name(el)]);
  };
  // page text outside charts: every element with its own text
  const skip = 'script, style, code, pre, .katex, .js-plotly-plot, [data-testid=stIconMaterial], ' +
               '[data-testid=stTooltipIcon], [data-baseweb=tooltip], iframe, svg, [data-testid=stToolbar], ' +
               '[data-testid=stHeader], [data-testid=stDecoration], [data-testid=stStatusWidget]';
  for (const el of main.querySelectorAll('*')) {
    if (el.closest(skip) || !ownText(el) || !shown(el)) continue;
    if (el.closest('[data-testid=stSkipToContent], button:disabled, [aria-disabled=true]')) continue;  // WCAG: inactive
    const widget = el.closest('[data-testid=stElementContainer]');
    if (widget && widget.querySelector(':disabled, [aria-disabled=true], [data-disabled=true]')) continue;  // a disabled widget's label
    if ((parse(getComputedStyle(el).color) || [0, 0, 0, 1])[3] === 0) continue;  // transparent: not drawn
    if (el.closest('h1')) add('title', el); else if (!el.closest('h2, h3, h4, h5, h6')) add('body', el);
    contrast(el, false);
  }
  // truncation: text cut with an ellipsis or clipped by its box, anywhere on the page (sidebar too)
  for (const el of document.querySelectorAll('[data-testid=stApp] *')) {
    if (el.closest('svg, .katex, code, pre, textarea, input, [data-testid=stCodeBlock], [data-testid=stSkipToContent]') || !ownText(el) || !shown(el)) continue;
    const cs = getComputedStyle(el);
    const cut = el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0;
    if ((cs.textOverflow === 'ellipsis' && cut) || (cut && cs.overflowX === 'hidden' && cs.whiteSpace === 'nowrap'))
      out.truncated.push(name(el));
  }
  // charts: every SVG text of plotly, by its role
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    if (!shown(plot)) continue;
    const box = plot.getBoundingClientRect();
    // a text box may reach past the chart by its line spacing (0.35 em) without a glyph being cut
    const inside = el => { const r = el.getBoundingClientRect(), pad = 0.35 * px(el); return r.left >= box.left - 1 && r.right <= box.right + 1 && r.top >= box.top - pad && r.bottom <= box.bottom + pad; };
    for (const t of plot.querySelectorAll('text')) {
      if (t.closest('.hoverlayer, .modebar') || !(t.textContent || '').trim() || !shown(t)) continue;
      let kind = 'tick';
      if (t.closest('.gtitle') || t.classList.contains('gtitle')) kind = 'chart_title';
      else if (t.closest('.g-xtitle, .g-ytitle, .cbtitle') || /^[xy]\d*title$/.test(t.getAttribute('class') || '')) kind = 'axis_title';
      else if (t.closest('.legend')) kind = 'legend';
      else if (t.closest('.annotation')) kind = 'annotation';
      else if (t.closest('.heatmaplayer, .textpoint, .bartext, .hm')) kind = 'cell';
      add(kind, t);
      if (!inside(t)) out.truncated.push('chart ' + kind + ' outside its chart: ' + name(t));
      if (kind !== 'cell' && kind !== 'annotation') contrast(t, true);
    }
  }
  return out;
}
