/**
 * Type-level tests of the client (compiled by `tsc -p web/tsconfig.json`, never bundled): each call
 * is checked against the route declarations, and each `@ts-expect-error` line must stay an error,
 * so a route that changes its path, method, parameters, query, body or answer breaks this check as
 * it breaks a page's.
 */
import { createClient } from './api.js';

const api = createClient();

export async function typeTests(): Promise<void> {
  // an answer is the route's declared response
  const shows = await api.get('/api/shows', { query: { limit: 10, offset: 0 } });
  const names: string[] = shows.shows.map((s) => s.name);
  const show = await api.get('/api/shows/:id', { params: { id: 'x' } });
  const venue: string = show.venue;
  const products = await api.get('/api/rental/products');
  const labels: string[] = products.documents.map((d) => d.label);
  const me = await api.get('/api/auth/me');
  void me;
  await api.post('/api/auth/login', { body: { user: 'kim', password: 'pw' } });
  await api.put('/api/auth/accounts/:user', { params: { user: 'kim' }, body: { roles: ['staff'] } });
  const reviews = await api.get('/api/token/ops/reviews', { query: { state: 'open' } });
  void reviews.reviews;
  void names, venue, labels;

  // @ts-expect-error: no such route
  await api.get('/api/shows/:id/nothing', { params: { id: 'x' } });
  // @ts-expect-error: the login route is a POST
  await api.get('/api/auth/login');
  // @ts-expect-error: the path names :id, which must be given
  await api.get('/api/shows/:id');
  // @ts-expect-error: the login body is {user, password}
  await api.post('/api/auth/login', { body: { username: 'kim', password: 'pw' } });
  // @ts-expect-error: the body's fields have their declared types
  await api.post('/api/shows', { body: { name: 1, venue: 'v', date: 'd' } });
  // @ts-expect-error: a query key the route does not declare
  await api.get('/api/shows', { query: { page: 2 } });
  // @ts-expect-error: the answer's fields have their declared types
  const wrong: number = show.venue;
  void wrong;
  // @ts-expect-error: a route without a query takes none
  await api.get('/api/auth/me', { query: { x: 1 } });
}
