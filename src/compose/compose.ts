import { runPhase } from './module.js';
import type { Platform, PortName, Ports, ServiceDefinition, ServiceModule } from '../contract.js';

/**
 * The composition root's graph: the order services are built in, and the build. The contract itself
 * (defineService, the Platform, the ServiceModule, the Ports each service declares) is the
 * platform's, src/contract.ts.
 */

/** A graph that cannot be built: a cycle, a port no service provides, or a port two services provide. */
export class CompositionError extends Error {
  override readonly name = 'CompositionError';
}

// The list holds definitions of different needs; the graph checks what the types cannot.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDefinition = ServiceDefinition<any, any>;

/**
 * The order to build and start the services in: every service after the providers of what it needs,
 * and otherwise in the order listed (a stable topological sort, Kahn's algorithm). Throws a
 * CompositionError naming the services of a cycle, or the service and the port nobody provides.
 */
export function serviceOrder<D extends AnyDefinition>(definitions: readonly D[]): D[] {
  const provider = new Map<string, D>();
  const names = new Set<string>();
  for (const d of definitions) {
    if (names.has(d.name)) throw new CompositionError(`service "${d.name}" is listed twice`);
    names.add(d.name);
    for (const port of d.provides) {
      const other = provider.get(port);
      if (other) throw new CompositionError(`port "${port}" is provided by both "${other.name}" and "${d.name}"`);
      provider.set(port, d);
    }
  }
  const after = new Map<D, Set<D>>(definitions.map((d) => [d, new Set<D>()]));
  for (const d of definitions) {
    for (const port of d.needs) {
      const p = provider.get(port);
      if (!p) throw new CompositionError(`service "${d.name}" needs port "${port}", which no service provides`);
      if (p !== d) after.get(d)!.add(p);
    }
  }
  const order: D[] = [];
  const placed = new Set<D>();
  while (order.length < definitions.length) {
    const next = definitions.find((d) => !placed.has(d) && [...after.get(d)!].every((p) => placed.has(p)));
    if (!next) throw new CompositionError(`services need each other in a cycle: ${describeCycle(definitions.filter((d) => !placed.has(d)), after)}`);
    order.push(next);
    placed.add(next);
  }
  return order;
}

/** One cycle among the services left (each of them waits for another of them), as "a -> b -> a". */
function describeCycle<D extends AnyDefinition>(left: D[], after: Map<D, Set<D>>): string {
  const path: D[] = [];
  let at = left[0]!;
  while (!path.includes(at)) {
    path.push(at);
    at = [...after.get(at)!].find((p) => left.includes(p))!;
  }
  return [...path.slice(path.indexOf(at)), at].map((d) => d.name).join(' -> ');
}

/**
 * Builds the enabled services in graph order, each from the ports its providers built. A service
 * that is not enabled provides nothing, so a service that needs one of its ports is refused.
 */
export async function compose(definitions: readonly AnyDefinition[], platform: Platform): Promise<ServiceModule[]> {
  const order = serviceOrder(definitions.filter((d) => d.enabled?.(platform) ?? true));
  const ports: Partial<Ports> = {};
  const modules: ServiceModule[] = [];
  try {
    for (const d of order) {
      const needs = Object.fromEntries(d.needs.map((n: PortName) => [n, ports[n]]));
      const built = await d.build(platform, needs);
      modules.push(built);
      for (const port of d.provides as PortName[]) {
        if (built.ports[port] === undefined) throw new CompositionError(`service "${d.name}" did not build its port "${port}"`);
        Object.assign(ports, { [port]: built.ports[port] });
      }
    }
  } catch (err) {
    // what was built before the failure lets go of its workers, peers and files
    await runPhase(modules, 'stop', platform.logger);
    await runPhase(modules, 'close', platform.logger);
    throw err;
  }
  return modules;
}
