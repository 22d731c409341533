/**
 * Security headers on every HTTP answer (pages, assets, API, errors, streams). The pages load only
 * their own scripts (no inline script), styles (inline style attributes allowed: the editor and the
 * charts set them), fonts, images (and data: URLs for QR codes), and talk only to this origin.
 * No page may be framed.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "media-src 'self' blob:",
  // the partner's PDF preview frames a blob: URL of the fetched file (Chromium's PDF viewer inside)
  "frame-src 'self' blob:",
  "worker-src 'self'",
  "manifest-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'strict-origin-when-cross-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'permissions-policy': 'camera=(self), microphone=(), geolocation=()',
};

export function writeSecurityHeaders(res: { writeHeader(k: string, v: string): unknown }): void {
  for (const k in SECURITY_HEADERS) res.writeHeader(k, SECURITY_HEADERS[k]!);
}
