import { Marked, type Tokens } from 'marked';

/**
 * Export of a document version (docs/collab.md, "Export"): the markdown as stored, or one standalone
 * HTML file that is safe to open anywhere (a mail attachment, a file on disk, another site):
 * - raw HTML in the markdown is shown as text, never passed through (no script, no handler, no
 *   iframe can come from a document);
 * - a link or image keeps its address only when it is http(s), mailto, a fragment or a path on this
 *   site (an image also as a data: URL of a raster type); `javascript:` and the rest lose the address
 *   and keep their text;
 * - the file carries its own Content-Security-Policy (no script at all), in case a viewer renders it
 *   outside the hub.
 */

const SAFE_LINK = /^(?:https?:\/\/|mailto:|#|\/(?!\/)|\.{0,2}\/)/i;
const SAFE_IMAGE = /^(?:https?:\/\/|\/(?!\/)|data:image\/(?:png|jpeg|gif|webp);base64,)/i;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const exporter = new Marked({
  gfm: true,
  renderer: {
    html({ text }: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(text);
    },
    link({ href, title, tokens }: Tokens.Link) {
      const inner = this.parser.parseInline(tokens);
      if (!SAFE_LINK.test(href.trim())) return inner;
      return `<a href="${escapeHtml(href.trim())}"${title ? ` title="${escapeHtml(title)}"` : ''} rel="noopener noreferrer">${inner}</a>`;
    },
    image({ href, title, text }: Tokens.Image) {
      // the document's own image, inlined (renderSafe's `inline`)
      const own = /^\/api\/md\/images\/[^/]+\/([a-f0-9]{16})$/.exec(href.trim());
      if (own && inlining?.has(own[1]!)) href = inlining.get(own[1]!)!;
      if (!SAFE_IMAGE.test(href.trim())) return escapeHtml(text);
      return `<img src="${escapeHtml(href.trim())}" alt="${escapeHtml(text)}"${title ? ` title="${escapeHtml(title)}"` : ''}>`;
    },
  },
});

/** The images being inlined by the render in progress (it is synchronous): id -> data: URL. */
let inlining: ReadonlyMap<string, string> | undefined;

/**
 * The body of the HTML export: the markdown rendered with the rules above. `inline`: the document's
 * own images (`/api/md/images/<slug>/<id>`) by id as data: URLs, put in place of their address.
 */
export function renderSafe(markdown: string, inline?: ReadonlyMap<string, string>): string {
  inlining = inline;
  try {
    return exporter.parse(markdown, { async: false }) as string;
  } finally {
    inlining = undefined;
  }
}

const STYLE =
  'body{font:16px/1.6 system-ui,"Noto Sans KR",sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}' +
  'pre{background:#f4f4f4;padding:.75rem;overflow:auto}code{font-family:ui-monospace,monospace}' +
  'table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem .5rem}img{max-width:100%}' +
  'footer{margin-top:3rem;color:#666;font-size:.85rem}';

/** A standalone HTML file of one version of a document (`inline`: its own images, as renderSafe takes them). */
export function exportHtml(doc: { slug: string; title: string; version: number; modified: number; author: string; content: string }, inline?: ReadonlyMap<string, string>): string {
  const when = new Date(doc.modified).toISOString();
  return [
    '<!doctype html>',
    '<html lang="ko">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src https: http: data:; style-src 'unsafe-inline'">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(doc.title)}</title>`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    `<article>${renderSafe(doc.content, inline)}</article>`,
    `<footer>${escapeHtml(doc.slug)} · v${doc.version} · ${escapeHtml(doc.author)} · ${when}</footer>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
