// The wallet's session (the bank's SSO token, kept for the tab) and its calls to the relay.

const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
if (fromHash) {
  sessionStorage.setItem('sso', fromHash);
  history.replaceState(null, '', location.pathname);
}
export const token = sessionStorage.getItem('sso');

/** The signed-in user (the token's `sub`), '' when signed out. */
export const user: string = (() => {
  if (!token) return '';
  try {
    const sub = JSON.parse(atob(token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))).sub;
    return typeof sub === 'string' ? sub : '';
  } catch {
    return '';
  }
})();

export const auth = (): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});

export interface Answer {
  status: number;
  body: any;
}

/** A call to the relay; a POST carries JSON and a fresh Idempotency-Key. */
export async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  try {
    const res = await fetch(path, {
      method,
      redirect: 'manual',
      headers: { ...auth(), ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed };
  } catch (err) {
    return { status: 0, body: { error: { code: 'network', message: (err as Error).message } } };
  }
}
