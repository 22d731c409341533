import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Logger } from 'pino';
import { retryWhileUnavailable } from '../bus.js';
import { finishedInEffect, fingerprint, type Idempotency, type StoredAnswer } from '../idempotency.js';
import type { Json } from '../store/port.js';
import { Reply, type RequestContext, type RouteDef } from './http.js';
import type { UploadedFile } from './upload-files.js';

/**
 * A route that declares `idempotency` runs its effect once per Idempotency-Key (src/idempotency.ts).
 * The hub begins the key (a replay answers the first answer with `Idempotent-Replayed: true`; a
 * key reused with another request 422; a first attempt still running 409), gives the handler
 * `ctx.idempotency.finish`, whose writes the effect puts into its own atomic update so that the
 * effect and its answer land together, and records the answer itself for a handler that did not.
 * A failed attempt frees its key, retried through a store outage for the key's lease, so the
 * client's retry after a 503 runs again, or replays when the write behind the 503 had landed.
 */
export async function runIdempotent(
  def: RouteDef<any, any, any>,
  ctx: RequestContext<any, any, any>,
  idem: Idempotency,
  log: Logger,
  handler: (ctx: RequestContext<any, any, any>) => unknown = def.handler,
): Promise<unknown> {
  const spec = def.idempotency!;
  const header = ctx.headers['idempotency-key'];
  if (spec.key === 'optional' && (header === undefined || header === '')) return handler(ctx);
  const files = await fileDigests(ctx.files);
  const query = ctx.query !== null && typeof ctx.query === 'object' && Object.keys(ctx.query).length > 0 ? ctx.query : null;
  // the body alone when there is nothing else (the fingerprint the payment relay has always kept)
  const request = files || query ? { query, body: ctx.body ?? null, files } : ctx.body;
  const begun = await idem.begin(spec.scope?.(ctx) ?? ctx.identity?.id ?? 'anon', header, fingerprint(ctx.method, ctx.path, request), spec.namespace);
  if ('replay' in begun) return spec.present ? spec.present(begun.replay, ctx) : replay(begun.replay);
  const ticket = begun.ticket;
  ctx.idempotency = {
    ticket,
    finish: (status, body, headers) => idem.finishWrites(ticket, { status, body, ...(headers ? { headers } : {}) }),
  };
  let out: unknown;
  try {
    out = await handler(ctx);
  } catch (err) {
    retryWhileUnavailable(() => idem.abandon(ticket), Date.now() + idem.leaseMs).catch((e: unknown) => log.warn({ err: e, key: ticket.storeKey }, 'an idempotency key was not freed; it frees itself when its lease ends'));
    throw err;
  }
  const reply = out instanceof Reply ? out : out === undefined ? Reply.empty() : Reply.json(out);
  if (!finishedInEffect(ticket)) {
    // the effect is done: a failure to record its answer is not the client's, who gets the answer
    await idem.finish(ticket, stored(reply)).catch((err: unknown) => log.warn({ err, key: ticket.storeKey }, 'an answer was not recorded under its idempotency key'));
  }
  return reply;
}

function stored(reply: Reply): StoredAnswer {
  const text = reply.body.toString();
  const json = reply.contentType.startsWith('application/json');
  const headers = json || reply.contentType === '' ? reply.headers : { ...reply.headers, 'content-type': reply.contentType };
  return { status: reply.status, body: json ? (JSON.parse(text) as Json) : text, ...(Object.keys(headers).length ? { headers } : {}) };
}

function replay(a: StoredAnswer): Reply {
  const headers: Record<string, string> = { ...(a.headers ?? {}), 'idempotent-replayed': 'true' };
  const type = headers['content-type'];
  if (type === undefined) return a.body === '' ? Reply.empty(a.status, headers) : Reply.json(a.body, a.status, headers);
  delete headers['content-type'];
  return new Reply(a.status, String(a.body), type, headers);
}

/** A multipart request is the same request when its fields and its files' bytes are. */
async function fileDigests(files: UploadedFile[] | undefined): Promise<Json | null> {
  if (!files?.length) return null;
  return Promise.all(
    files.map(async (f) => {
      const h = createHash('sha256');
      for await (const chunk of createReadStream(f.tempPath)) h.update(chunk as Buffer);
      return { field: f.field, filename: f.filename, size: f.size, sha256: h.digest('hex') };
    }),
  );
}
