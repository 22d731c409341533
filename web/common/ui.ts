/**
 * The pages' shared parts: the element helpers (instead of a `$` in every file), a notice that
 * replaces the last one, amounts and KST dates written one way, a table with paging, and a form's
 * inline marks (aria-invalid beside a message under the field). The sign-in bar is auth.ts's
 * mountSignIn; every call to the API goes through api.ts.
 */
import { el } from './live.js';
import { ApiError, problemText } from './api.js';

export { el };
export { kst, kstDate, kstSpan, kstTime } from './time.js';

/** The element with this id (the page's own markup: it is there). */
export const byId = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;

// ---- notices ---------------------------------------------------------------------------------------

export type NoticeKind = 'ok' | 'error' | 'info';

/**
 * Shows one notice in `box`, replacing the one before (a success never stays beside a later error):
 * role=status for news, role=alert for a problem. `text` '' clears it.
 */
export function notice(box: HTMLElement, kind: NoticeKind, text: string): void {
  box.replaceChildren();
  box.hidden = !text;
  box.dataset.kind = text ? kind : '';
  box.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  box.className = `notice ${kind === 'error' ? 'error' : kind === 'ok' ? 'ok' : 'muted'}`;
  if (text) box.append(text);
}

/** A notice of a failed call: its message for a person. */
export function problem(box: HTMLElement, err: unknown): void {
  notice(box, 'error', problemText(err));
}

// ---- amounts ---------------------------------------------------------------------------------------

/** Won: "1,234,000원". */
export const won = (n: number): string => `${Math.round(n).toLocaleString('ko-KR')}원`;

/**
 * An amount of minor units with `decimals` places, for people: grouped, at most `shown` decimals
 * (default 2), trailing zeros dropped ("1,234.5"), exact for any size (no float).
 */
export function units(minor: string | bigint, decimals: number, shown = 2): string {
  let v = BigInt(minor);
  const negative = v < 0n;
  if (negative) v = -v;
  const scale = 10n ** BigInt(decimals);
  const keep = 10n ** BigInt(Math.max(decimals - shown, 0));
  // round half up to the shown places
  const rounded = decimals > shown ? ((v + keep / 2n) / keep) * keep : v;
  const whole = (rounded / scale).toLocaleString('en-US');
  const frac = decimals ? (rounded % scale).toString().padStart(decimals, '0').slice(0, Math.min(shown, decimals)).replace(/0+$/, '') : '';
  return `${negative ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

// ---- forms -----------------------------------------------------------------------------------------

/**
 * Marks the fields of `form` named in `problems` (field name -> message): aria-invalid on the field
 * and the message in its `<id>-error` element (made when missing); other fields are cleared. Answers
 * whether anything was marked, and focuses the first marked field.
 */
export function markFields(form: HTMLElement, problems: Record<string, string>): boolean {
  let first: HTMLElement | undefined;
  for (const field of form.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>('input[name], select[name], textarea[name]')) {
    const message = problems[field.name] ?? problems[field.id];
    const id = field.id || field.name;
    let box = document.getElementById(`${id}-error`);
    if (message) {
      field.setAttribute('aria-invalid', 'true');
      if (!box) {
        box = el('p', { class: 'error small field-error', id: `${id}-error` });
        field.insertAdjacentElement('afterend', box);
      }
      const described = new Set((field.getAttribute('aria-describedby') ?? '').split(/\s+/).filter(Boolean));
      described.add(box.id);
      field.setAttribute('aria-describedby', [...described].join(' '));
      box.textContent = message;
      first ??= field;
    } else {
      field.removeAttribute('aria-invalid');
      if (box?.classList.contains('field-error')) box.textContent = '';
    }
  }
  first?.focus();
  return !!first;
}

/**
 * The browser's own checks of a form's fields (required, pattern, type), as field marks in Korean;
 * answers whether the form may be sent.
 */
export function checkForm(form: HTMLFormElement, words: Record<string, string> = {}): boolean {
  const problems: Record<string, string> = {};
  for (const field of form.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>('input[name], select[name], textarea[name]')) {
    if (field.checkValidity()) continue;
    const name = words[field.name] ?? field.getAttribute('aria-label') ?? field.name;
    const v = field.validity;
    problems[field.name] = v.valueMissing ? `${name}: 입력하세요` : v.patternMismatch || v.typeMismatch ? `${name}: 형식이 맞지 않습니다` : v.tooLong ? `${name}: 너무 깁니다` : `${name}: 값을 확인하세요`;
  }
  return !markFields(form, problems);
}

/** A refused call's field problems (400 with issues) marked on the form; answers whether any was. */
export function markRefusal(form: HTMLElement, err: unknown): boolean {
  return err instanceof ApiError && markFields(form, err.fields);
}

// ---- tables with paging ----------------------------------------------------------------------------

export interface Column<T> {
  head: string;
  cell: (row: T) => Node | string;
}

export interface Paged<T> {
  rows: T[];
  total: number;
}

/**
 * A table that loads one page at a time (`load(offset, limit)`), with previous/next buttons and
 * "n–m / total" between them. Answers `reload()` (the current page again) and `first()`.
 */
export function pagedTable<T>(
  box: HTMLElement,
  opts: { caption: string; columns: Column<T>[]; load: (offset: number, limit: number) => Promise<Paged<T>>; limit?: number; empty?: string; onError?: (err: unknown) => void },
): { reload(): Promise<void>; first(): Promise<void> } {
  const limit = opts.limit ?? 20;
  let offset = 0;
  const table = el('table', {}, el('caption', { class: 'sr-only' }, opts.caption), el('thead', {}, el('tr', {}, ...opts.columns.map((c) => el('th', { scope: 'col' }, c.head)))));
  const body = el('tbody');
  table.append(body);
  const prev = el('button', { type: 'button', class: 'secondary' }, '이전 · previous');
  const next = el('button', { type: 'button', class: 'secondary' }, '다음 · next');
  const where = el('span', { class: 'muted small', 'aria-live': 'polite' });
  const wrap = el('div', { class: 'table-scroll' }, table);
  box.replaceChildren(wrap, el('div', { class: 'pager' }, prev, where, next));
  const show = async () => {
    try {
      const { rows, total } = await opts.load(offset, limit);
      body.replaceChildren(
        ...(rows.length ? rows.map((r) => el('tr', {}, ...opts.columns.map((c) => el('td', {}, c.cell(r))))) : [el('tr', {}, el('td', { colspan: String(opts.columns.length), class: 'muted' }, opts.empty ?? '없습니다 · none'))]),
      );
      where.textContent = total ? `${offset + 1}–${offset + rows.length} / ${total}` : '0';
      prev.disabled = offset === 0;
      next.disabled = offset + rows.length >= total;
    } catch (err) {
      opts.onError?.(err);
    }
  };
  prev.addEventListener('click', () => {
    offset = Math.max(0, offset - limit);
    void show();
  });
  next.addEventListener('click', () => {
    offset += limit;
    void show();
  });
  return {
    reload: show,
    first: () => {
      offset = 0;
      return show();
    },
  };
}

/** A button that copies `text` and says so on itself for a moment. */
export function copyButton(text: () => string, label = '복사 · copy'): HTMLButtonElement {
  const b = el('button', { type: 'button', class: 'secondary copy' }, label);
  b.addEventListener('click', () => {
    void navigator.clipboard?.writeText(text()).then(
      () => {
        b.textContent = '복사했습니다 · copied';
        setTimeout(() => (b.textContent = label), 1500);
      },
      () => undefined,
    );
  });
  return b;
}
