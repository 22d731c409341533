/**
 * Referral codes: the fixed prefix MARU, a hyphen and the customer id in base 36, upper case
 * (customer 1234567 -> MARU-QGLJ). The code is a function of the customer id, so issuing it twice
 * (even on two processes at once) gives the same code.
 */
export const REFERRAL_PREFIX = 'MARU';
export const REFERRAL_CODE_RE = /^MARU-[0-9A-Z]{1,11}$/;

/** Customer ids are positive integers up to 2^53 - 1. */
export const isCustomerId = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n > 0;

export function referralCode(customerId: number): string {
  if (!isCustomerId(customerId)) throw new RangeError('customer id must be a positive safe integer');
  return `${REFERRAL_PREFIX}-${customerId.toString(36).toUpperCase()}`;
}

/**
 * The customer id of a well-formed code (case ignored), else undefined. The pattern bounds what is
 * parsed; the code issued for the id parsed must then be the code given, which refuses leading
 * zeros and ids past 2^53 - 1.
 */
export function parseReferralCode(code: string): number | undefined {
  const c = code.trim().toUpperCase();
  if (!REFERRAL_CODE_RE.test(c)) return undefined;
  const id = parseInt(c.slice(REFERRAL_PREFIX.length + 1), 36);
  return isCustomerId(id) && referralCode(id) === c ? id : undefined;
}
