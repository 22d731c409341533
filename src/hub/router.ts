/**
 * Method + path router with `:param` segments and a trailing `*` wildcard. Static segments win over
 * parameters, parameters over the wildcard. Returns the allowed methods when the path exists under
 * other methods (for a 405 with Allow).
 */
export type Match<T> =
  | { kind: 'found'; value: T; params: Record<string, string>; pattern: string }
  | { kind: 'method'; allowed: string[] }
  | { kind: 'none' };

interface Node<T> {
  statics: Map<string, Node<T>>;
  param?: { name: string; node: Node<T> };
  wildcard?: Map<string, { value: T; pattern: string }>;
  handlers: Map<string, { value: T; pattern: string }>;
}

const newNode = <T>(): Node<T> => ({ statics: new Map(), handlers: new Map() });

export class Router<T> {
  private root: Node<T> = newNode();
  /** Patterns without parameters, by their exact path: one map look-up, no splitting. */
  private readonly exact = new Map<string, Map<string, { value: T; pattern: string }>>();

  add(method: string, pattern: string, value: T): void {
    if (!pattern.startsWith('/')) throw new Error(`route pattern must start with /: ${pattern}`);
    if (!/[:*]/.test(pattern)) {
      let m = this.exact.get(pattern);
      if (!m) this.exact.set(pattern, (m = new Map()));
      if (!m.has(method)) m.set(method, { value, pattern });
    }
    const segs = split(pattern);
    let node = this.root;
    for (let i = 0; i < segs.length; i++) {
      const seg = segs[i]!;
      if (seg === '*') {
        if (i !== segs.length - 1) throw new Error(`* must be last in ${pattern}`);
        node.wildcard ??= new Map();
        setOnce(node.wildcard, method, { value, pattern }, pattern);
        return;
      }
      if (seg.startsWith(':')) {
        const name = seg.slice(1);
        if (node.param && node.param.name !== name) {
          throw new Error(`conflicting parameter names :${node.param.name} and :${name} in ${pattern}`);
        }
        node.param ??= { name, node: newNode() };
        node = node.param.node;
      } else {
        let next = node.statics.get(seg);
        if (!next) node.statics.set(seg, (next = newNode()));
        node = next;
      }
    }
    setOnce(node.handlers, method, { value, pattern }, pattern);
  }

  /** `path` is the raw URL path (still percent-encoded); parameters are decoded. Throws URIError. */
  match(method: string, path: string): Match<T> {
    const exact = this.exact.get(path)?.get(method);
    if (exact) return { kind: 'found', value: exact.value, params: {}, pattern: exact.pattern };
    const segs = split(path);
    const params: Record<string, string> = {};
    const found = walk(this.root, segs, 0, params);
    if (!found) return { kind: 'none' };
    const hit = found.get(method) ?? (method === 'HEAD' ? found.get('GET') : undefined);
    if (hit) return { kind: 'found', value: hit.value, params, pattern: hit.pattern };
    const allowed = [...found.keys()];
    if (allowed.includes('GET') && !allowed.includes('HEAD')) allowed.push('HEAD');
    return { kind: 'method', allowed: allowed.sort() };
  }
}

function walk<T>(
  node: Node<T>,
  segs: string[],
  i: number,
  params: Record<string, string>,
): Map<string, { value: T; pattern: string }> | undefined {
  if (i === segs.length) {
    if (node.handlers.size > 0) return node.handlers;
    return node.wildcard && node.wildcard.size > 0 ? withRest(node.wildcard, params, '') : undefined;
  }
  const seg = segs[i]!;
  const stat = node.statics.get(seg);
  if (stat) {
    const r = walk(stat, segs, i + 1, params);
    if (r) return r;
  }
  if (node.param && seg !== '') {
    const r = walk(node.param.node, segs, i + 1, params);
    if (r) {
      params[node.param.name] = decodeURIComponent(seg);
      return r;
    }
  }
  if (node.wildcard) return withRest(node.wildcard, params, segs.slice(i).join('/'));
  return undefined;
}

function withRest<V>(m: V, params: Record<string, string>, rest: string): V {
  params['*'] = rest;
  return m;
}

function split(path: string): string[] {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed === '/' ? [] : trimmed.slice(1).split('/');
}

function setOnce<V>(m: Map<string, V>, method: string, v: V, pattern: string): void {
  if (m.has(method)) throw new Error(`duplicate route ${method} ${pattern}`);
  m.set(method, v);
}

/** A route group's prefix: starts with `/`, no trailing `/`, no wildcard; returned as given. */
export function checkPrefix(prefix: string): string {
  if (!/^(\/[^/*?#]+)+$/.test(prefix)) throw new Error(`a route prefix is /segment[/segment...] without a trailing / or *: ${prefix}`);
  return prefix;
}

/** A path declared under a prefix: `/api/token` + `/wallet` -> `/api/token/wallet`; `/` is the prefix itself. */
export function mountPath(prefix: string, path: string): string {
  if (!path.startsWith('/')) throw new Error(`a route path under ${prefix} must start with /: ${path}`);
  return path === '/' ? prefix : `${prefix}${path}`;
}
