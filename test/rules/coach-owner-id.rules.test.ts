import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { OWNER_HEADER, OWNER_ID_RE, ownerFromHeader, signOwner } from '../../src/coach/owner-id.js';

// X-Service-Owner (docs/coach.md): the owner id itself, or with COACH_OWNER_SECRET the id signed
// as `<id>.<base64url HMAC-SHA256(secret, id)>`. Every refusal is 401 with its own code.

const refusal = (f: () => unknown): AppError => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    expect((e as AppError).kind).toBe('unauthorized');
    return e as AppError;
  }
  throw new Error('expected a refusal');
};
const code = (f: () => unknown): string => refusal(f).code;
const message = (f: () => unknown): string => refusal(f).message;

describe('owner ids without a secret', () => {
  it('names the header in lower case', () => {
    expect(OWNER_HEADER).toBe('x-service-owner');
  });

  it('accepts 1 to 64 characters of letters, digits, _ and -', () => {
    expect(ownerFromHeader('o', undefined)).toBe('o');
    expect(ownerFromHeader('a'.repeat(64), undefined)).toBe('a'.repeat(64));
    expect(ownerFromHeader('  Owner_1-x  ', undefined)).toBe('Owner_1-x');
    expect(code(() => ownerFromHeader('a'.repeat(65), undefined))).toBe('invalid_owner');
    expect(code(() => ownerFromHeader('x.y', undefined))).toBe('invalid_owner');
    expect(code(() => ownerFromHeader('x y', undefined))).toBe('invalid_owner');
    expect(OWNER_ID_RE.test('xa/')).toBe(false);
    expect(OWNER_ID_RE.test('/xa')).toBe(false);
  });

  it('requires the header', () => {
    expect(code(() => ownerFromHeader(undefined, undefined))).toBe('owner_required');
    expect(code(() => ownerFromHeader('   ', undefined))).toBe('owner_required');
    expect(code(() => ownerFromHeader('', 'secret'))).toBe('owner_required');
  });
});

describe('signed owner ids', () => {
  const secret = 's3cret';
  const sig = (id: string, s = secret) => createHmac('sha256', s).update(id).digest('base64url');

  it('signs as <id>.<base64url HMAC-SHA256>', () => {
    expect(signOwner(secret, 'owner-1')).toBe(`owner-1.${sig('owner-1')}`);
  });

  it('accepts the signed id and returns the id alone', () => {
    expect(ownerFromHeader(`owner-1.${sig('owner-1')}`, secret)).toBe('owner-1');
    expect(ownerFromHeader(` owner-1.${sig('owner-1')} `, secret)).toBe('owner-1');
  });

  it('refuses a bare id, a wrong or truncated signature, another secret, another id', () => {
    expect(code(() => ownerFromHeader('owner-1', secret))).toBe('invalid_owner');
    expect(code(() => ownerFromHeader(`.${sig('')}`, secret))).toBe('invalid_owner');
    expect(code(() => ownerFromHeader(`owner-1.${sig('owner-1').slice(1)}`, secret))).toBe('invalid_owner');
    expect(code(() => ownerFromHeader(`owner-1.${sig('owner-1')}x`, secret))).toBe('invalid_owner');
    expect(code(() => ownerFromHeader(`owner-1.${sig('owner-1', 'other')}`, secret))).toBe('invalid_owner');
    expect(code(() => ownerFromHeader(`owner-2.${sig('owner-1')}`, secret))).toBe('invalid_owner');
    expect(code(() => ownerFromHeader(`${'a'.repeat(65)}.${sig('a'.repeat(65))}`, secret))).toBe('invalid_owner');
  });

  it('says what is wrong', () => {
    expect(message(() => ownerFromHeader(undefined, secret))).toBe('the X-Service-Owner header is required');
    expect(message(() => ownerFromHeader('a b', undefined))).toBe('X-Service-Owner is not a valid owner id');
    expect(message(() => ownerFromHeader('owner-1', secret))).toBe('X-Service-Owner must be a signed owner id (<id>.<signature>)');
    expect(message(() => ownerFromHeader(`owner-1.${sig('owner-1', 'other')}`, secret))).toBe('the X-Service-Owner signature does not match');
  });

  it('splits at the last dot', () => {
    expect(code(() => ownerFromHeader(`a.b.${sig('a.b')}`, secret))).toBe('invalid_owner');
  });
});
