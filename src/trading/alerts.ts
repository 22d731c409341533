import { createHmac, randomBytes } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { badRequest, notFound } from '../errors.js';
import type { Deliver, OutboxItem } from '../outbox.js';
import { outboxWrites } from '../outbox.js';
import type { Json, Store, Write } from '../store/port.js';
import { K, type ProgramEvent } from './program-model.js';

/**
 * Alerts (docs/trading.md "Alerts"): a live program posts its signals, trades and status changes to
 * a webhook its trader gives, signed in the Standard Webhooks manner (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256(secret, id.timestamp.body)>`),
 * enqueued in the outbox in the same store write as the bar that made the event (so an event the
 * store lost is never sent, and one it kept is sent at least once, retried with backoff), the URL
 * checked against private and loopback address ranges when it is set and again, pinned, at every
 * delivery.
 *
 * Store: `trading:program:<program>:alert` (`K.alert`: in the program's aggregate; `program:alert:<program>`
 * for a program of the global layout) {program, url, events, secret, created_by, created_at}. One
 * alert per program.
 */

export const ALERT_DEST = 'trading-alert';
export const ALERT_EVENTS = ['signal', 'trade', 'status'] as const;
export type AlertEvent = (typeof ALERT_EVENTS)[number];
export const MAX_ALERT_URL = 2048;
/** Longest wait for a webhook's answer (the outbox's attempt budget may be shorter). */
const DELIVERY_TIMEOUT_MS = 10_000;

export const alertKey = (program: string) => K.alert(program);
/** How long a deleted program's alert is kept for the events still queued for it (7 days). */
export const ALERT_KEPT_AFTER_DELETE_MS = 7 * 24 * 3600_000;

export interface AlertRecord {
  program: string;
  url: string;
  events: AlertEvent[];
  /** `whsec_` + base64 of 24 random bytes (the signing key is the decoded bytes). */
  secret: string;
  created_by: string | null;
  created_at: string;
}

// ---- addresses ---------------------------------------------------------------------------------

const V4_BLOCKED: [number, number][] = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
].map(([a, bits]) => [v4(a as string), bits as number]);

function v4(a: string): number {
  return a.split('.').reduce((n, x) => n * 256 + Number(x), 0);
}

/** Whether an IP address is private, loopback, link-local, shared, reserved or multicast (IPv4 or IPv6). */
export function isPrivateAddress(address: string): boolean {
  const kind = isIP(address);
  if (kind === 4) {
    const n = v4(address);
    return V4_BLOCKED.some(([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(base / 2 ** (32 - bits)));
  }
  if (kind !== 6) return true;
  const a = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return isPrivateAddress(mapped[1]!);
  if (a === '::' || a === '::1') return true;
  const first = parseInt(a.split(':')[0] || '0', 16);
  return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xff00) === 0xff00 || a.startsWith('64:ff9b:') || a.startsWith('2001:db8:');
}

/** A DNS lookup that refuses private addresses (unless allowed): the delivery connects to what it checked. */
function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: object, cb: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return cb(err, []);
      const list = addresses as LookupAddress[];
      const bad = list.find((x) => !allowPrivate && isPrivateAddress(x.address));
      if (bad || list.length === 0) return cb(Object.assign(new Error(`${hostname} resolves to a private address (${bad?.address ?? 'none'})`), { code: 'private_address' }), []);
      if ((options as { all?: boolean }).all) return cb(null, list);
      cb(null, list[0]!.address, list[0]!.family);
    });
  };
}

/** Checks a webhook URL: http(s), no credentials, at most 2,048 characters, no private or loopback address (resolved). */
export async function checkWebhookUrl(raw: string, allowPrivate: boolean): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badRequest('invalid_body', 'url: not a URL', { issues: [{ field: 'url', message: 'not a URL' }] });
  }
  const refuse = (message: string, code = 'invalid_body') => badRequest(code, `url: ${message}`, { issues: [{ field: 'url', message }] });
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refuse('must be http or https');
  if (url.username || url.password) throw refuse('must not carry credentials');
  if (raw.length > MAX_ALERT_URL) throw refuse(`longer than ${MAX_ALERT_URL} characters`);
  if (allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : await new Promise<string[]>((resolve) => dnsLookup(host, { all: true }, (err, list) => resolve(err ? [] : list.map((x) => x.address))));
  if (addresses.length === 0) throw refuse(`${host} does not resolve`);
  const bad = addresses.find(isPrivateAddress);
  if (bad) throw badRequest('private_address', `url: ${host} is a private, loopback or reserved address (${bad}); webhooks go to public addresses`, { issues: [{ field: 'url', message: 'private address' }], address: bad });
  return url;
}

// ---- signing and delivery ----------------------------------------------------------------------

export const newAlertSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** The Standard Webhooks signature of a body: `v1,<base64 HMAC-SHA256(key, id.timestamp.body)>`. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/**
 * The outbox writes of a bar's events for the program's alert (those of the kinds it asked for),
 * in the outbox partition of `near`, a key of the update they are written with (the program's).
 */
export function alertWrites(alert: Json | undefined, events: ProgramEvent[], near: string): Write[] {
  const a = alert as AlertRecord | undefined;
  if (!a) return [];
  return events
    .filter((e) => (a.events as string[]).includes(e.type))
    .flatMap((e) => outboxWrites({ id: `${ALERT_DEST}:${e.id}`, dest: ALERT_DEST, payload: { program: a.program, url: a.url, event: e as unknown as Json }, createdAt: e.t }, near));
}

/**
 * The outbox's deliverer: posts the event, signed with the program's current alert secret; an item
 * whose alert was removed or moved to another URL is dropped (not sent). A 2xx answer acknowledges
 * it; anything else is retried by the outbox.
 */
export function alertDeliverer(store: Store, opts: { allowPrivate: boolean; now?: () => number }): Deliver {
  const lookup = guardedLookup(opts.allowPrivate);
  return async (item: OutboxItem, signal: AbortSignal) => {
    const { program, url, event } = item.payload as { program: string; url: string; event: { type: string; t: number } };
    const alert = (await store.get(alertKey(program))) as unknown as AlertRecord | undefined;
    if (!alert || alert.url !== url) return;
    const body = JSON.stringify({ type: `program.${event.type}`, timestamp: new Date(event.t).toISOString(), data: event });
    const ts = Math.floor((opts.now ?? Date.now)() / 1000);
    const target = new URL(url);
    const literal = target.hostname.replace(/^\[|\]$/g, '');
    // an address written in the URL is not looked up: checked here
    if (isIP(literal) && !opts.allowPrivate && isPrivateAddress(literal)) throw new Error(`${literal} is a private address`);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    await new Promise<void>((resolve, reject) => {
      const req = send(target, {
        method: 'POST',
        lookup: lookup as never,
        signal,
        timeout: DELIVERY_TIMEOUT_MS,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'maru-webhooks/1',
          'webhook-id': item.id,
          'webhook-timestamp': String(ts),
          'webhook-signature': signWebhook(alert.secret, item.id, ts, body),
        },
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${DELIVERY_TIMEOUT_MS} ms`)));
      req.on('error', reject);
      req.on('response', (res) => {
        res.resume(); // the answer's body is not read
        if (res.statusCode! >= 200 && res.statusCode! < 300) resolve();
        else reject(new Error(`webhook answered ${res.statusCode}`));
      });
      req.end(body);
    });
  };
}

// ---- the alert of a program --------------------------------------------------------------------

export class AlertService {
  constructor(private readonly store: Store, private readonly opts: { allowPrivate: boolean; now?: () => number }) {}

  /** Sets (or replaces) a program's alert; the secret is new each time and shown in this answer only. */
  async set(program: { id: string; created_by: string | null }, input: { url: string; events?: AlertEvent[] | undefined }): Promise<AlertRecord> {
    const url = await checkWebhookUrl(input.url, this.opts.allowPrivate);
    const rec: AlertRecord = {
      program: program.id,
      url: url.toString(),
      events: input.events ?? [...ALERT_EVENTS],
      secret: newAlertSecret(),
      created_by: program.created_by,
      created_at: new Date((this.opts.now ?? Date.now)()).toISOString(),
    };
    await this.store.set(alertKey(program.id), rec as unknown as Json);
    return rec;
  }

  /** The program's alert without its secret; none: 404 `alert_not_found`. */
  async get(program: string): Promise<Omit<AlertRecord, 'secret'>> {
    const rec = (await this.store.get(alertKey(program))) as unknown as AlertRecord | undefined;
    if (!rec) throw notFound('alert_not_found', `program ${program} has no alert`, { id: program });
    const { secret: _s, ...view } = rec;
    return view;
  }

  async remove(program: string): Promise<{ id: string; deleted: true }> {
    if (!(await this.store.del(alertKey(program)))) throw notFound('alert_not_found', `program ${program} has no alert`, { id: program });
    return { id: program, deleted: true };
  }
}
