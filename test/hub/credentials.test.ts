import { describe, expect, it } from 'vitest';
import { AuthGate } from '../../src/hub/auth.js';
import { recheckCredentials } from '../../src/hub/credentials.js';

describe('the check of the tokens open connections hold', () => {
  it('ends the connections of a token that no longer resolves, keeps the others, and asks once per token', async () => {
    const asked: string[] = [];
    const gate = new AuthGate();
    gate.use(async (token) => {
      asked.push(token);
      if (token === 'mt_down') throw new Error('the store does not answer');
      return token === 'mt_live' ? { id: 'u1', name: 'u1', roles: ['editor'], kind: 'account' } : undefined;
    });
    const ended: string[] = [];
    const conn = (token: string, name: string) => ({ token, end: () => ended.push(name) });
    const n = await recheckCredentials(gate, [
      conn('mt_live', 'live-1'),
      conn('mt_gone', 'gone-1'),
      conn('mt_down', 'down-1'),
      conn('mt_gone', 'gone-2'),
      conn('mt_live', 'live-2'),
    ]);
    expect(n).toBe(2);
    // a failed look-up is not a verdict: its connections stay until a round that gets an answer
    expect(ended).toEqual(['gone-1', 'gone-2']);
    expect(asked.sort()).toEqual(['mt_down', 'mt_gone', 'mt_live']);
  });
});
