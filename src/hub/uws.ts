import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';

const require = createRequire(import.meta.url);

/**
 * Loads uWebSockets.js and refuses its JavaScript fallback. The registry build silently falls back to
 * a slow shim when its native binary does not load; the hub must not run on that.
 */
export function loadNativeUws(): typeof UWS {
  const uws = require('uWebSockets.js') as typeof UWS;
  const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  const native = Object.keys(require.cache).some((k) => k.endsWith(binary));
  if (!native || process.env.UWS_USE_FALLBACK) {
    throw new Error(
      `uWebSockets.js native binary ${binary} is not in use (JavaScript fallback loaded); refusing to start`,
    );
  }
  return uws;
}

export type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_listen_socket } from 'uWebSockets.js';
