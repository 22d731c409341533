/**
 * A ninth service plugs in as one folder and one line: its module (test/compose/ninth/module.ts)
 * is built by the composition graph after the provider of what it needs, and its route and topic
 * answer on a real hub, registered the way src/app.ts registers every service.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../src/bus.js';
import { systemClock } from '../../src/clock.js';
import { compose } from '../../src/compose/compose.js';
import { runPhase } from '../../src/compose/module.js';
import type { Platform, ServiceModule } from '../../src/contract.js';
import { loadConfig } from '../../src/config.js';
import { Hub } from '../../src/hub/index.js';
import { outboxModule } from '../../src/outbox/module.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/port.js';
import { inject } from '../support/inject.js';
import { tempDir } from '../support/process.js';
import { connectTopics } from '../support/ws.js';
import { NEWS_TOPIC } from './ninth/routes.js';
import { ninthModule } from './ninth/module.js';

const logger = pino({ level: 'silent' });
let hub: Hub;
let store: Store;
let bus: Bus;
let modules: ServiceModule[];
let url: string;

beforeAll(async () => {
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('ninth'), LOG_LEVEL: 'silent' });
  hub = new Hub({ logger, bodyLimit: 4096, webDir: tempDir('ninth-web'), shutdownGraceMs: 200 });
  store = await openStore(config);
  bus = createBus(store, 'ninth-test', { logger });
  hub.attachBus(bus);
  await bus.start();
  hub.useState(store, systemClock);
  const platform: Platform = { config, logger, clock: systemClock, store, bus, processId: 'ninth-test' };
  // the one line: the ninth module in the list of services
  modules = await compose([ninthModule, outboxModule], platform);
  for (const m of modules) hub.service(m.name, (h) => m.routes(h));
  url = `http://127.0.0.1:${await hub.listen('127.0.0.1', 0)}`;
  await runPhase(modules, 'start', logger, { url });
});
afterAll(async () => {
  await runPhase(modules ?? [], 'stop', logger);
  await hub?.stop();
  await runPhase(modules ?? [], 'close', logger);
  await bus?.close();
  await store?.close();
});

describe('a ninth service, one folder', () => {
  it('is built after the provider of the port it needs, from that port', async () => {
    expect(modules.map((m) => m.name)).toEqual(['outbox', 'ninth']);
    expect(await inject(hub, 'GET', '/api/ninth/hello')).toMatchObject({ status: 200, body: { hello: 'ninth', outbox: true } });
  });

  it('is documented under its own name in /openapi.json', async () => {
    const doc = (await inject(hub, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, { tags: string[] }>> };
    expect(doc.paths['/api/ninth/hello']!.get!.tags).toEqual(['ninth']);
    expect(doc.paths['/api/ninth/news']!.post!.tags).toEqual(['ninth']);
  });

  it('validates its route like every route, and publishes on its topic through the Bus', async () => {
    expect((await inject(hub, 'POST', '/api/ninth/news', { line: '' })).status).toBe(400);
    const client = await connectTopics(url);
    try {
      await client.subscribe(NEWS_TOPIC);
      expect(await inject(hub, 'POST', '/api/ninth/news', { line: 'hello' })).toMatchObject({ status: 200 });
      expect(await client.next()).toMatchObject({ type: 'message', topic: NEWS_TOPIC, data: { line: 'hello' } });
    } finally {
      client.close();
    }
  });

  it('answers unknown_topic for a name its topic does not hold', async () => {
    const client = await connectTopics(url);
    try {
      client.ws.send(JSON.stringify({ type: 'subscribe', topic: 'ninth:other' }));
      expect(await client.next()).toMatchObject({ type: 'error', code: 'unknown_topic', topic: 'ninth:other' });
    } finally {
      client.close();
    }
  });
});
