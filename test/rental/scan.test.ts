import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, TEST_PARTNER_PASSWORD, bearer } from '../support/auth.js';
import { clamdAvailable, startClamd, type RunningClamd } from '../support/clamd.js';
import { get, post } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { EICAR } from '../support/uploads.js';
import { applicant, form, threeFiles } from './fixtures.js';

// The public form with a real clamd on loopback (local EICAR signature, no download).
const available = clamdAvailable();

describe.skipIf(!available)('rental form with virus scanning', () => {
  let clamd: RunningClamd;
  let maru: Maru;
  let partner: string;
  beforeAll(async () => {
    clamd = await startClamd();
    maru = await startMaru(
      loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('rental-scan'), LOG_LEVEL: 'silent', CLAMD_URL: clamd.url, ...AUTH_TEST_ENV }),
      { logger: pino({ level: 'silent' }) },
    );
    partner = (await post(maru.url, '/api/partner/login', { password: TEST_PARTNER_PASSWORD })).body.token;
  }, 60_000);
  afterAll(async () => {
    await maru?.stop();
    await clamd?.stop();
  });

  const total = async () => (await get(maru.url, '/api/partner/applications', bearer(partner))).body.counters.total;
  const send = async (files = threeFiles()) => {
    const r = await fetch(`${maru.url}/api/subscriptions`, { method: 'POST', body: form(applicant, files) });
    return { status: r.status, body: (await r.json()) as any };
  };

  it('clean files pass; an infected one is 422 naming the signature, with nothing stored', async () => {
    expect((await send()).status).toBe(201);
    const before = await total();
    const infected = threeFiles();
    infected[1] = { field: 'uniqueNumber', filename: '고유번호증.pdf', data: EICAR };
    const r = await send(infected);
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'infected', details: { field: 'uniqueNumber', signature: expect.stringContaining('Eicar') } });
    expect(await total()).toBe(before);
  });

  it('clamd down is 503 scanner_unavailable, with nothing stored', async () => {
    const before = await total();
    await clamd.stop();
    const r = await send();
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe('scanner_unavailable');
    expect(await total()).toBe(before);
  });
});
