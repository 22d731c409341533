import { diffLines } from 'diff';

/** One row of a side-by-side diff: the old line on the left, the new one on the right. */
export interface DiffRow {
  kind: 'same' | 'changed' | 'removed' | 'added';
  left?: { no: number; text: string };
  right?: { no: number; text: string };
}

const lines = (value: string) => {
  const out = value.split('\n');
  if (out.at(-1) === '') out.pop();
  return out;
};

/**
 * Side-by-side rows from the `diff` package's line diff (Myers, linear space: long documents
 * are diffed, never given up on). A removed block followed by an added block is paired row by row
 * as "changed"; the rest stand alone.
 */
export function sideBySide(a: string, b: string): DiffRow[] {
  const rows: DiffRow[] = [];
  let l = 1;
  let r = 1;
  const parts = diffLines(a, b);
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (!p.added && !p.removed) {
      for (const text of lines(p.value)) rows.push({ kind: 'same', left: { no: l++, text }, right: { no: r++, text } });
      continue;
    }
    if (p.removed) {
      const del = lines(p.value);
      const next = parts[i + 1];
      const add = next?.added ? (i++, lines(next.value)) : [];
      for (let k = 0; k < Math.max(del.length, add.length); k++) {
        const left = k < del.length ? { no: l++, text: del[k]! } : undefined;
        const right = k < add.length ? { no: r++, text: add[k]! } : undefined;
        rows.push({ kind: left && right ? 'changed' : left ? 'removed' : 'added', left, right });
      }
      continue;
    }
    for (const text of lines(p.value)) rows.push({ kind: 'added', right: { no: r++, text } });
  }
  return rows;
}

/** A table: old | new, unchanged runs longer than 6 lines folded to their first and last 3. */
export function renderDiff(target: HTMLElement, a: string, b: string, labels: [string, string]): void {
  const rows = sideBySide(a, b);
  const table = document.createElement('table');
  table.className = 'sbs';
  const head = table.createTHead().insertRow();
  for (const t of ['', labels[0], '', labels[1]]) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = t;
    head.append(th);
  }
  const body = table.createTBody();
  const cell = (tr: HTMLTableRowElement, side: DiffRow['left'], cls: string) => {
    const no = tr.insertCell();
    no.className = 'no';
    no.textContent = side ? String(side.no) : '';
    const td = tr.insertCell();
    td.className = side ? cls : 'empty';
    td.textContent = side?.text ?? '';
  };
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (row.kind === 'same') {
      let j = i;
      while (j < rows.length && rows[j]!.kind === 'same') j++;
      if (j - i > 6) {
        for (const x of rows.slice(i, i + 3)) addRow(x);
        const tr = body.insertRow();
        tr.className = 'fold';
        const td = tr.insertCell();
        td.colSpan = 4;
        td.textContent = `⋯ 같은 줄 ${j - i - 6}개 · ${j - i - 6} unchanged lines`;
        for (const x of rows.slice(j - 3, j)) addRow(x);
        i = j - 1;
        continue;
      }
    }
    addRow(row);
  }
  function addRow(row: DiffRow) {
    const tr = body.insertRow();
    tr.dataset.kind = row.kind;
    cell(tr, row.left, row.kind === 'same' ? '' : 'del');
    cell(tr, row.right, row.kind === 'same' ? '' : 'add');
  }
  target.replaceChildren(table);
}
