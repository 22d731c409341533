import { describe, expect, it } from 'vitest';
import { CompositionError, compose, serviceOrder } from '../../src/compose/compose.js';
import type { Platform, ServiceDefinition } from '../../src/contract.js';
import { SERVICES } from '../../src/compose/services.js';
import { createLogger } from '../../src/log.js';

// Definitions with made-up ports: the graph only reads names.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Def = ServiceDefinition<any, any>;
const def = (name: string, needs: string[], provides: string[], extra: Partial<Def> = {}): Def =>
  ({ name, needs, provides, build: () => ({ name, ports: Object.fromEntries(provides.map((p) => [p, `${name}:${p}`])), routes() {} }), ...extra }) as Def;
const names = (list: Def[]) => list.map((d) => d.name);
const platform = { logger: createLogger('silent'), config: {} } as unknown as Platform;

describe('the composition graph', () => {
  it('puts every service after the providers of what it needs, otherwise in the order listed', () => {
    const order = serviceOrder([def('auth', ['audit'], ['auth']), def('mail', [], ['mailer']), def('rental', ['mailer'], ['audit']), def('coach', [], ['coach'])]);
    expect(names(order)).toEqual(['mail', 'rental', 'auth', 'coach']);
  });

  it('keeps the listed order when nothing is needed', () => {
    expect(names(serviceOrder([def('b', [], []), def('a', [], []), def('c', [], [])]))).toEqual(['b', 'a', 'c']);
  });

  it('refuses a cycle and names it', () => {
    const run = () => serviceOrder([def('free', [], ['x']), def('a', ['pb'], ['pa']), def('b', ['pc'], ['pb']), def('c', ['pa'], ['pc'])]);
    expect(run).toThrow(CompositionError);
    expect(run).toThrow('services need each other in a cycle: a -> b -> c -> a');
  });

  it('refuses a port no service provides, naming the service and the port', () => {
    expect(() => serviceOrder([def('chat', ['intake'], [])])).toThrow('service "chat" needs port "intake", which no service provides');
  });

  it('refuses a port two services provide, and a service listed twice', () => {
    expect(() => serviceOrder([def('a', [], ['p']), def('b', [], ['p'])])).toThrow('port "p" is provided by both "a" and "b"');
    expect(() => serviceOrder([def('a', [], []), def('a', [], [])])).toThrow('service "a" is listed twice');
  });

  it('builds each service from the ports its providers built', async () => {
    const seen: Record<string, unknown> = {};
    const user = def('user', ['p'], [], {
      build: (_p: Platform, needs: Record<string, unknown>) => {
        Object.assign(seen, needs);
        return { name: 'user', ports: {}, routes() {} };
      },
    } as Partial<Def>);
    const modules = await compose([user, def('maker', [], ['p'])], platform);
    expect(modules.map((m) => m.name)).toEqual(['maker', 'user']);
    expect(seen).toEqual({ p: 'maker:p' });
  });

  it('leaves out a service that is not enabled, and refuses one that needs its port', async () => {
    const off = def('demo', [], ['d'], { enabled: () => false });
    expect((await compose([def('a', [], []), off], platform)).map((m) => m.name)).toEqual(['a']);
    await expect(compose([off, def('b', ['d'], [])], platform)).rejects.toThrow('service "b" needs port "d", which no service provides');
  });

  it('refuses a service that does not build a port it declares', async () => {
    const liar = def('liar', [], ['p'], { build: () => ({ name: 'liar', ports: {}, routes() {} }) } as Partial<Def>);
    await expect(compose([liar], platform)).rejects.toThrow('service "liar" did not build its port "p"');
  });

  it('stops and closes what was built when a later service fails to build', async () => {
    const calls: string[] = [];
    const first = def('first', [], ['p'], {
      build: () => ({ name: 'first', ports: { p: 1 }, routes() {}, stop: () => void calls.push('stop first'), close: () => void calls.push('close first') }),
    } as Partial<Def>);
    const broken = def('broken', ['p'], [], {
      build: () => {
        throw new Error('no disk');
      },
    } as Partial<Def>);
    await expect(compose([broken, first], platform)).rejects.toThrow('no disk');
    expect(calls).toEqual(['stop first', 'close first']);
  });

  it("resolves the hub's own services: each after what it needs, the demo last", () => {
    const order = names(serviceOrder(SERVICES));
    expect(order).toHaveLength(SERVICES.length);
    for (const d of SERVICES) {
      for (const port of d.needs) {
        const provider = SERVICES.find((p) => p.provides.includes(port))!;
        expect(order.indexOf(provider.name), `${d.name} needs ${String(port)} of ${provider.name}`).toBeLessThan(order.indexOf(d.name));
      }
    }
    expect(order.at(-1)).toBe('demo');
    // rental follows identity's sign-ins (its partner audit); identity needs nothing
    expect(order.indexOf('auth')).toBeLessThan(order.indexOf('rental'));
  });
});
