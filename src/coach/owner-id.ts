import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.js';

/**
 * The X-Service-Owner header. Without COACH_OWNER_SECRET it carries the owner id itself. With a
 * secret it carries `<ownerId>.<signature>`, the signature being base64url(HMAC-SHA256(secret,
 * ownerId)), so nobody acts for an owner whose signed id they were not given.
 */
export const OWNER_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
export const OWNER_HEADER = 'x-service-owner';

export const signOwner = (secret: string, ownerId: string) =>
  `${ownerId}.${createHmac('sha256', secret).update(ownerId).digest('base64url')}`;

/** The owner id a header value names; 401 when it is missing, malformed or wrongly signed. */
export function ownerFromHeader(value: string | undefined, secret: string | undefined): string {
  if (value === undefined || value.trim() === '') {
    throw new AppError('unauthorized', 'owner_required', 'the X-Service-Owner header is required');
  }
  const v = value.trim();
  if (!secret) {
    if (!OWNER_ID_RE.test(v)) throw new AppError('unauthorized', 'invalid_owner', 'X-Service-Owner is not a valid owner id');
    return v;
  }
  const dot = v.lastIndexOf('.');
  const id = dot > 0 ? v.slice(0, dot) : '';
  if (!OWNER_ID_RE.test(id)) throw new AppError('unauthorized', 'invalid_owner', 'X-Service-Owner must be a signed owner id (<id>.<signature>)');
  const want = Buffer.from(signOwner(secret, id));
  const got = Buffer.from(v);
  if (want.length !== got.length || !timingSafeEqual(want, got)) {
    throw new AppError('unauthorized', 'invalid_owner', 'the X-Service-Owner signature does not match');
  }
  return id;
}
