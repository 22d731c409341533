import { HANDOFF_WORDS, NEED_RULES, NO_WORDS, SOURCE_RULES, YES_WORDS, type KeywordRule, type Need, type Source } from './keywords.js';

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
const words = (list: string[]) => list.map(normalise).sort((a, b) => b.length - a.length);
const YES = words(YES_WORDS);
const NO = words(NO_WORDS);
const HANDOFF = words(HANDOFF_WORDS);

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
  return out;
}
