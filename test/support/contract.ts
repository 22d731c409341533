import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * Contract testing: every JSON answer a test receives through call() is checked against the
 * schema the route declares in the hub's own /openapi.json (the success schema for its status, the
 * one error shape for errors). A route without a declared schema is not checked yet.
 */

interface Operation {
  responses?: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Record<string, unknown>> };
}
interface Compiled {
  routes: { method: string; template: string; re: RegExp; params: number; op: Operation }[];
  doc: Doc;
  validators: Map<string, ValidateFunction>;
}

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
const docs = new Map<string, Promise<Compiled | undefined>>();

function compile(doc: Doc): Compiled {
  const routes: Compiled['routes'] = [];
  for (const [template, ops] of Object.entries(doc.paths)) {
    const re = new RegExp('^' + template.replace(/[.+?^$()|[\]\\]/g, '\\$&').replace(/\{path\}$/, '.*').replace(/\{\w+\}/g, '[^/]+') + '/?$');
    const params = (template.match(/\{/g) ?? []).length;
    for (const [method, op] of Object.entries(ops)) routes.push({ method: method.toUpperCase(), template, re, params, op });
  }
  // static segments win over parameters, as in the router
  routes.sort((a, b) => a.params - b.params);
  return { routes, doc, validators: new Map() };
}

/** One document per hub instance: a port reused by another hub (another test) is another key. */
function load(origin: string, instance: string): Promise<Compiled | undefined> {
  let p = docs.get(`${origin} ${instance}`);
  if (!p) {
    p = fetch(`${origin}/openapi.json`)
      .then(async (r) => (r.ok ? compile((await r.json()) as Doc) : undefined))
      .catch(() => undefined);
    docs.set(`${origin} ${instance}`, p);
  }
  return p;
}

function resolve(schema: Record<string, unknown>, doc: Doc): Record<string, unknown> {
  const ref = schema.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
    return doc.components?.schemas?.[ref.slice('#/components/schemas/'.length)] ?? {};
  }
  return schema;
}

/** Throws when `body` does not match what the route declares for `status`. */
export async function checkContract(url: string, method: string, status: number, body: unknown, requestId = ''): Promise<void> {
  const u = new URL(url);
  if (u.pathname === '/openapi.json') return;
  // the hub's request ids are `<instance prefix>-<n>`
  const c = await load(u.origin, requestId.replace(/-\d+$/, ''));
  if (c) check(c, u.pathname, method, status, body);
}

const byDocument = new WeakMap<object, Compiled>();

/**
 * The same check against a document in hand (an in-process hub's `hub.api.document()`, for answers
 * from hub.inject). The document object is compiled once.
 */
export function checkAgainst(doc: object, pathname: string, method: string, status: number, body: unknown): void {
  if (pathname === '/openapi.json') return;
  let c = byDocument.get(doc);
  if (!c) byDocument.set(doc, (c = compile(doc as Doc)));
  check(c, pathname, method, status, body);
}

function check(c: Compiled, pathname: string, method: string, status: number, body: unknown): void {
  const m = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
  const route = c.routes.find((r) => r.method === m && r.re.test(pathname));
  if (!route) return;
  const schema = route.op.responses?.[String(status)]?.content?.['application/json']?.schema;
  if (!schema) return;
  const key = `${m} ${route.template} ${status}`;
  let validate = c.validators.get(key);
  if (!validate) c.validators.set(key, (validate = ajv.compile(resolve(schema, c.doc))));
  if (!validate(body)) {
    const why = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ');
    throw new Error(`contract: ${key} answered a body its declared schema refuses: ${why}\n${JSON.stringify(body).slice(0, 500)}`);
  }
}
