/**
 * The Monte Carlo fan: from the starting capital to the percentiles of the final equity (5–95 and
 * 25–75 bands, the median line) and the band of the lowest equity on the way (5–50), with an
 * equity axis, the trade count along the bottom and every percentile labelled at its end. Drawn
 * in a fixed aspect ratio, so the text is never stretched.
 */
const SVG = 'http://www.w3.org/2000/svg';
const svg = (tag: string, attrs: Record<string, string | number>, text?: string) => {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
};
const money = (v: number) => `$${Math.round(v).toLocaleString('en-US')}`;

export function fanChart(capital: number, final: Record<string, number>, lowest: Record<string, number>, trades: number): SVGSVGElement {
  const [X0, X1, Y0, Y1] = [90, 560, 16, 216];
  const lo = Math.min(capital, final.p5!, lowest.p5!);
  const hi = Math.max(capital, final.p95!);
  const span = hi - lo || 1;
  const y = (v: number) => Y1 - ((v - lo) / span) * (Y1 - Y0);
  const root = svg('svg', { id: 'fan', class: 'fan', viewBox: '0 0 700 250', width: '100%', role: 'img', 'aria-label': `Monte Carlo: final equity p5 ${money(final.p5!)}, median ${money(final.p50!)}, p95 ${money(final.p95!)}` }) as SVGSVGElement;
  // equity axis with five ticks
  for (let k = 0; k <= 4; k++) {
    const v = lo + (span * k) / 4;
    root.append(svg('line', { x1: X0, x2: X1, y1: y(v), y2: y(v), stroke: '#e3e7ec' }));
    root.append(svg('text', { x: X0 - 6, y: y(v) + 4, 'font-size': 11, 'text-anchor': 'end', fill: '#3d4754' }, money(v)));
  }
  root.append(svg('line', { x1: X0, x2: X0, y1: Y0, y2: Y1, stroke: '#5b6675' }));
  root.append(svg('line', { x1: X0, x2: X1, y1: Y1, y2: Y1, stroke: '#5b6675' }));
  root.append(svg('text', { x: X0, y: Y1 + 18, 'font-size': 11, fill: '#3d4754' }, '시작 start'));
  root.append(svg('text', { x: X1, y: Y1 + 18, 'font-size': 11, 'text-anchor': 'end', fill: '#3d4754' }, `${trades}번째 거래 후 · after ${trades} trades`));
  const band = (a: number, b: number, fill: string, name: string) =>
    root.append(svg('polygon', { points: `${X0},${y(capital)} ${X1},${y(a)} ${X1},${y(b)}`, fill, 'data-band': `${a}-${b}`, 'aria-label': name }));
  band(final.p5!, final.p95!, 'rgba(0,114,178,.15)', 'final equity 5–95%');
  band(final.p25!, final.p75!, 'rgba(0,114,178,.3)', 'final equity 25–75%');
  band(lowest.p5!, lowest.p50!, 'rgba(230,159,0,.22)', 'lowest equity 5–50%');
  root.append(svg('line', { x1: X0, y1: y(capital), x2: X1, y2: y(final.p50!), stroke: '#0072b2', 'stroke-width': 2 }));
  // labels at the right end, pushed apart so they never overlap
  const labels = [
    { v: final.p95!, t: `p95 ${money(final.p95!)}` },
    { v: final.p75!, t: `p75 ${money(final.p75!)}` },
    { v: final.p50!, t: `중앙값 median ${money(final.p50!)}` },
    { v: final.p25!, t: `p25 ${money(final.p25!)}` },
    { v: final.p5!, t: `p5 ${money(final.p5!)}` },
    { v: lowest.p5!, t: `최저 lowest p5 ${money(lowest.p5!)}` },
  ].sort((a, b) => b.v - a.v);
  let last = -Infinity;
  for (const l of labels) {
    const ly = Math.max(y(l.v) + 4, last + 13);
    last = ly;
    root.append(svg('text', { x: X1 + 6, y: ly, 'font-size': 11, fill: '#18202b', class: 'pct' }, l.t));
  }
  return root;
}
