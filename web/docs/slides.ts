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
