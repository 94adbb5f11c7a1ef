// Overprint and first-screen checks of the plotly charts on an Attention Lab page, by geometry (read by
// tests/e2e/test_presentation_browser.py, checked against deliberately broken figures in
// tests/e2e/test_overprint_probe_browser.py). Returns plain JSON:
//   {problems: ["chart 2 «title…»: title line «…» over tick label «…»", …],
//    first_chart_top: px from the top of the document to the first chart (null: no chart), viewport: innerHeight}
// Per chart (.js-plotly-plot):
//  * the title (.gtitle) has at most MAX_TITLE_LINES lines, no line of it reaches past the chart's top, left or
//    right edge (where the SVG cuts it), and no line of it intersects a tick label (every axis,
//    x2/y2 … included, colour bars too), an axis title, a colour-bar title, the legend, an annotation or a plot
//    area (each subplot's drag rectangle / background);
//  * an annotation (a subplot title, a note) that is not inside a plot area (text written in a cell is, by design)
//    intersects no other such annotation, no tick label and no axis title;
//  * an axis title intersects no tick label (a colour bar's title and its own ticks excepted: plotly lays those out)
//    and no plot area (another subplot's, where subplots are too close).
// Text boxes are the glyph boxes the browser reports, less 15 % of the font size top and bottom (a text box carries
// the line's leading, where no glyph is drawn); two boxes overprint when they overlap by more than 1 px each way.
(opts) => {
  const MAX_TITLE_LINES = (opts && opts.maxTitleLines) || 2;
  const root = document.querySelector((opts && opts.scope) || '[data-testid=stMain]') || document.body;
  const shown = SHOWN;  // tests/e2e/shown.js, put in by tests/browser.py's probe()
  const px = el => parseFloat(getComputedStyle(el).fontSize) || 0;
  const rect = el => { const r = el.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
  const textBox = el => {
    const r = rect(el), pad = 0.15 * px(el.closest('text') || el);
    return {l: r.l, r: r.r, t: r.t + pad, b: r.b - pad};
  };
  const hit = (a, b) => Math.min(a.r, b.r) - Math.max(a.l, b.l) > 1 && Math.min(a.b, b.b) - Math.max(a.t, b.t) > 1;
  const within = (a, b) => a.l >= b.l - 1 && a.r <= b.r + 1 && a.t >= b.t - 1 && a.b <= b.b + 1;
  const words = el => (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 50);
  const texts = (plot, test) => [...plot.querySelectorAll('text')].filter(t => test(t) && (t.textContent || '').trim() && shown(t));
  const gClass = t => (t.parentElement && t.parentElement.getAttribute('class')) || '';
  const out = {problems: [], first_chart_top: null, viewport: window.innerHeight, charts: 0};
  const plots = [...root.querySelectorAll('.js-plotly-plot')].filter(shown);
  if (plots.length) out.first_chart_top = plots[0].getBoundingClientRect().top + window.scrollY;
  plots.forEach((plot, n) => {
    out.charts += 1;
    const titleEl = plot.querySelector('.g-gtitle text.gtitle, text.gtitle');
    const say = msg => out.problems.push(`chart ${n + 1} «${titleEl ? words(titleEl) : 'untitled'}»: ${msg}`);
    // plot areas: every subplot's drag rectangle, or its background where there is none
    const areas = [...plot.querySelectorAll('.draglayer .nsewdrag, .bglayer rect.bg')].filter(shown).map(rect);
    const ticks = texts(plot, t => /^[xy]\w*tick$/.test(gClass(t)));  // xtick, x2tick, ycb…tick (a colour bar)
    const axisTitles = texts(plot, t => /^[xy]\w*title$/.test(t.getAttribute('class') || '') || !!t.closest('.cbtitle'));
    const anns = texts(plot, t => !!t.closest('.annotation'));
    const legends = [...plot.querySelectorAll('.legend > .bg, .legend rect.bg')].filter(shown);
    if (titleEl && shown(titleEl) && words(titleEl)) {
      const lines = [...titleEl.querySelectorAll('tspan.line')].filter(shown);
      const boxes = lines.length ? lines : [titleEl];
      if (boxes.length > MAX_TITLE_LINES) say(`title of ${boxes.length} lines (at most ${MAX_TITLE_LINES})`);
      const svg = rect(plot.querySelector('.main-svg') || plot);
      for (const line of boxes) {
        const b = textBox(line);
        if (b.t < svg.t - 1 || b.l < svg.l - 1 || b.r > svg.r + 1) say(`title line «${words(line)}» cut by the chart's edge`);
        for (const t of ticks) if (hit(b, textBox(t))) { say(`title line «${words(line)}» over tick label «${words(t)}»`); break; }
        for (const t of axisTitles) if (hit(b, textBox(t))) say(`title line «${words(line)}» over axis title «${words(t)}»`);
        for (const t of anns) if (hit(b, textBox(t))) say(`title line «${words(line)}» over annotation «${words(t)}»`);
        for (const l of legends) if (hit(b, rect(l))) say(`title line «${words(line)}» over the legend`);
        if (areas.some(a => hit(b, a))) say(`title line «${words(line)}» over the plot area`);
      }
    }
    const loose = anns.filter(t => !areas.some(a => within(rect(t), a)));
    loose.forEach((a, i) => {
      const b = textBox(a);
      for (const c of loose.slice(i + 1)) if (hit(b, textBox(c))) say(`annotation «${words(a)}» over annotation «${words(c)}»`);
      for (const t of ticks) if (hit(b, textBox(t))) { say(`annotation «${words(a)}» over tick label «${words(t)}»`); break; }
      for (const t of axisTitles) if (hit(b, textBox(t))) say(`annotation «${words(a)}» over axis title «${words(t)}»`);
    });
    for (const at of axisTitles) {
      const b = textBox(at);
      for (const t of ticks) {
        if (at.closest('.colorbar, .cbtitle') && t.closest('.colorbar')) continue;  // a colour bar lays out its own
        if (hit(b, textBox(t))) { say(`axis title «${words(at)}» over tick label «${words(t)}»`); break; }
      }
      if (!at.closest('.colorbar, .cbtitle') && areas.some(a => hit(b, a))) say(`axis title «${words(at)}» over a plot area`);
    }
  });
  return out;
}
