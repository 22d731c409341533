// The API reference: Swagger UI (bundled from the local swagger-ui-dist package, no CDN) over the
// hub's own /openapi.json, generated from the route table. One service at a time (the document's
// tags): Swagger UI 5.35 stops rendering a document of more than about 150 operations at once.
import SwaggerUIBundle from 'swagger-ui-dist/swagger-ui-bundle.js';
import 'swagger-ui-dist/swagger-ui.css';
import { network } from '../common/api.js';

interface Doc {
  tags?: { name: string }[];
  paths: Record<string, Record<string, { tags?: string[] }>>;
  [k: string]: unknown;
}

/** The document with only the operations of one service. */
function only(doc: Doc, tag: string): Doc {
  const paths: Doc['paths'] = {};
  for (const [path, ops] of Object.entries(doc.paths)) {
    const kept = Object.fromEntries(Object.entries(ops).filter(([, op]) => op.tags?.includes(tag)));
    if (Object.keys(kept).length > 0) paths[path] = kept;
  }
  return { ...doc, tags: [{ name: tag }], paths };
}

async function main(): Promise<void> {
  // the hub's own document (not a service route): read through the client's one network door
  const doc = (await (await network('/openapi.json')).json()) as Doc;
  const select = document.querySelector<HTMLSelectElement>('#service')!;
  const tags = (doc.tags ?? []).map((t) => t.name);
  for (const name of tags) select.add(new Option(name, name));
  const wanted = new URLSearchParams(location.search).get('service');
  if (wanted && tags.includes(wanted)) select.value = wanted;
  const show = () => {
    document.body.dataset.ready = 'false';
    document.querySelector('#api')!.replaceChildren();
    SwaggerUIBundle({
      spec: only(doc, select.value),
      dom_id: '#api',
      deepLinking: true,
      onComplete: () => {
        document.body.dataset.ready = 'true';
      },
    });
  };
  select.addEventListener('change', () => {
    history.replaceState(null, '', `?service=${encodeURIComponent(select.value)}${location.hash}`);
    show();
  });
  show();
}

void main();
