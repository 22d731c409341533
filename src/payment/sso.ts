import { createRemoteJWKSet, importSPKI, jwtVerify, type JWTVerifyGetKey, type CryptoKey } from 'jose';
import { AppError } from '../errors.js';
import type { Clock } from '../clock.js';

/**
 * The payment relay's users are the banking service's: its single sign-on token is a signed JWT
 * (ES256 or EdDSA) in `Authorization: Bearer`. Verified with `jose` against the banking service's
 * JWKS (SSO_JWKS_URL, cached by jose, refetched on an unknown kid at most every 30 s) or a configured
 * PEM public key (SSO_PUBLIC_KEY). `sub` is the user id; `exp` is always checked, `iss` and `aud`
 * when configured. Missing: 401 unauthorized; expired, badly signed or malformed: 401 invalid_token.
 */

export const USER_ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;

export interface SsoOptions {
  jwksUrl?: string;
  publicKeyPem?: string;
  issuer?: string;
  audience?: string;
  clock: Clock;
}

export class SsoVerifier {
  private key: Promise<CryptoKey | JWTVerifyGetKey> | undefined;

  constructor(private readonly opts: SsoOptions) {
    if (opts.jwksUrl) {
      const jwks = createRemoteJWKSet(new URL(opts.jwksUrl), { timeoutDuration: 2000, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
      this.key = Promise.resolve(jwks);
    } else if (opts.publicKeyPem) {
      const pem = opts.publicKeyPem.replace(/\\n/g, '\n');
      // a P-256 key (ES256) or an Ed25519 key (EdDSA): whichever the PEM holds
      this.key = importSPKI(pem, 'ES256').catch(() => importSPKI(pem, 'EdDSA'));
    }
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
    try {
      const { payload } = await jwtVerify(token, key as any, {
        algorithms: ['ES256', 'EdDSA'],
        issuer: this.opts.issuer,
        audience: this.opts.audience,
        currentDate: new Date(this.opts.clock.now()),
        requiredClaims: ['exp', 'sub'],
      });
      if (typeof payload.sub !== 'string' || !USER_ID_RE.test(payload.sub)) throw new Error('bad sub');
      return payload.sub;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ERR_JWKS_TIMEOUT' || code === 'ERR_JOSE_GENERIC' && /fetch|network/i.test((err as Error).message)) {
        throw new AppError('unavailable', 'sso_unavailable', 'the banking service keys could not be fetched');
      }
      throw new AppError('unauthorized', 'invalid_token', code === 'ERR_JWT_EXPIRED' ? 'the SSO token has expired' : 'the SSO token is not valid');
    }
  }
}
