import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { openStore } from '../../src/store/open.js';
import { partitionContract, sleep, storeContract } from './contract.js';
import { oneAggregate } from './one-aggregate.js';

const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'maru-lmdb-'));
  dirs.push(dir);
  return dir;
};
const removeDirs = async () => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
};

storeContract('lmdb', () => openLmdbStore({ path: freshDir() }), removeDirs);
storeContract('lmdb, one aggregate, partition check on', async () => oneAggregate(await openLmdbStore({ path: freshDir(), partitionCheck: true })));
partitionContract('lmdb', () => openLmdbStore({ path: freshDir(), partitionCheck: true }));

describe('LMDB store', () => {
  afterAll(removeDirs);

  it('keeps values, lists, indexes, counters and TTLs across close and reopen', async () => {
    const path = freshDir();
    const a = await openLmdbStore({ path });
    await a.set('v', { deep: [1, 2, 3] });
    await a.set('short', 1, { ttlMs: 100 });
    await a.set('long', 2, { ttlMs: 60_000 });
    for (let i = 0; i < 5; i++) await a.push('l', i, 3);
    await a.index('z', 'm1', 2);
    await a.index('z', 'm2', 1);
    await a.incr('c', 7);
    await a.update([], () => ({ writes: [{ op: 'set', key: 'u', value: 'from update' }], result: null }));
    const unawaited = a.set('last', 'written just before close');
    await a.close();
    await unawaited;

    await sleep(150);
    const b = await openLmdbStore({ path });
    expect(await b.get('v')).toEqual({ deep: [1, 2, 3] });
    expect(await b.get('short')).toBeUndefined();
    expect(await b.get('long')).toBe(2);
    expect(await b.range('l')).toEqual([2, 3, 4]);
    expect(await b.length('l')).toBe(3);
    expect(await b.indexRange('z')).toEqual([
      { member: 'm2', score: 1 },
      { member: 'm1', score: 2 },
    ]);
    expect(await b.indexCount('z')).toBe(2);
    expect(await b.incr('c')).toBe(8);
    expect(await b.get('u')).toBe('from update');
    expect(await b.get('last')).toBe('written just before close');
    await b.close();
  });

  it('the sweep deletes expired values and nothing else', async () => {
    const store = await openLmdbStore({ path: freshDir() });
    await store.set('gone1', 1, { ttlMs: 30 });
    await store.set('gone2', 2, { ttlMs: 30 });
    await store.set('renewed', 3, { ttlMs: 30 });
    await store.set('renewed', 3, { ttlMs: 60_000 });
    await store.set('permanent', 4, { ttlMs: 30 });
    await store.set('permanent', 4);
    await store.set('later', 5, { ttlMs: 60_000 });
    await sleep(100);
    expect(await store.sweepExpired()).toBe(2);
    expect(await store.sweepExpired()).toBe(0);
    expect(await store.getMany(['gone1', 'gone2', 'renewed', 'permanent', 'later'])).toEqual([
      undefined,
      undefined,
      3,
      4,
      5,
    ]);
    await store.close();
  });

  it('sweeps on its own timer', async () => {
    const store = await openLmdbStore({ path: freshDir(), sweepIntervalMs: 50 });
    await store.set('t', 1, { ttlMs: 20 });
    await sleep(250);
    expect(await store.sweepExpired()).toBe(0);
    await store.close();
  });

  it('openStore without REDIS_URL opens LMDB under DATA_DIR/store', async () => {
    const dataDir = join(freshDir(), 'nested', 'data');
    const store = await openStore({ DATA_DIR: dataDir, REDIS_PREFIX: 'unused:' });
    expect(store.kind).toBe('lmdb');
    await store.set('k', 1);
    await store.close();
    const again = await openLmdbStore({ path: join(dataDir, 'store') });
    expect(await again.get('k')).toBe(1);
    await again.close();
  });

  it('acknowledged writes survive kill -9', async () => {
    const work = freshDir();
    const dbPath = join(work, 'db');
    // A child process runs the adapter, bundled by esbuild; its node_modules resolve to ours.
    symlinkSync(resolve('node_modules'), join(work, 'node_modules'), 'dir');
    const entry = join(work, 'child.ts');
    writeFileSync(
      entry,
      `import { openLmdbStore } from ${JSON.stringify(resolve('src/store/lmdb.ts'))};
       const store = await openLmdbStore({ path: ${JSON.stringify(dbPath)} });
       for (let i = 0; ; i++) {
         await store.update([], () => ({ writes: [{ op: 'set', key: 'k' + i, value: i }, { op: 'push', key: 'log', value: i, cap: 100000 }], result: null }));
         process.stdout.write(i + '\\n');
       }`,
    );
    const out = join(work, 'child.mjs');
    await build({ entryPoints: [entry], outfile: out, bundle: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'silent' });

    const child = spawn(process.execPath, [out], { stdio: ['ignore', 'pipe', 'inherit'] });
    let acked = -1;
    let buf = '';
    const exited = new Promise<void>((done) => child.on('exit', () => done()));
    await new Promise<void>((done, fail) => {
      child.on('exit', (code) => fail(new Error(`child exited early (${code})`)));
      child.stdout.on('data', (chunk: Buffer) => {
        buf += chunk.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) acked = Number(l);
        if (acked >= 300) {
          child.kill('SIGKILL');
          done();
        }
      });
    });
    await exited;

    const store = await openLmdbStore({ path: dbPath });
    const want = Array.from({ length: acked + 1 }, (_, i) => i);
    expect(await store.getMany(want.map((i) => `k${i}`))).toEqual(want);
    const log = await store.range<number>('log');
    expect(log.slice(0, acked + 1)).toEqual(want);
    for (const [i, v] of log.entries()) expect(v).toBe(i);
    expect(await store.get(`k${log.length}`)).toBeUndefined();
    await store.close();
  });
});
