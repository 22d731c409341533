// The API reference: Swagger UI (bundled from the local swagger-ui-dist package, no CDN) over the
// hub's own /openapi.json, generated from the route table.
import SwaggerUIBundle from 'swagger-ui-dist/swagger-ui-bundle.js';
import 'swagger-ui-dist/swagger-ui.css';

SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#api',
  deepLinking: true,
  onComplete: () => {
    document.body.dataset.ready = 'true';
  },
});
