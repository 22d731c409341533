/**
 * The optimization heat map: the objective over the first two grid axes, each cell coloured on the
 * viridis scale (readable with red-green colour blindness and in grey) with its value written in it,
 * a colour scale with its ends labelled, and both axes named.
 */
const SVG = 'http://www.w3.org/2000/svg';
const svg = (tag: string, attrs: Record<string, string | number>, text?: string) => {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
};

// viridis at 0, 0.25, 0.5, 0.75, 1
const STOPS: [number, number, number][] = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
export function viridis(q: number): string {
  const x = Math.min(1, Math.max(0, q)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const [a, b] = [STOPS[i]!, STOPS[i + 1]!];
  return `rgb(${a.map((v, k) => Math.round(v + (b[k]! - v) * f)).join(',')})`;
}
/** Dark text on the light end of the scale, white on the dark end. */
const ink = (q: number) => (q > 0.42 ? '#111' : '#fff');

const fmt = (v: number) => (Math.abs(v) >= 1000 ? Math.round(v).toLocaleString('en-US') : v.toFixed(Math.abs(v) < 10 ? 2 : 1));

export interface OptimizeRow { params: Record<string, number>; [metric: string]: unknown }

export function heatmap(rows: OptimizeRow[], objective: string): SVGSVGElement {
  const names = Object.keys(rows[0]?.params ?? {});
  const varying = names.filter((k) => new Set(rows.map((x) => x.params[k])).size > 1);
  const [kx, ky] = [varying[0] ?? names[0]!, varying[1]];
  const xs = [...new Set(rows.map((x) => x.params[kx]!))].sort((a, b) => a - b);
  const ys = ky ? [...new Set(rows.map((x) => x.params[ky]!))].sort((a, b) => a - b) : [0];
  const lowerIsBetter = objective === 'max_drawdown';
  const cell = new Map<string, number>();
  for (const x of rows) {
    const key = `${x.params[kx]}|${ky ? x.params[ky] : 0}`;
    const v = x[objective] as number;
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    const better = lowerIsBetter ? Math.min : Math.max;
    cell.set(key, cell.has(key) ? better(cell.get(key)!, v) : v);
  }
  const vals = [...cell.values()];
  const lo = Math.min(...vals);
  const hi = Math.max(...vals);
  const span = hi - lo || 1;
  const q = (v: number) => (lowerIsBetter ? 1 - (v - lo) / span : (v - lo) / span);

  const L = 70;
  const W = 560 / xs.length;
  const H = Math.min(40, 240 / ys.length);
  const plotH = H * ys.length;
  const root = svg('svg', { id: 'heatmap', class: 'heat', viewBox: `0 0 700 ${plotH + 90}`, width: '100%', role: 'img', 'aria-label': `${objective} by ${kx}${ky ? ` and ${ky}` : ''}` }) as SVGSVGElement;
  xs.forEach((x, i) =>
    ys.forEach((y, j) => {
      const v = cell.get(`${x}|${y}`);
      if (v === undefined) return;
      const g = svg('g', {});
      const rect = svg('rect', { x: L + i * W, y: j * H, width: W - 1, height: H - 1, fill: viridis(q(v)), 'data-value': v });
      rect.append(svg('title', {}, `${kx}=${x}${ky ? ` ${ky}=${y}` : ''}: ${objective} ${fmt(v)}`));
      g.append(rect);
      if (W >= 34 && H >= 14) g.append(svg('text', { x: L + i * W + W / 2, y: j * H + H / 2 + 4, 'font-size': 11, 'text-anchor': 'middle', fill: ink(q(v)), class: 'cell-value' }, fmt(v)));
      root.append(g);
    }),
  );
  xs.forEach((x, i) => root.append(svg('text', { x: L + i * W + W / 2, y: plotH + 14, 'font-size': 11, 'text-anchor': 'middle' }, String(x))));
  root.append(svg('text', { x: L + 280, y: plotH + 30, 'font-size': 12, 'text-anchor': 'middle', 'font-weight': 700 }, kx));
  if (ky) {
    ys.forEach((y, j) => root.append(svg('text', { x: L - 6, y: j * H + H / 2 + 4, 'font-size': 11, 'text-anchor': 'end' }, String(y))));
    root.append(svg('text', { x: 12, y: plotH / 2, 'font-size': 12, 'text-anchor': 'middle', 'font-weight': 700, transform: `rotate(-90 12 ${plotH / 2})` }, ky));
  }
  // the colour scale: worst on the left, best on the right
  const defs = svg('defs', {});
  const grad = svg('linearGradient', { id: 'heat-scale' });
  for (let k = 0; k <= 4; k++) grad.append(svg('stop', { offset: `${k * 25}%`, 'stop-color': viridis(k / 4) }));
  defs.append(grad);
  root.append(defs);
  const sy = plotH + 44;
  root.append(svg('rect', { x: L, y: sy, width: 560, height: 12, fill: 'url(#heat-scale)' }));
  root.append(svg('text', { x: L, y: sy + 28, 'font-size': 11 }, `${fmt(lowerIsBetter ? hi : lo)} (나쁨 worse)`));
  root.append(svg('text', { x: L + 560, y: sy + 28, 'font-size': 11, 'text-anchor': 'end' }, `${fmt(lowerIsBetter ? lo : hi)} (좋음 better)`));
  root.append(svg('text', { x: L + 280, y: sy + 28, 'font-size': 11, 'text-anchor': 'middle' }, objective));
  return root;
}
