import { parseTrustedProxies } from './hub/client-address.js';
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { chainPublicKey, parseKnownHead } from './payment/chain-keys.js';

/**
 * Every knob of the hub, read once from the environment and validated. Nothing else reads
 * process.env. The README's configuration table mirrors this schema.
 */
const intFrom = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number().int().min(min).max(max).default(def);

/** host:port,host:port,... (a DNS name, an IPv4 address or a bracketed IPv6 address each). */
const hostPorts = () =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return undefined;
      const out: { host: string; port: number }[] = [];
      for (const part of v.split(',')) {
        const m = /^\s*(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})\s*$/.exec(part);
        const port = m ? Number(m[2]) : 0;
        if (!m || port < 1 || port > 65535) {
          ctx.addIssue({ code: z.ZodIssueCode.custom, message: `"${part.trim()}" is not host:port (expected host:port,host:port,...)` });
          return z.NEVER;
        }
        out.push({ host: m[1]!.replace(/^\[|\]$/g, ''), port });
      }
      return out;
    });

const schema = z.object({
  PORT: intFrom(8080, 0, 65535),
  HOST: z.string().min(1).default('0.0.0.0'),
  /**
   * Where people and peers reach the hub (https://maru.example.kr): the links in the applicants'
   * mails, the on-ramp's webhook and return addresses; never taken from a request's Host header.
   */
  PUBLIC_URL: z.string().url().optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  REDIS_URL: z.string().url().optional(),
  /** Namespace of every Redis key and channel, so several deployments can share one server. */
  REDIS_PREFIX: z.string().min(1).default('maru:'),
  /**
   * How long the Bus stays subscribed to a partition's channel after the last topic of it followed
   * on this process is left, ms (docs/partitions.md, "The Bus"): a client that comes back within it
   * costs no new subscription.
   */
  BUS_LINGER_MS: intFrom(5000, 0, 600_000),
  /** Redis through Sentinel (docs/deploy.md): host:port,host:port,... of the Sentinels; REDIS_URL then only gives the password and db. */
  REDIS_SENTINELS: hostPorts(),
  /**
   * Redis Cluster (docs/deploy.md): host:port,host:port,... of some of its nodes (seeds); every
   * connection the hub opens is then a cluster client and every key carries its partition's hash
   * tag (docs/partitions.md). REDIS_URL then only gives the password.
   */
  REDIS_CLUSTER_NODES: hostPorts(),
  /** STORE_PARTITION_CHECK=1: the Store refuses an update spanning aggregates (docs/partitions.md), on LMDB too; for tests and staging. */
  STORE_PARTITION_CHECK: z.enum(['0', '1']).default('0').transform((v) => v === '1'),
  /** The master name the Sentinels monitor (required with REDIS_SENTINELS). */
  REDIS_SENTINEL_NAME: z.string().min(1).max(200).optional(),
  /** Replicas that must hold every atomic Store update before it is acknowledged (WAIT); fewer: 503 store_unavailable. */
  REDIS_MIN_REPLICAS: intFrom(0, 0, 16),
  /** How long WAIT waits for REDIS_MIN_REPLICAS acknowledgements, ms. */
  REDIS_WAIT_TIMEOUT_MS: intFrom(1000, 10, 60_000),
  /** Longest a Store operation waits on Redis before it answers 503 store_unavailable, ms. */
  REDIS_OP_TIMEOUT_MS: intFrom(3000, 100, 60_000),
  /** Unset: the hub refuses a Redis without AOF (exit 2). 'none': the operator accepts losing acknowledged writes on a Redis crash (warned at every start). */
  REDIS_DURABILITY: z.enum(['none']).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Largest JSON request body in bytes; larger is a 413. */
  BODY_LIMIT: intFrom(1_048_576, 1),
  /** Built browser pages; the hub serves them as static files. */
  WEB_DIR: z.string().min(1).default('./dist/web'),
  /** ISO instant the hub clock starts at (then advances in real time); default the system clock. */
  CLOCK_START: z.string().datetime({ offset: true }).optional(),
  /** Seconds to wait for in-flight work on SIGTERM/SIGINT before closing sockets. */
  SHUTDOWN_GRACE_MS: intFrom(5000, 500),

  /** Identity (docs/auth.md): the operator "admin"'s password; unset, a random one is printed once at first start. */
  ADMIN_PASSWORD: z.string().min(8).max(256).optional(),
  /** The rental partner's password (account "partner"); unset, a random one is printed once at first start. */
  PARTNER_PASSWORD: z.string().min(8).max(256).optional(),
  /** Lifetime of a login token, ms (default 8 h). */
  AUTH_TOKEN_TTL_MS: intFrom(8 * 3_600_000, 60_000, 400 * 86_400_000),
  /** Period of the check of the tokens open WebSockets and SSE streams hold, ms: a revoked or expired one ends them. */
  AUTH_RECHECK_MS: intFrom(30_000, 50, 3_600_000),
  /**
   * The operator console (docs/console.md): how often each hub process publishes its node info
   * (kept three periods, so a process gone silent leaves the list), and how often the console's
   * live stream sends the state, ms.
   */
  CONSOLE_NODE_MS: intFrom(5000, 100, 600_000),
  CONSOLE_LIVE_MS: intFrom(2000, 100, 600_000),
  /** WebSockets and SSE streams one remote address may hold open at once; beyond: 429 too_many_connections (0: no cap). */
  CONN_MAX_PER_ADDRESS: intFrom(256, 0, 1_000_000),
  /** WebSockets and SSE streams one signed-in identity may hold open at once; beyond: 429 too_many_connections (0: no cap). */
  CONN_MAX_PER_IDENTITY: intFrom(32, 0, 1_000_000),
  /** A WebSocket message past its endpoint's limit and up to this many bytes closes with 1009; larger ones are dropped unread. */
  /**
   * The reverse proxies in front of the hub, as addresses or CIDR blocks (comma-separated): only
   * from these peers are `Forwarded` / `X-Forwarded-For` read, and the right-most address that is
   * not one of them is the client. Unset: the headers are ignored (the socket's peer is the client).
   */
  TRUST_PROXY: z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      try {
        parseTrustedProxies(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `${(err as Error).message} (addresses or CIDR blocks, comma-separated)` });
      }
    }),
  WS_MAX_FRAME_BYTES: intFrom(4 * 1_048_576, 65_536, 64 * 1_048_576),
  /**
   * Seconds a WebSocket may stay silent before the hub pings it; a socket that answers nothing for as
   * long again (a stalled or half-open client, a frame header never finished) is closed.
   */
  WS_IDLE_TIMEOUT_S: intFrom(32, 8, 960),
  /** Messages one WebSocket (/ws, /yjs) may send: a burst, then a rate; past it, close 1008. */
  WS_MESSAGE_BURST: intFrom(400, 10),
  WS_MESSAGES_PER_S: intFrom(200, 1),
  /** Lifetime of a partner token, ms (default 8 h). */
  PARTNER_TOKEN_TTL: intFrom(8 * 3_600_000, 60_000, 30 * 86_400_000),
  /** Lifetime of a scanner device token, ms (default 30 days). */
  DEVICE_TOKEN_TTL_MS: intFrom(30 * 86_400_000, 60_000, 400 * 86_400_000),

  /** Reward plan peers. Unset: the outbox keeps deliveries until a peer is configured. */
  VALUE_SERVICE_URL: z.string().url().optional(),
  TASK_LEDGER_URL: z.string().url().optional(),
  PEER_TIMEOUT_MS: intFrom(2000, 1),
  OUTBOX_RETRY_MIN_MS: intFrom(500, 1),
  OUTBOX_RETRY_MAX_MS: intFrom(60_000, 1),
  /** 'off' or 'required': when required, /work needs a valid Ed25519 signature of the member. */
  REWARD_SIGNING: z.enum(['off', 'required']).default('off'),
  /** Operator-supplied charter text for principles 1 to 8 (a JSON array of 8 strings). */
  REWARD_CHARTER_FILE: z.string().optional(),

  /** Piscina worker threads for trading backtests and analyses (default: one per core). */
  TRADING_WORKERS: intFrom(availableParallelism(), 1, 64),
  /** Trading jobs running on the pool at once (the others wait in order); default TRADING_WORKERS. */
  TRADING_JOBS_RUNNING: intFrom(0, 0, 1000),
  /** Trading jobs admitted at once, running or waiting; beyond: 503 queue_full with Retry-After. */
  TRADING_QUEUE_MAX: intFrom(32, 1, 10_000),
  /** Trading jobs one client (identity, else address) may have admitted at once; beyond: 429 too_many_jobs. */
  TRADING_JOBS_PER_CLIENT: intFrom(2, 1, 1000),
  /** Time budget of a trading job once it runs, ms; past it the job stops (503 job_timeout). */
  TRADING_JOB_TIMEOUT_MS: intFrom(120_000, 50, 3_600_000),
  /** With REDIS_URL: lock of a trading job chunk run for the queue, ms; a dead process's chunk runs elsewhere after about this. */
  TRADING_CHUNK_LOCK_MS: intFrom(30_000, 500, 600_000),
  /** With REDIS_URL: chunks a grid is cut into (0: one per 2M bar evaluations, at least one per worker thread, at most 32 or 4 per thread). */
  TRADING_CHUNKS: intFrom(0, 0, 500),
  /** Live programs: simulated length of one market candle, ms (the market's bars are one-minute bars). */
  PROGRAM_CANDLE_MS: intFrom(60_000, 1000, 86_400_000),
  /** Trading alerts may post to private and loopback addresses (tests and closed networks only; docs/trading.md "Alerts"). */
  ALERTS_ALLOW_PRIVATE: z.enum(['0', '1']).default('0').transform((v) => v === '1'),
  /** How long a deleted trading program's alert is kept for its events still queued (ms; default 7 days). */
  ALERTS_KEEP_AFTER_DELETE_MS: intFrom(7 * 24 * 3_600_000, 1, 365 * 24 * 3_600_000),
  /** Accelerated market for demos and tests: a candle closes every PROGRAM_CANDLE_MS / PROGRAM_SPEED ms of the hub clock. */
  PROGRAM_SPEED: intFrom(1, 1, 10_000),
  /** DEMO=1 seeds demo data through the services at start (src/demo/seed.ts) and prints where to look; nothing is seeded without it. */
  DEMO: z.enum(['0', '1']).default('0').transform((v) => v === '1'),
  /** Lease of a running program to one process (renewed every third); a dead process's programs resume elsewhere after it. */
  PROGRAM_LEASE_MS: intFrom(15_000, 300, 600_000),

  /** Documents: largest markdown document in bytes (UTF-8); larger is a 413 document_too_large. */
  MD_MAX_BYTES: intFrom(262_144, 1024, 8_388_608),
  /** Documents: Yjs persistence debounce after the last edit, and the longest a burst of edits waits. */
  MD_PERSIST_DEBOUNCE_MS: intFrom(2000, 0, 60_000),
  MD_PERSIST_MAX_MS: intFrom(10_000, 0, 600_000),
  /** Documents: how often lock expiry and presence time-outs are swept (and rooms re-announce their state vector). */
  MD_SWEEP_MS: intFrom(1000, 50, 60_000),
  /** Documents: how often a loaded room announces its Yjs state vector to the other processes (repairs dropped pub/sub messages). */
  MD_RESYNC_MS: intFrom(2000, 50, 60_000),

  /** Guided conversation: a session is kept this many seconds after its last turn (then 404 session_not_found). */
  CHAT_SESSION_TTL: intFrom(86_400, 60, 30 * 86_400),
  /** Guided conversation: a turn after this many idle seconds starts the session again at greet. */
  CHAT_IDLE_RESTART: intFrom(1800, 10, 30 * 86_400),
  /** Guided conversation: new sessions per client and hour (429 beyond). */
  CHAT_SESSIONS_PER_CLIENT: intFrom(30, 1, 100_000),
  /** Guided conversation: turns per client and minute (429 beyond). */
  CHAT_TURNS_PER_MINUTE: intFrom(120, 1, 1_000_000),
  /** Referral and shareholder routes: calls per client and minute. */
  CHAT_LOOKUPS_PER_MINUTE: intFrom(60, 1, 1_000_000),
  /** Coaching: when set, X-Service-Owner must be an owner id signed with this secret (HMAC-SHA256). */
  COACH_OWNER_SECRET: z.string().min(16).max(256).optional(),
  /** Coaching: calls per client and minute on the owner routes. */
  COACH_CALLS_PER_MINUTE: intFrom(120, 1, 1_000_000),
  /** Mail (src/mail): smtp://user:pass@host:port; unset, mails are kept and listed for the operator (GET /api/mail). */
  SMTP_URL: z.string().url().optional(),
  /** Mail: the sender address. */
  MAIL_FROM: z.string().min(3).default('maru <noreply@maru.local>'),
  /** Blobs: uploaded files no record names (a crash between storing and recording) are deleted after this long, ms. */
  BLOB_ORPHAN_GRACE_MS: intFrom(3_600_000, 60_000),

  /** Uploads: largest file of a multipart upload in bytes (default 20 MiB); larger is a 413 file_too_large. */
  UPLOAD_MAX_BYTES: intFrom(20 * 1_048_576, 1024, 1 << 30),
  /** Uploads: clamd to scan every uploaded file with (tcp://host:port); unset, files are not scanned. */
  CLAMD_URL: z.string().regex(/^tcp:\/\/[^/]+:\d+$/, 'must be tcp://host:port').optional(),
  /** Uploads: time for one clamd scan, ms. */
  CLAMD_TIMEOUT_MS: intFrom(30_000, 100, 600_000),
  /** Blobs: an S3-compatible endpoint (path-style); set, uploaded files live in S3_BUCKET instead of DATA_DIR/blobs. */
  S3_URL: z.string().url().optional(),
  S3_BUCKET: z.string().min(3).max(63).default('maru-uploads'),
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),

  /** Token payment relay (docs/payment.md). 'embedded' starts the peers' stand-ins in this process (development). */
  PAYMENT_PEERS: z.enum(['off', 'embedded']).default('off'),
  /** The banking service's SSO: its JWKS address (cached), or its PEM public key; iss and aud checked when set. */
  SSO_JWKS_URL: z.string().url().optional(),
  SSO_PUBLIC_KEY: z.string().min(40).optional(),
  SSO_ISSUER: z.string().min(1).optional(),
  SSO_AUDIENCE: z.string().min(1).optional(),
  BANKING_URL: z.string().url().optional(),
  /** Standard Webhooks secret (whsec_...) of the banking service's confirmation webhook. */
  BANKING_WEBHOOK_SECRET: z.string().min(16).optional(),
  CHAIN_URL: z.string().url().optional(),
  /** The chain's Ed25519 public key (PEM, or base64 of its 32 bytes): its signed tree heads are verified with it (pinned: no other key is taken). */
  CHAIN_PUBLIC_KEY: z
    .string()
    .min(40)
    .refine((v) => {
      try {
        return chainPublicKey(v).asymmetricKeyType === 'ed25519';
      } catch {
        return false;
      }
    }, 'must be an Ed25519 public key: a PEM (SPKI) or the base64 of its 32 bytes')
    .optional(),
  /** A known-good head of the chain, `<tree_size>:<root hex>`: every head the hub accepts must be it or extend it (no trust on first use). */
  CHAIN_PINNED_HEAD: z
    .string()
    .transform((v, ctx) => {
      const k = parseKnownHead(v);
      if (typeof k === 'string') {
        ctx.addIssue({ code: 'custom', message: k });
        return z.NEVER;
      }
      return k;
    })
    .optional(),
  /** How often the hub pulls and verifies the chain's signed tree head with no request, ms (a refused head raises its alarm within this + 2 x PEER_TIMEOUT_MS). */
  CHAIN_WATCH_MS: intFrom(60_000, 1000, 86_400_000),
  BROKER_URL: z.string().url().optional(),
  /** The three token/USD price providers, comma-separated. */
  PRICE_PROVIDER_URLS: z.string().optional(),
  PEG_WINDOW_MS: intFrom(300_000, 1000, 86_400_000),
  PEG_MAX_GAP_MS: intFrom(60_000, 1000, 3_600_000),
  PEG_TIMEOUT_MS: intFrom(1500, 50, 30_000),
  /** State-changing payment requests per SSO user per minute (429 beyond). */
  PAYMENT_POSTS_PER_MINUTE: intFrom(120, 1, 100_000),
  /** How often the hub reads the bank's event list to settle what a lost webhook missed, ms (one process at a time, under a lease). */
  RECONCILE_PERIOD_MS: intFrom(60_000, 200, 86_400_000),
  /** An on-ramp the bank's events have not settled this long after it was opened is asked for by its status (GET /api/payments/:ref), ms. */
  RECONCILE_STATUS_AFTER_MS: intFrom(900_000, 1000, 7 * 86_400_000),
  /** How long a pull's lease holds off other pulls, ms: a process killed mid-pull blocks reconciliation until it expires. */
  RECONCILE_LEASE_MS: intFrom(60_000, 1000, 3_600_000),
  /** Largest single on-ramp, KRW. */
  ONRAMP_MAX_KRW: intFrom(10_000_000, 1000, 1_000_000_000),
  PAYOUT_SCALE_RATIO: z.coerce.number().positive().max(100).default(1),
  PAYOUT_DISCIPLINE: z.coerce.number().positive().max(1).default(0.9),
  PAYOUT_CATCHUP_WEEKS: intFrom(8, 1, 52),
  CHALLENGE_PROFIT_TARGET: z.coerce.number().positive().max(1).default(0.08),
  CHALLENGE_DAILY_LOSS: z.coerce.number().positive().max(1).default(0.05),
  CHALLENGE_MAX_DRAWDOWN: z.coerce.number().positive().max(1).default(0.1),
});

export type Config = z.infer<typeof schema>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema
    .refine((c) => c.REDIS_SENTINELS === undefined || c.REDIS_SENTINEL_NAME !== undefined, {
      path: ['REDIS_SENTINEL_NAME'],
      message: 'is required with REDIS_SENTINELS (the master name the Sentinels monitor)',
    })
    // a cluster has no Sentinels (its masters fail over among themselves)
    .refine((c) => c.REDIS_CLUSTER_NODES === undefined || c.REDIS_SENTINELS === undefined, {
      path: ['REDIS_CLUSTER_NODES'],
      message: 'cannot be set with REDIS_SENTINELS (a Redis Cluster fails over by itself; set one of the two)',
    })
    // the partition hash tag follows the prefix: a brace in it would be read as the tag
    .refine((c) => c.REDIS_CLUSTER_NODES === undefined || !/[{}]/.test(c.REDIS_PREFIX), {
      path: ['REDIS_PREFIX'],
      message: 'must not hold { or } with REDIS_CLUSTER_NODES (the partition hash tag follows it)',
    })
    // a token the bank issued for another service must not sign in here: with an SSO provider
    // configured, the audience the hub checks is required
    .refine((c) => (c.SSO_JWKS_URL === undefined && c.SSO_PUBLIC_KEY === undefined) || c.SSO_AUDIENCE !== undefined, {
      path: ['SSO_AUDIENCE'],
      message: 'is required with SSO_JWKS_URL or SSO_PUBLIC_KEY (the audience, aud, of the tokens meant for this hub)',
    })
    .safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid configuration: ${problems}`);
  }
  return parsed.data;
}

/**
 * The configuration of a process entry point (the hub, the CLIs): a bad setting is printed (its
 * message names it) and the process exits 2, as the deployment docs promise.
 */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
}
