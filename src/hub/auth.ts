import { AppError } from '../errors.js';
import type { AuthSpec, Authenticator, IdentityProvider, Principal } from './http.js';

/**
 * The hub's credential check, the one place a bearer token is read. The identity model
 * (src/auth) plugs in an Authenticator; routes, SSE streams, WebSocket topics and socket
 * endpoints ask this gate.
 *
 * - no token where one is needed: 401 `unauthorized`;
 * - a token that is unknown, revoked or expired: 401 `invalid_token` (also on optional routes);
 * - a valid token without one of the route's roles: 403 `forbidden`.
 * Every 401 carries `WWW-Authenticate: Bearer` (the hub adds it from the status).
 */
export class AuthGate {
  private authenticator: Authenticator = async () => undefined;
  private superRole: string | undefined;

  private readonly providers = new Map<string, IdentityProvider>();
  /** Tokens of other kinds, told apart by their prefix (e.g. a document's share link): see Hub.tokenKind. */
  private readonly kinds = new Map<string, Authenticator>();

  /** Tokens starting with `prefix` are resolved by `authenticator` instead of the identity model's. */
  useKind(prefix: string, authenticator: Authenticator): void {
    if (prefix.length < 3 || [...this.kinds.keys()].some((p) => p.startsWith(prefix) || prefix.startsWith(p))) {
      throw new Error(`token prefix "${prefix}" is too short or overlaps another`);
    }
    this.kinds.set(prefix, authenticator);
  }

  use(authenticator: Authenticator, opts: { superRole?: string } = {}): void {
    this.authenticator = authenticator;
    this.superRole = opts.superRole;
  }

  /** Adds an identity provider routes name in `auth.provider`; a name is given once. */
  provide(name: string, provider: IdentityProvider): void {
    if (this.providers.has(name)) throw new Error(`identity provider "${name}" is already registered`);
    this.providers.set(name, provider);
  }

  /** The providers (for /openapi.json). */
  providerList(): ReadonlyMap<string, IdentityProvider> {
    return this.providers;
  }

  /** Whether the principal holds one of `roles` (or the super role); no roles: any principal. */
  allows(principal: Principal, roles: readonly string[] | undefined): boolean {
    if (!roles || roles.length === 0) return true;
    if (this.superRole && principal.roles.includes(this.superRole)) return true;
    return roles.some((r) => principal.roles.includes(r));
  }

  /** Resolves a token; throws 401 invalid_token when it does not resolve. */
  async resolve(token: string): Promise<Principal> {
    if (token.length > 512) throw invalidToken();
    let authenticator = this.authenticator;
    for (const [prefix, a] of this.kinds) if (token.startsWith(prefix)) authenticator = a;
    const principal = await authenticator(token);
    if (!principal) throw invalidToken();
    return principal;
  }

  /**
   * Checks a request against a route's AuthSpec; returns the principal and the token it came from
   * (a connection that stays open keeps the token: hub/credentials.ts), or undefined (optional and
   * none given).
   */
  async check(spec: AuthSpec, headers: Record<string, string>, query?: Record<string, unknown>): Promise<{ principal: Principal; token: string } | undefined> {
    const provider = spec.provider === undefined ? undefined : this.providers.get(spec.provider);
    if (spec.provider !== undefined && !provider) throw new Error(`no identity provider "${spec.provider}" is registered`);
    const token = bearerToken(headers, query, provider?.maxTokenLength);
    if (token === undefined) {
      if (spec.optional) return undefined;
      throw new AppError('unauthorized', 'unauthorized', provider?.missing ?? 'this route needs a bearer token (Authorization: Bearer <token>)');
    }
    const principal = provider ? await provider.authenticate(token) : await this.resolve(token);
    if (!this.allows(principal, spec.roles)) {
      throw new AppError('forbidden', 'forbidden', `this route needs the role ${spec.roles!.join(' or ')}`, {
        needs: spec.roles,
        has: principal.roles,
      });
    }
    return { principal, token };
  }
}

/** 401 invalid_token: the token is unknown, revoked or expired. */
export const invalidToken = () => new AppError('unauthorized', 'invalid_token', 'the token is not valid (unknown, revoked or expired)');

/**
 * The bearer token of a request: the Authorization header, or (for EventSource and WebSocket
 * clients, which cannot set headers) the `access_token` query parameter as RFC 6750 allows.
 * A malformed Authorization header counts as a wrong token, not as none.
 */
export function bearerToken(headers: Record<string, string>, query?: Record<string, unknown>, maxLength = 512): string | undefined {
  const h = headers.authorization;
  if (h !== undefined) {
    const m = /^Bearer +([\x21-\x7e]+?)\s*$/i.exec(h);
    return m && m[1]!.length <= maxLength ? m[1]! : '\0';
  }
  const q = query?.access_token;
  if (typeof q === 'string' && q.length > 0) return q;
  return undefined;
}

/**
 * A request that is neither an SSE stream nor a WebSocket upgrade and carries `access_token` in
 * its query: refused with 401 `token_in_query` whatever the token (a token in a URL ends up in
 * logs, histories and Referer headers; only EventSource and WebSocket clients, which cannot set
 * headers, may put it there).
 */
export function refuseQueryToken(query: Record<string, unknown>): void {
  if (query.access_token === undefined) return;
  throw new AppError('unauthorized', 'token_in_query', 'access_token in the query is accepted only by SSE streams and WebSocket upgrades: send Authorization: Bearer <token>', {
    parameter: 'access_token',
  });
}

export const WWW_AUTHENTICATE = (code: string) =>
  code === 'invalid_token' ? 'Bearer realm="maru", error="invalid_token"' : 'Bearer realm="maru"';
