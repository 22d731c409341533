import {
  CHANGE_WORDS,
  EDIT_RULES,
  HANDOFF_WORDS,
  NEED_RULES,
  NO_WORDS,
  NOTHING_WORDS,
  SOURCE_RULES,
  YES_WORDS,
  type EditTarget,
  type KeywordRule,
  type Need,
  type Source,
} from './keywords.js';

/**
 * Keyword classification of free text (rules in src/chat/keywords.ts). Pure: the caller logs the
 * rule that fired.
 */

/** NFKC (composes decomposed jamo, folds full-width forms), lower case, no spacing or punctuation. */
export function normalise(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/[\s\p{P}\p{S}]+/gu, '');
}

export interface Fired<V extends string> {
  value: V;
  /** The keyword (as written in the rules file) that matched. */
  keyword: string;
}

interface Compiled<V extends string> {
  value: V;
  keyword: string;
  norm: string;
}

/** Longest keyword first; on equal length the order of the rules file. */
function compile<V extends string>(rules: KeywordRule<V>[]): Compiled<V>[] {
  const all = rules.flatMap((r) => r.keywords.map((keyword) => ({ value: r.value, keyword, norm: normalise(keyword) })));
  return all
    .map((c, i) => ({ c, i }))
    .sort((a, b) => b.c.norm.length - a.c.norm.length || a.i - b.i)
    .map(({ c }) => c);
}

const SOURCE = compile(SOURCE_RULES);
const NEED = compile(NEED_RULES);
const EDIT = compile(EDIT_RULES);
const words = (list: string[]) => list.map(normalise).sort((a, b) => b.length - a.length);
const YES = words(YES_WORDS);
const NO = words(NO_WORDS);
const HANDOFF = words(HANDOFF_WORDS);
const CHANGE = words(CHANGE_WORDS);

function first<V extends string>(table: Compiled<V>[], norm: string): Fired<V> | undefined {
  const hit = table.find((c) => norm.includes(c.norm));
  return hit && { value: hit.value, keyword: hit.keyword };
}

export interface Classification {
  source?: Fired<Source>;
  need?: Fired<Need>;
  /** A yes (true) or no (false) answer; a no wins when both appear ("아니요 괜찮아요"). */
  yes?: boolean;
  /** The customer asks for a person. */
  handoff: boolean;
  /** A line of the summary named ("연락처"), for a change. */
  edit?: Fired<EditTarget>;
  /** The customer asks to change something ("수정할게요"). */
  change?: true;
}

export function classify(text: string): Classification {
  const norm = normalise(text);
  const out: Classification = { handoff: HANDOFF.some((w) => norm.includes(w)) };
  const source = first(SOURCE, norm);
  if (source) out.source = source;
  const need = first(NEED, norm);
  if (need) out.need = need;
  if (NO.some((w) => norm.includes(w))) out.yes = false;
  else if (YES.some((w) => norm.includes(w))) out.yes = true;
  const edit = first(EDIT, norm);
  if (edit) out.edit = edit;
  if (CHANGE.some((w) => norm.includes(w))) out.change = true;
  return out;
}

const NOTHING = new Set([...YES_WORDS, ...NOTHING_WORDS].map(normalise));
/** "없어요", "특별히 없습니다", "네 없어요", "아니요 없습니다 감사합니다" (normalised). */
const NONE = /^(?:네|예|아니요|아니|아뇨)?(?:특별히|딱히|따로|별로|지금은)?없(?:음|어|어요|어용|습니다|네요|다)?(?:감사합니다)?$/u;

/**
 * An answer that adds nothing to an optional question: nothing but punctuation, a bare yes or
 * "nothing" word as a whole (keywords.ts NOTHING_WORDS and YES_WORDS, a trailing 요 ignored), or a
 * "없어요" form. A remark that only contains such a word is a remark.
 */
export function isNothing(text: string): boolean {
  const norm = normalise(text);
  return norm === '' || NOTHING.has(norm) || NOTHING.has(norm.replace(/요$/u, '')) || NONE.test(norm);
}
