import { AppError } from '../errors.js';
import { jsonBody, mediaType, validate, type RouteDef } from './http.js';
import { requestScoped } from './request-scoped.js';
import type { HttpResponse } from './uws.js';

/** Reading and parsing a request's body (hub/pipeline.ts): whole, up to a limit, by its reader. */

/** What reading a body needs of the request's context. */
interface Exchange {
  headers: Record<string, string>;
  res: HttpResponse;
  onAbort: (() => void) | undefined;
}

export function readBody(ctx: Exchange, limit: number): Promise<Buffer> {
  // no Content-Length (a chunked body) is NaN here: counted while it arrives
  if (Number(ctx.headers['content-length']) > limit) {
    throw new AppError('too_large', 'payload_too_large', `the body is larger than ${limit} bytes`, { limit });
  }
  const body = new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    ctx.onAbort = () => reject(new AppError('invalid', 'aborted', 'the client went away'));
    ctx.res.onData((chunk, isLast) => {
      if (over) return;
      size += chunk.byteLength;
      if (size > limit) {
        over = true;
        reject(new AppError('too_large', 'payload_too_large', `the body is larger than ${limit} bytes`, { limit }));
        return;
      }
      // uWS reuses the chunk's memory after this call returns: copy it
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) resolve(Buffer.concat(chunks, size));
    });
  });
  return requestScoped(body);
}

export async function parseBody(def: RouteDef<any, any, any>, headers: Record<string, string>, raw: Promise<Buffer> | undefined): Promise<unknown> {
  const spec = def.body!;
  const reader = spec.reader ?? jsonBody;
  const bytes = raw ? await raw : Buffer.alloc(0);
  if (bytes.length === 0 && spec.optional) return validate(spec.schema, undefined, 'body');
  const type = mediaType(headers['content-type']);
  const accepted = spec.multipart ? [...reader.mediaTypes, 'multipart/form-data'] : reader.mediaTypes;
  if (!reader.mediaTypes.includes(type)) {
    if (bytes.length === 0 && !headers['content-type']) {
      throw new AppError('invalid', 'invalid_body', 'a request body is required', { accepts: accepted });
    }
    throw new AppError('unsupported_media', 'unsupported_media_type', `content-type must be ${accepted.join(' or ')}`, { received: type || null });
  }
  return validate(spec.schema, reader.parse(bytes, headers['content-type'] ?? ''), 'body');
}
