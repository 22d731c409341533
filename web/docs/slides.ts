/**
 * Presentation mode's slide rule: split at lines that are exactly `---` (front matter at the top
 * and fenced code blocks do not count); without such lines, split before level 1 and 2 headings.
 */
export function splitSlides(md: string): string[] {
  const lines = md.split('\n');
  let start = 0;
  if (lines[0] === '---') {
    const end = lines.indexOf('---', 1);
    if (end > 0) start = end + 1; // front matter
  }
  const body = lines.slice(start);
  const rules: number[] = [];
  const headings: number[] = [];
  let fence = false;
  body.forEach((l, i) => {
    if (/^(```|~~~)/.test(l)) fence = !fence;
    if (fence) return;
    if (l === '---') rules.push(i);
    else if (/^#{1,2}\s/.test(l) && i > 0) headings.push(i);
  });
  const cut = (at: number[], drop: boolean) => {
    const out: string[] = [];
    let from = 0;
    for (const i of at) {
      out.push(body.slice(from, i).join('\n'));
      from = drop ? i + 1 : i;
    }
    out.push(body.slice(from).join('\n'));
    return out.filter((s) => s.trim() !== '');
  };
  const slides = rules.length ? cut(rules, true) : cut(headings, false);
  return slides.length ? slides : [''];
}

/** A line diff (LCS) for history and the merge screen. */
export function lineDiff(a: string, b: string): { op: ' ' | '+' | '-'; line: string }[] {
  const x = a.split('\n');
  const y = b.split('\n');
  if (x.length * y.length > 4_000_000) return [...x.map((line) => ({ op: '-' as const, line })), ...y.map((line) => ({ op: '+' as const, line }))];
  const n = x.length;
  const m = y.length;
  const dp = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) dp[i]![j] = x[i] === y[j] ? dp[i + 1]![j + 1]! + 1 : Math.max(dp[i + 1]![j]!, dp[i]![j + 1]!);
  const out: { op: ' ' | '+' | '-'; line: string }[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) (out.push({ op: ' ', line: x[i]! }), i++, j++);
    else if (dp[i + 1]![j]! >= dp[i]![j + 1]!) out.push({ op: '-', line: x[i++]! });
    else out.push({ op: '+', line: y[j++]! });
  }
  while (i < n) out.push({ op: '-', line: x[i++]! });
  while (j < m) out.push({ op: '+', line: y[j++]! });
  return out;
}
