/**
 * Requests generated from the hub's own /openapi.json, shared by the fuzz tests: for each
 * operation, wrong types, missing and extra fields, huge strings, control characters, bad JSON,
 * wrong content types, bad path parameters and bad query values (`casesFor`), and a plausible body
 * of the right shape (`plausible`).
 */
import fc from 'fast-check';

export interface Schema {
  type?: string | string[];
  format?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
}
export interface Op {
  parameters?: { name: string; in: 'path' | 'query'; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema?: Schema }> };
  responses: Record<string, unknown>;
  security?: Record<string, unknown>[];
}

export const CONTROL = 'a\u0000b\u0007\u001b[31m\u202e\r\n\ud800';
export const HUGE = 'x'.repeat(200_000);
const BAD_SEGMENTS = ['%00', '%E0%A4%A', 'x'.repeat(400), '..', '%2F..%2Fetc', '%20', CONTROL.slice(0, 3).replace(/\u0000/, '%00'), '-1', '1e309'];

export const typeOf = (s: Schema | undefined) => (Array.isArray(s?.type) ? s!.type[0] : s?.type);
/** A value of the right JSON type (its content is still arbitrary). */
export function plausible(s: Schema | undefined): unknown {
  switch (typeOf(s)) {
    case 'string': return 'a';
    case 'integer':
    case 'number': return 1;
    case 'boolean': return true;
    case 'array': return [];
    case 'object': return {};
    default: return 'a';
  }
}
/** A value of a wrong JSON type. */
function wrongType(s: Schema | undefined): unknown[] {
  switch (typeOf(s)) {
    case 'string': return [12345, null, ['a'], { a: 1 }];
    case 'integer':
    case 'number': return ['12', 1.5, -1e308, null, true];
    case 'boolean': return ['true', 0];
    case 'array': return [{}, 'a'];
    case 'object': return [[], 'a', 0];
    default: return [null, { deep: { deeper: [1, { x: '' }] } }];
  }
}

export interface Case {
  what: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export function concretePath(template: string, bad?: { name: string; value: string }): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => (bad?.name === name ? bad.value : name === 'path' ? 'x' : 'x1'));
}

/** The bad requests of one operation. */
export function casesFor(template: string, method: string, op: Op, seed: number): Case[] {
  const out: Case[] = [];
  const params = op.parameters ?? [];
  const good = concretePath(template);
  // path parameters
  for (const p of params.filter((x) => x.in === 'path')) {
    for (const value of BAD_SEGMENTS) out.push({ what: `path ${p.name}=${value.slice(0, 12)}`, path: concretePath(template, { name: p.name, value }) });
  }
  // query values: wrong type, control characters, huge, repeated, an unknown parameter, bad encoding
  for (const p of params.filter((x) => x.in === 'query')) {
    for (const v of ['%00', encodeURIComponent(CONTROL.slice(0, -1)), '%ED%A0%80', 'x'.repeat(5000), '-1', 'NaN', '[]', '%E0%A4%A']) out.push({ what: `query ${p.name}`, path: `${good}?${p.name}=${v}` });
    out.push({ what: `query ${p.name} twice`, path: `${good}?${p.name}=a&${p.name}=b` });
  }
  out.push({ what: 'unknown query parameter', path: `${good}?zz_unknown=1&access_token=` });
  out.push({ what: 'bad query encoding', path: `${good}?%E0%A4%A=1` });
  if (method === 'get' || method === 'delete') {
    out.push({ what: 'a body where none is read', path: good, body: '{"a":1}', headers: { 'content-type': 'text/plain' } });
    return out;
  }
  // bodies
  const json = op.requestBody?.content['application/json']?.schema;
  const props = json?.properties ?? {};
  const required = json?.required ?? [];
  const valid: Record<string, unknown> = Object.fromEntries(Object.entries(props).map(([k, s]) => [k, plausible(s)]));
  const bodies: [string, unknown][] = [
    ['no body', undefined],
    ['empty object', {}],
    ['array', [valid]],
    ['null', null],
    ['string', 'text'],
    ['extra field', { ...valid, zz_extra: 'x' }],
    ['prototype keys', JSON.parse('{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}}}')],
  ];
  for (const name of required) {
    const { [name]: _missing, ...rest } = valid;
    bodies.push([`missing ${name}`, rest]);
  }
  for (const [name, s] of Object.entries(props)) {
    for (const w of wrongType(s)) bodies.push([`${name} of a wrong type`, { ...valid, [name]: w }]);
    if (typeOf(s) === 'string') {
      bodies.push([`${name} huge`, { ...valid, [name]: HUGE.slice(0, 20_000) }]);
      bodies.push([`${name} control characters`, { ...valid, [name]: CONTROL }]);
    }
  }
  // random JSON values (fast-check, fixed seed: the same cases every run)
  for (const v of fc.sample(fc.jsonValue({ maxDepth: 3 }), { seed, numRuns: 4 })) bodies.push(['random JSON', v]);
  for (const [what, body] of bodies) out.push({ what: `body: ${what}`, path: good, body });
  out.push({ what: 'body over every limit', path: good, body: { ...valid, big: HUGE.repeat(60) } });
  out.push({ what: 'broken JSON', path: good, body: '{"a":', headers: { 'content-type': 'application/json' } });
  out.push({ what: 'JSON with a BOM and trailing garbage', path: good, body: '\ufeff{}}}', headers: { 'content-type': 'application/json' } });
  out.push({ what: 'text/plain', path: good, body: 'a=1', headers: { 'content-type': 'text/plain' } });
  out.push({ what: 'form post', path: good, body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  out.push({ what: 'multipart without boundary', path: good, body: 'x', headers: { 'content-type': 'multipart/form-data' } });
  out.push({ what: 'multipart garbage', path: good, body: '--b\r\nContent-Disposition: form-data; name="zz"\r\n\r\n' + CONTROL, headers: { 'content-type': 'multipart/form-data; boundary=b' } });
  // nested far past the depth JSON is read to, with an Idempotency-Key (whose fingerprint walks the body)
  out.push({ what: 'nested 5,000 deep with an Idempotency-Key', path: good, body: '['.repeat(5000) + ']'.repeat(5000), headers: { 'content-type': 'application/json', 'idempotency-key': `fuzz-${seed}-deep` } });
  out.push({ what: 'lying content-length', path: good, body: '{}', headers: { 'content-type': 'application/json', 'content-length': '999999999' } });
  return out;
}

