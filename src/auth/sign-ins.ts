import type { Logger } from 'pino';

/**
 * Sign-in and sign-out attempts as identity tells them to whoever follows them (the rental service
 * writes its partner's into the partner audit trail). Identity knows none of its listeners: a
 * service that wants them takes the `signIns` port and adds one.
 */

export interface SignInAttempt {
  action: 'login' | 'logout';
  /** The account name given (a failed login's too) or the signed-in identity's id. */
  user: string;
  /** The account's roles when known: a login that succeeded, any logout. */
  roles: readonly string[] | undefined;
  /** The client's address. */
  client: string;
  /** `ok`, or the refusal's code (`invalid_credentials`, `too_many_attempts`, ...). */
  result: string;
}

export type SignInListener = (attempt: SignInAttempt) => Promise<void> | void;

/** The `signIns` port: follow every attempt, on the process that answered it. */
export interface SignIns {
  onAttempt(listener: SignInListener): void;
}

export class SignInEvents implements SignIns {
  private readonly listeners: SignInListener[] = [];

  constructor(private readonly logger?: Logger) {}

  onAttempt(listener: SignInListener): void {
    this.listeners.push(listener);
  }

  /** Tells every listener, in turn; a failing listener is logged and changes nothing for the caller. */
  async emit(attempt: SignInAttempt): Promise<void> {
    for (const listener of this.listeners) {
      try {
        await listener(attempt);
      } catch (err) {
        this.logger?.warn({ err, action: attempt.action, user: attempt.user }, 'a sign-in listener failed');
      }
    }
  }
}
