/** The dashboard's small SVG equity charts (the live program's equity, the compare lines). */
const nf = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
const SVG = 'http://www.w3.org/2000/svg';
export const svg = (tag: string, attrs: Record<string, string | number>) => {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
};

/** Plot area inside the 600 x 180 view box: labels above and below, the lines between. */
const PLOT_TOP = 22;
const PLOT_BOTTOM = 160;
// Okabe-Ito: told apart with the common colour blindnesses
export const COLORS = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9'];

/** Draws equity series on one scale, with the highest value labelled above and the lowest below. */
export function plot(chart: SVGSVGElement, series: { t: number; equity: number }[][]): void {
  const all = series.flat().map((p) => p.equity);
  const lo = Math.min(...all);
  const hi = Math.max(...all);
  const span = hi - lo || 1;
  const y = (v: number) => (PLOT_BOTTOM - ((v - lo) / span) * (PLOT_BOTTOM - PLOT_TOP)).toFixed(1);
  series.forEach((s, k) => {
    const d = s.map((p, i) => `${((i / Math.max(1, s.length - 1)) * 600).toFixed(1)},${y(p.equity)}`).join(' ');
    chart.append(svg('polyline', { points: d, fill: 'none', stroke: COLORS[k % COLORS.length]!, 'stroke-width': 2, 'vector-effect': 'non-scaling-stroke' }));
  });
  const top = svg('text', { x: 4, y: 14, 'font-size': 12, fill: 'var(--muted)' });
  top.textContent = nf.format(hi);
  const bottom = svg('text', { x: 4, y: 176, 'font-size': 12, fill: 'var(--muted)' });
  bottom.textContent = nf.format(lo);
  chart.append(top, bottom);
}

export function lineChart(id: string, series: { t: number; equity: number }[][]): SVGSVGElement {
  const chart = svg('svg', { id, class: 'chart', viewBox: '0 0 600 180', preserveAspectRatio: 'none' }) as SVGSVGElement;
  plot(chart, series);
  return chart;
}
