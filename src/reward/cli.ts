import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  exchangeMessage,
  signMessage,
  generateMemberKeys,
  isPublicKey,
  publicKeyOf,
  registrationHash,
  registrationNonce,
  registrationPayload,
  signWork,
  verifyWork,
  workMessage,
} from './signing.js';

/**
 * The reward plan's command-line tool (document 3, "Authentication"): member keys, registration
 * hashes, work signatures and their verification. Output is JSON on stdout; errors go to stderr.
 * Exit codes: 0 done (verify-work: valid), 1 verify-work: not valid, 2 usage error.
 *
 *   node dist/src/reward/cli.js keygen
 *   node dist/src/reward/cli.js register --name N --country KR --lang ko --zone Z [--public-key K] [--nonce X]
 *   node dist/src/reward/cli.js sign-work --id ID --kc N --v N [--ts MS] --key PRIVATE
 *   node dist/src/reward/cli.js verify-work --id ID --kc N --v N --ts MS --sig SIG --public-key K
 *   node dist/src/reward/cli.js sign-exchange --id ID --amt RU [--ts MS] --key PRIVATE
 */

export const USAGE = `maru reward CLI: member keys, registration hashes and work signatures (Ed25519)

Usage: reward-cli <command> [flags]

Commands:
  keygen
      Prints a new key pair as JSON: publicKey (base64url, raw 32 bytes) and
      privateKey (base64url, PKCS#8 DER). Keep the private key secret.
  register --name N --country CC --lang LL --zone Z [--public-key K] [--nonce X]
      Prints the registration hash (hex SHA-256 of the canonical JSON payload, sorted keys)
      and the payload. A random nonce is chosen when --nonce is not given.
  sign-work --id ID --kc N --v N [--ts MS] --key PRIVATE
      Signs one unit of work: the message "maru-work/1\\n{id}\\n{kc}\\n{v}\\n{ts}" (ts in Unix
      milliseconds, default now). Prints ts, sig and the query string to append to /work.
  verify-work --id ID --kc N --v N --ts MS --sig SIG --public-key K
      Prints {"valid":true|false}; exit code 0 when valid, 1 when not.
  sign-exchange --id ID --amt RU [--ts MS] --key PRIVATE
      Signs one exchange (needed when the hub runs with REWARD_SIGNING=required): the message
      "maru-exchange/1\\n{id}\\n{amt}\\n{ts}" with amt exactly as it will be sent. Prints ts, sig
      and the /exchange path.
  help
      This text.

Exit codes: 0 success, 1 signature not valid, 2 usage error.
`;

export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
  now: () => number;
}

class UsageError extends Error {}

const INT = /^-?\d{1,15}$/;

function intFlag(values: Record<string, unknown>, name: string, opts: { required: boolean; min?: number }): number | undefined {
  const raw = values[name];
  if (raw === undefined) {
    if (opts.required) throw new UsageError(`--${name} is required`);
    return undefined;
  }
  if (typeof raw !== 'string' || !INT.test(raw)) throw new UsageError(`--${name} must be an integer, got "${String(raw)}"`);
  const n = Number(raw);
  if (opts.min !== undefined && n < opts.min) throw new UsageError(`--${name} must be at least ${opts.min}`);
  return n;
}

function strFlag(values: Record<string, unknown>, name: string, required: true): string;
function strFlag(values: Record<string, unknown>, name: string, required: false): string | undefined;
function strFlag(values: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const raw = values[name];
  if (raw === undefined || raw === '') {
    if (required) throw new UsageError(`--${name} is required`);
    return undefined;
  }
  return raw as string;
}

type Options = NonNullable<Parameters<typeof parseArgs>[0]>['options'];

/**
 * A signature is base64url and may begin with "-"; parseArgs refuses `--sig -abc` as ambiguous. A
 * string option always takes the next argument as its value, so the pair is joined as `--sig=-abc`.
 */
function joinStringValues(args: string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const name = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : undefined;
    const next = args[i + 1];
    if (name !== undefined && options?.[name]?.type === 'string' && next !== undefined && next.startsWith('-')) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

function parse(args: string[], options: Options): Record<string, unknown> {
  try {
    const { values, positionals } = parseArgs({ args: joinStringValues(args, options), options, strict: true, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    return values as Record<string, unknown>;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError((err as Error).message);
  }
}

const s = { type: 'string' } as const;

function workFields(values: Record<string, unknown>, ts: number) {
  const id = strFlag(values, 'id', true);
  if (/[\r\n]/.test(id)) throw new UsageError('--id may not contain line breaks');
  return {
    id,
    kc: intFlag(values, 'kc', { required: true, min: 0 })!,
    v: intFlag(values, 'v', { required: true, min: 0 })!,
    ts,
  };
}

/** Runs one command; returns the exit code. */
export function runCli(argv: string[], io: CliIo): number {
  const [command, ...rest] = argv;
  const print = (data: unknown) => io.out(`${JSON.stringify(data, null, 2)}\n`);
  try {
    switch (command) {
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.out(USAGE);
        return command === undefined ? 2 : 0;
      case 'keygen': {
        parse(rest, {});
        const keys = generateMemberKeys();
        print({
          publicKey: keys.publicKey,
          privateKey: keys.privateKey,
          format: { publicKey: 'base64url raw Ed25519 (32 bytes)', privateKey: 'base64url PKCS#8 DER' },
        });
        return 0;
      }
      case 'register': {
        const v = parse(rest, { name: s, country: s, lang: s, zone: s, 'public-key': s, nonce: s });
        const publicKey = strFlag(v, 'public-key', false);
        if (publicKey !== undefined && !isPublicKey(publicKey)) {
          throw new UsageError('--public-key must be base64url of a raw 32-byte Ed25519 public key (see keygen)');
        }
        const country = strFlag(v, 'country', true);
        const lang = strFlag(v, 'lang', true);
        if (!/^[A-Za-z]{2}$/.test(country)) throw new UsageError('--country must be a two-letter code, e.g. KR');
        if (!/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(lang)) throw new UsageError('--lang must be a language code, e.g. ko');
        const fields = {
          name: strFlag(v, 'name', true),
          country,
          lang,
          zone: strFlag(v, 'zone', true),
          public_key: publicKey,
          nonce: strFlag(v, 'nonce', false) ?? registrationNonce(),
        };
        print({ hash: registrationHash(fields), payload: registrationPayload(fields), fields });
        return 0;
      }
      case 'sign-work': {
        const v = parse(rest, { id: s, kc: s, v: s, ts: s, key: s });
        const ts = intFlag(v, 'ts', { required: false, min: 0 }) ?? io.now();
        const fields = workFields(v, ts);
        const key = strFlag(v, 'key', true);
        let sig: string;
        let publicKey: string;
        try {
          sig = signWork(key, fields);
          publicKey = publicKeyOf(key);
        } catch (err) {
          throw new UsageError(`--key: ${(err as Error).message}`);
        }
        const query = `ts=${ts}&sig=${sig}`;
        const work = new URLSearchParams({ id: fields.id, kc: String(fields.kc), v: String(fields.v), ts: String(ts), sig });
        print({ ts, sig, query, work: `/work?${work.toString()}`, message: workMessage(fields), publicKey });
        return 0;
      }
      case 'sign-exchange': {
        const v = parse(rest, { id: s, amt: s, ts: s, key: s });
        const ts = intFlag(v, 'ts', { required: false, min: 0 }) ?? io.now();
        const id = strFlag(v, 'id', true);
        const amt = strFlag(v, 'amt', true);
        let message: string;
        let sig: string;
        try {
          message = exchangeMessage({ id, amt, ts });
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
        try {
          sig = signMessage(strFlag(v, 'key', true), message);
        } catch (err) {
          throw new UsageError(`--key: ${(err as Error).message}`);
        }
        const q = new URLSearchParams({ id, amt, ts: String(ts), sig });
        print({ ts, sig, exchange: `/exchange?${q.toString()}`, message });
        return 0;
      }
      case 'verify-work': {
        const v = parse(rest, { id: s, kc: s, v: s, ts: s, sig: s, 'public-key': s });
        const ts = intFlag(v, 'ts', { required: true, min: 0 })!;
        const fields = workFields(v, ts);
        const sig = strFlag(v, 'sig', true);
        const publicKey = strFlag(v, 'public-key', true);
        const valid = verifyWork(publicKey, fields, sig);
        print({ valid });
        return valid ? 0 : 1;
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`error: ${err.message}\nrun "reward-cli help" for usage\n`);
      return 2;
    }
    io.err(`error: ${(err as Error).message}\n`);
    return 2;
  }
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  process.exitCode = runCli(process.argv.slice(2), {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    now: () => Date.now(),
  });
}
