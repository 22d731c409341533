import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import type { AuthGate } from '../../src/hub/auth.js';
import { recheckCredentials, WS_CLOSE_INVALID_TOKEN } from '../../src/hub/credentials.js';

// The recheck of the tokens that open connections (WebSockets, SSE streams) hold
// (src/hub/credentials.ts): a token that stopped resolving ends its connections; any other
// failure of the look-up ends nothing; each distinct token is asked once.

/** A gate whose resolve answers from a table: a value resolves, an Error is thrown. */
function gate(answers: Record<string, Error | 'ok'>, asked: string[] = []): AuthGate {
  return {
    resolve: async (token: string) => {
      asked.push(token);
      const a = answers[token];
      if (a instanceof Error) throw a;
      return { id: token, name: token, roles: [], kind: 'account' };
    },
  } as unknown as AuthGate;
}
const invalid = () => new AppError('unauthorized', 'invalid_token', 'the token is unknown, revoked or expired');
const conns = (ended: string[], ...pairs: [string, string][]) => pairs.map(([token, name]) => ({ token, end: () => ended.push(name) }));

describe('the credential recheck', () => {
  it('closes WebSockets with 4401, the mirror of HTTP 401 that clients take as final', () => {
    expect(WS_CLOSE_INVALID_TOKEN).toBe(4401);
  });

  it('asks once per distinct token, however many connections share it', async () => {
    const asked: string[] = [];
    const ended: string[] = [];
    const n = await recheckCredentials(gate({ a: 'ok', b: 'ok' }, asked), conns(ended, ['a', '1'], ['b', '2'], ['a', '3'], ['a', '4']));
    expect(asked).toEqual(['a', 'b']);
    expect(n).toBe(0);
    expect(ended).toEqual([]);
  });

  it('ends every connection of a token that answers invalid_token, and counts them', async () => {
    const ended: string[] = [];
    const n = await recheckCredentials(gate({ a: invalid(), b: 'ok' }), conns(ended, ['a', '1'], ['b', '2'], ['a', '3'], ['a', '4']));
    expect(ended).toEqual(['1', '3', '4']);
    expect(n).toBe(3);
  });

  it('ends nothing when the look-up fails for another reason, and goes on to the next token', async () => {
    const ended: string[] = [];
    const n = await recheckCredentials(
      gate({
        down: new AppError('unavailable', 'store_unavailable', 'the store does not answer'),
        plain: Object.assign(new Error('invalid_token'), { code: 'invalid_token' }),
        forbidden: new AppError('unauthorized', 'unauthorized', 'no token'),
        gone: invalid(),
      }),
      conns(ended, ['down', 'd'], ['plain', 'p'], ['forbidden', 'f'], ['gone', 'g1'], ['gone', 'g2']),
    );
    expect(ended).toEqual(['g1', 'g2']);
    expect(n).toBe(2);
  });

  it('counts across tokens and takes any iterable', async () => {
    const ended: string[] = [];
    function* held() {
      yield* conns(ended, ['x', 'x1'], ['y', 'y1'], ['z', 'z1'], ['y', 'y2']);
    }
    expect(await recheckCredentials(gate({ x: invalid(), y: invalid(), z: 'ok' }), held())).toBe(3);
    expect(ended).toEqual(['x1', 'y1', 'y2']);
    expect(await recheckCredentials(gate({}), [])).toBe(0);
  });
});
