import { BlockList, isIP } from 'node:net';

/**
 * The client's address behind reverse proxies (TRUST_PROXY). Forwarding headers are read only when
 * the socket's peer is a trusted proxy, and then walked from the right: each hop a trusted proxy
 * appended is skipped, and the right-most address that is not a trusted proxy is the client (the
 * left part of the header is whatever the client sent, so it is never believed). Without trusted
 * proxies the headers are ignored and the peer is the client. `Forwarded` (RFC 7239) is read when
 * present, else `X-Forwarded-For`. The per-address limits (connections, login throttle, rate
 * limits) and audit records use this address.
 */
export class ClientAddress {
  private readonly trusted: BlockList | undefined;

  constructor(proxies: readonly string[]) {
    if (proxies.length === 0) return;
    this.trusted = new BlockList();
    for (const p of proxies) addProxy(this.trusted, p);
  }

  /** The client of a request from `peer` (the socket's address) with these headers. */
  of(peer: string, headers: Record<string, string>): string {
    if (!this.trusted || !this.isTrusted(peer)) return peer;
    const hops = forwardedHops(headers);
    let client = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      // a hop that is not an address ends the walk: the last trusted one is as far as is known
      if (!isIP(hop)) break;
      client = hop;
      if (!this.isTrusted(hop)) break;
    }
    return client;
  }

  private isTrusted(address: string): boolean {
    const family = isIP(address);
    if (family === 0) return false;
    if (family === 6) {
      // an IPv4 peer as uWS prints it on a dual-stack socket
      const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
      if (mapped) return this.trusted!.check(mapped[1]!, 'ipv4') || this.trusted!.check(address, 'ipv6');
      return this.trusted!.check(address, 'ipv6');
    }
    return this.trusted!.check(address, 'ipv4');
  }
}

/** Parses TRUST_PROXY: comma-separated addresses or CIDR blocks; throws naming the bad entry. */
export function parseTrustedProxies(value: string | undefined): string[] {
  if (value === undefined || value.trim() === '') return [];
  const out = value.split(',').map((s) => s.trim()).filter(Boolean);
  const probe = new BlockList();
  for (const p of out) addProxy(probe, p);
  return out;
}

function addProxy(list: BlockList, entry: string): void {
  const [address, bits, extra] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || extra !== undefined) throw new Error(`"${entry}" is not an address or a CIDR block`);
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (bits === undefined) return list.addAddress(address!, type);
  const prefix = Number(bits);
  if (!/^\d{1,3}$/.test(bits) || prefix > (family === 4 ? 32 : 128)) throw new Error(`"${entry}" has a bad prefix length`);
  list.addSubnet(address!, prefix, type);
}

/** The hops a request passed, client first: from `Forwarded` (for=) or `X-Forwarded-For`. */
/** The request headers a client's address is read from behind a trusted proxy (in this order). */
export const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for'] as const;

function forwardedHops(headers: Record<string, string>): string[] {
  const forwarded = headers['forwarded'];
  if (forwarded !== undefined) {
    const hops: string[] = [];
    for (const element of forwarded.split(',')) {
      const m = /(?:^|;)\s*for\s*=\s*("[^"]*"|[^;,\s]*)/i.exec(element);
      hops.push(m ? bareAddress(m[1]!.replace(/^"|"$/g, '')) : '');
    }
    return hops;
  }
  const xff = headers['x-forwarded-for'];
  return xff === undefined ? [] : xff.split(',').map((s) => bareAddress(s.trim()));
}

/** An address without its port or brackets ("[2001:db8::1]:443" -> "2001:db8::1", "1.2.3.4:80" -> "1.2.3.4"). */
function bareAddress(s: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(s);
  if (bracketed) return bracketed[1]!;
  const v4port = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(s);
  return v4port ? v4port[1]! : s;
}
