/**
 * The optimizer's parameter constraint (like backtesting.py's `constraint`): a small expression
 * language, parsed here into a tree and evaluated by walking it; nothing is ever handed to eval or
 * Function. Grammar (docs/trading.md):
 *
 *   expr    := or
 *   or      := and ('||' and)*
 *   and     := not ('&&' not)*
 *   not     := '!' not | compare
 *   compare := sum (('<' | '<=' | '>' | '>=' | '==' | '!=') sum)+      a chain: a < b < c
 *            | '(' expr ')'
 *   sum     := product (('+' | '-') product)*
 *   product := unary (('*' | '/' | '%') unary)*
 *   unary   := '-' unary | atom
 *   atom    := number | parameter name | '(' sum ')'
 *
 * Types are checked when parsing: comparisons take numbers and give a truth value, `&& || !` take
 * truth values, arithmetic takes numbers, and the whole constraint must be a truth value (so
 * `fast + slow` alone is refused). A name must be one of the strategy's parameters.
 */

export class ConstraintError extends Error {}

type Num =
  | { k: 'num'; v: number }
  | { k: 'var'; name: string }
  | { k: 'neg'; a: Num }
  | { k: 'arith'; op: '+' | '-' | '*' | '/' | '%'; a: Num; b: Num };
type Bool =
  | { k: 'cmp'; ops: CmpOp[]; terms: Num[] }
  | { k: 'not'; a: Bool }
  | { k: 'and' | 'or'; a: Bool; b: Bool };
type CmpOp = '<' | '<=' | '>' | '>=' | '==' | '!=';

export const MAX_CONSTRAINT_LENGTH = 500;
/** Nesting (parentheses, unary - and !) is bounded so that no input can exhaust the stack. */
const MAX_DEPTH = 200;

interface Tok {
  t: 'num' | 'name' | 'op' | 'end';
  s: string;
  at: number;
}

function lex(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const num = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i));
    if (num) {
      out.push({ t: 'num', s: num[0], at: i });
      i += num[0].length;
      continue;
    }
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
    if (name) {
      out.push({ t: 'name', s: name[0], at: i });
      i += name[0].length;
      continue;
    }
    const two = src.slice(i, i + 2);
    if (['<=', '>=', '==', '!=', '&&', '||'].includes(two)) {
      out.push({ t: 'op', s: two, at: i });
      i += 2;
      continue;
    }
    if ('<>+-*/%()!'.includes(c)) {
      out.push({ t: 'op', s: c, at: i });
      i++;
      continue;
    }
    throw new ConstraintError(`unexpected character '${c}' at ${i + 1}`);
  }
  out.push({ t: 'end', s: 'the end', at: src.length });
  return out;
}

const CMP = new Set(['<', '<=', '>', '>=', '==', '!=']);

export interface Constraint {
  source: string;
  /** The parameter names it reads. */
  names: string[];
  test(p: Record<string, number>): boolean;
}

/** Parses a constraint over the given parameter names; throws ConstraintError with a message for people. */
export function parseConstraint(src: string, params: readonly string[]): Constraint {
  if (src.length > MAX_CONSTRAINT_LENGTH) throw new ConstraintError(`longer than ${MAX_CONSTRAINT_LENGTH} characters`);
  const toks = lex(src);
  let pos = 0;
  let depth = 0;
  const used = new Set<string>();
  const peek = () => toks[pos]!;
  const where = (t: Tok) => (t.t === 'end' ? 'at the end' : `'${t.s}' at ${t.at + 1}`);
  const expect = (s: string) => {
    const t = peek();
    if (t.s !== s || t.t !== 'op') throw new ConstraintError(`expected '${s}', found ${where(t)}`);
    pos++;
  };
  const deeper = () => {
    if (++depth > MAX_DEPTH) throw new ConstraintError('nested too deeply');
  };

  // a parenthesis may open a truth value or a number: compare() tries the truth value first and
  // parses a number when that fails or a comparison or arithmetic follows the closing parenthesis
  function or(): Bool {
    let a = and();
    while (peek().s === '||') {
      pos++;
      a = { k: 'or', a, b: and() };
    }
    return a;
  }
  function and(): Bool {
    let a = not();
    while (peek().s === '&&') {
      pos++;
      a = { k: 'and', a, b: not() };
    }
    return a;
  }
  function not(): Bool {
    deeper();
    try {
      if (peek().s === '!' && peek().t === 'op') {
        pos++;
        return { k: 'not', a: not() };
      }
      return compare();
    } finally {
      depth--;
    }
  }
  function compare(): Bool {
    const start = pos;
    if (peek().s === '(') {
      // a parenthesised truth value, unless the parenthesis holds a number that a comparison follows
      const save = pos;
      const saveDepth = depth;
      try {
        pos++;
        const inner = or();
        expect(')');
        if (!CMP.has(peek().s) && !'+-*/%'.includes(peek().s)) return inner;
      } catch (e) {
        if (!(e instanceof ConstraintError)) throw e;
      }
      pos = save;
      depth = saveDepth;
    }
    const first = sum();
    const ops: CmpOp[] = [];
    const terms: Num[] = [first];
    while (CMP.has(peek().s)) {
      ops.push(peek().s as CmpOp);
      pos++;
      terms.push(sum());
    }
    if (ops.length === 0) {
      const t = toks[start]!;
      throw new ConstraintError(`a comparison is needed: the expression starting at ${t.at + 1} is a number (for example fast < slow)`);
    }
    return { k: 'cmp', ops, terms };
  }
  function sum(): Num {
    let a = product();
    while (peek().t === 'op' && (peek().s === '+' || peek().s === '-')) {
      const op = peek().s as '+' | '-';
      pos++;
      a = { k: 'arith', op, a, b: product() };
    }
    return a;
  }
  function product(): Num {
    let a = unary();
    while (peek().t === 'op' && (peek().s === '*' || peek().s === '/' || peek().s === '%')) {
      const op = peek().s as '*' | '/' | '%';
      pos++;
      a = { k: 'arith', op, a, b: unary() };
    }
    return a;
  }
  function unary(): Num {
    deeper();
    try {
      if (peek().t === 'op' && peek().s === '-') {
        pos++;
        return { k: 'neg', a: unary() };
      }
      return atom();
    } finally {
      depth--;
    }
  }
  function atom(): Num {
    const t = peek();
    if (t.t === 'num') {
      pos++;
      const v = Number(t.s);
      if (!Number.isFinite(v)) throw new ConstraintError(`number ${t.s} at ${t.at + 1} is out of range`);
      return { k: 'num', v };
    }
    if (t.t === 'name') {
      if (!params.includes(t.s)) throw new ConstraintError(`unknown parameter '${t.s}' at ${t.at + 1} (the strategy has ${params.join(', ')})`);
      pos++;
      used.add(t.s);
      return { k: 'var', name: t.s };
    }
    if (t.t === 'op' && t.s === '(') {
      pos++;
      deeper();
      try {
        const inner = sum();
        expect(')');
        return inner;
      } finally {
        depth--;
      }
    }
    throw new ConstraintError(`expected a number, a parameter or '(', found ${where(t)}`);
  }

  if (peek().t === 'end') throw new ConstraintError('empty');
  const tree = or();
  if (peek().t !== 'end') throw new ConstraintError(`unexpected ${where(peek())}`);

  const num = (n: Num, p: Record<string, number>): number => {
    switch (n.k) {
      case 'num':
        return n.v;
      case 'var':
        return p[n.name]!;
      case 'neg':
        return -num(n.a, p);
      case 'arith': {
        const a = num(n.a, p);
        const b = num(n.b, p);
        return n.op === '+' ? a + b : n.op === '-' ? a - b : n.op === '*' ? a * b : n.op === '/' ? a / b : a % b;
      }
    }
  };
  const cmp = (op: CmpOp, a: number, b: number) =>
    op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : op === '>=' ? a >= b : op === '==' ? a === b : a !== b;
  const bool = (b: Bool, p: Record<string, number>): boolean => {
    switch (b.k) {
      case 'cmp': {
        let left = num(b.terms[0]!, p);
        for (let i = 0; i < b.ops.length; i++) {
          const right = num(b.terms[i + 1]!, p);
          if (!cmp(b.ops[i]!, left, right)) return false;
          left = right;
        }
        return true;
      }
      case 'not':
        return !bool(b.a, p);
      case 'and':
        return bool(b.a, p) && bool(b.b, p);
      case 'or':
        return bool(b.a, p) || bool(b.b, p);
    }
  };
  return { source: src, names: [...used], test: (p) => bool(tree, p) };
}
