import { createRemoteJWKSet, customFetch, importSPKI, jwtVerify, type JWTVerifyGetKey, type CryptoKey, type FetchImplementation } from 'jose';
import { AppError } from '../errors.js';
import type { Clock } from '../clock.js';
import { PeerError, peerRequest } from '../peers/index.js';

/**
 * The payment relay's users are the banking service's: its single sign-on token is a signed JWT
 * (ES256 or EdDSA) in `Authorization: Bearer`. Verified with `jose` against the banking service's
 * JWKS (SSO_JWKS_URL, cached by jose, refetched on an unknown kid at most every 30 s, fetched through
 * the hub's one peer client, src/peers/http-client.ts, within 2 s) or a configured
 * PEM public key (SSO_PUBLIC_KEY). `sub` is the user id; `exp` is always checked, `iss` and `aud`
 * when configured. Missing: 401 unauthorized; expired, badly signed or malformed: 401 invalid_token;
 * the bank's key set out of reach (refused, timed out, not a key set): 503 sso_unavailable.
 */

export const USER_ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;

export interface SsoOptions {
  jwksUrl?: string;
  publicKeyPem?: string;
  issuer?: string;
  audience?: string;
  clock: Clock;
}

/** How long the bank's key set may take (connect, request and the whole answer). */
const JWKS_TIMEOUT_MS = 2000;

/**
 * jose's fetch of the key set, made by the peer client: the same deadline, size limit and PeerError
 * (timeout, network, protocol) as every peer call; no redirect is followed. The answer goes back to
 * jose as a Response, which takes only a 200 holding a JSON key set.
 */
const fetchKeySet: FetchImplementation = async (url, init) => {
  const headers: Record<string, string> = {};
  init.headers.forEach((v, k) => void (headers[k] = v));
  const res = await peerRequest({ url, method: 'GET', headers, timeoutMs: JWKS_TIMEOUT_MS, signal: init.signal, maxBytes: 1024 * 1024, peer: 'sso key set' });
  if (res.status < 200 || res.status > 599) throw new PeerError('sso key set', 'protocol', `sso key set answered status ${res.status}`);
  return new Response(res.status === 200 ? new Uint8Array(res.body) : null, { status: res.status });
};

export class SsoVerifier {
  private key: Promise<CryptoKey | JWTVerifyGetKey> | undefined;

  constructor(private readonly opts: SsoOptions) {
    if (opts.jwksUrl) {
      const jwks = createRemoteJWKSet(new URL(opts.jwksUrl), {
        timeoutDuration: JWKS_TIMEOUT_MS,
        cooldownDuration: 30_000,
        cacheMaxAge: 600_000,
        [customFetch]: fetchKeySet,
      });
      this.key = Promise.resolve(jwks);
    } else if (opts.publicKeyPem) {
      const pem = opts.publicKeyPem.replace(/\\n/g, '\n');
      // a P-256 key (ES256) or an Ed25519 key (EdDSA): whichever the PEM holds
      this.key = importSPKI(pem, 'ES256').catch(() => importSPKI(pem, 'EdDSA'));
    }
  }

  /**
   * Whether a verification failed because the bank's key set could not be had (the bank's fault, a
   * 503), not because of the token (a 401): the fetch timed out or failed (connection refused,
   * reset: fetch's TypeError), or the bank answered with no usable key set (not 200, not JSON, not
   * a JWKS). A token whose key id the set does not hold is the token's fault.
   */
  private keysUnreachable(err: unknown): boolean {
    if (!this.opts.jwksUrl) return false;
    if (err instanceof PeerError || err instanceof TypeError) return true;
    const code = (err as { code?: string }).code;
    return code === 'ERR_JWKS_TIMEOUT' || code === 'ERR_JWKS_INVALID' || code === 'ERR_JOSE_GENERIC';
  }

  get configured(): boolean {
    return this.key !== undefined;
  }

  /**
   * The user id of an SSO token (the bearer token the hub read); throws 401 invalid_token, or 503
   * when no key is configured or the bank's keys cannot be fetched.
   */
  async user(token: string): Promise<string> {
    if (!/^[A-Za-z0-9_.-]{1,4096}$/.test(token)) throw new AppError('unauthorized', 'invalid_token', 'the SSO token is malformed');
    if (!this.key) throw new AppError('unavailable', 'sso_not_configured', 'no SSO_JWKS_URL or SSO_PUBLIC_KEY is configured');
    const key = await this.key;
    let sub: unknown;
    try {
      const { payload } = await jwtVerify(token, key as any, {
        algorithms: ['ES256', 'EdDSA'],
        issuer: this.opts.issuer,
        audience: this.opts.audience,
        currentDate: new Date(this.opts.clock.now()),
        requiredClaims: ['exp', 'sub'],
      });
      sub = payload.sub;
    } catch (err) {
      if (this.keysUnreachable(err)) throw new AppError('unavailable', 'sso_unavailable', 'the banking service keys could not be fetched');
      const code = (err as { code?: string }).code;
      throw new AppError('unauthorized', 'invalid_token', code === 'ERR_JWT_EXPIRED' ? 'the SSO token has expired' : 'the SSO token is not valid');
    }
    if (typeof sub !== 'string' || !USER_ID_RE.test(sub)) throw new AppError('unauthorized', 'invalid_token', 'the SSO token is not valid');
    return sub;
  }
}
