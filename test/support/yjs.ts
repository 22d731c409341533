import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';

/**
 * The stock y-websocket client against a started hub's `/yjs`; the token (an account's or a share
 * link's) travels as the `access_token` query parameter, as the page sends it.
 */
export function editorClient(base: string, slug: string, name: string, token: string) {
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(base.replace(/^http/, 'ws') + '/yjs', slug, doc, {
    WebSocketPolyfill: WebSocket as never,
    disableBc: true,
    maxBackoffTime: 300,
    params: { access_token: token },
  });
  provider.awareness.setLocalStateField('user', { name });
  return { doc, provider, text: doc.getText('content'), close: () => (provider.destroy(), doc.destroy()) };
}
