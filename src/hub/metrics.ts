import client from 'prom-client';

/**
 * The hub's Prometheus registry: requests and latency per route, open sockets, event-loop lag.
 *
 * Requests are counted on the hot path, so their two families are kept in plain arrays (one
 * `RouteSeries` per method and route, fetched once and held by the caller) and turned into the
 * exposition format only when /metrics is scraped: an observation is a few array writes, with no
 * label hashing per request.
 */

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** The latency histogram and the per-status counts of one method and route. */
export class RouteSeries {
  readonly buckets = new Float64Array(BUCKETS.length);
  sum = 0;
  count = 0;
  readonly statuses = new Map<number, number>();

  constructor(
    readonly method: string,
    readonly route: string,
  ) {}

  observe(status: number, seconds: number): void {
    this.count++;
    this.sum += seconds;
    for (let i = 0; i < BUCKETS.length; i++) {
      if (seconds <= BUCKETS[i]!) {
        this.buckets[i]!++;
        break;
      }
    }
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
  }
}

type Value = { value: number; labels: Record<string, string | number>; metricName?: string };

/** A metric family prom-client's registry can expose, computed from the series at scrape time. */
function family(name: string, help: string, type: 'counter' | 'histogram', values: () => Value[]) {
  return {
    name,
    help,
    type,
    aggregator: 'sum' as const,
    get: async () => ({ name, help, type, aggregator: 'sum' as const, values: values() }),
    reset: () => undefined,
  };
}

export function createMetrics() {
  const registry = new client.Registry();
  // nodejs_eventloop_lag_* (including p99) and process figures
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });

  const series = new Map<string, RouteSeries>();
  const all = () => [...series.values()];
  registry.registerMetric(
    family('http_requests_total', 'HTTP requests by method, route pattern and status', 'counter', () =>
      all().flatMap((s) => [...s.statuses].map(([status, n]) => ({ value: n, labels: { method: s.method, route: s.route, status } }))),
    ) as unknown as client.Metric,
  );
  registry.registerMetric(
    family('http_request_duration_seconds', 'HTTP request latency by method and route pattern', 'histogram', () =>
      all().flatMap((s) => {
        const out: Value[] = [];
        let acc = 0;
        for (let i = 0; i < BUCKETS.length; i++) {
          acc += s.buckets[i]!;
          out.push({ value: acc, labels: { le: BUCKETS[i]!, method: s.method, route: s.route }, metricName: 'http_request_duration_seconds_bucket' });
        }
        out.push({ value: s.count, labels: { le: '+Inf', method: s.method, route: s.route }, metricName: 'http_request_duration_seconds_bucket' });
        out.push({ value: s.sum, labels: { method: s.method, route: s.route }, metricName: 'http_request_duration_seconds_sum' });
        out.push({ value: s.count, labels: { method: s.method, route: s.route }, metricName: 'http_request_duration_seconds_count' });
        return out;
      }),
    ) as unknown as client.Metric,
  );
  const websockets = new client.Gauge({
    name: 'websocket_connections_open',
    help: 'Open WebSocket connections',
    registers: [registry],
  });
  const sseStreams = new client.Gauge({
    name: 'sse_streams_open',
    help: 'Open Server-Sent Events streams',
    registers: [registry],
  });
  const wsDropped = new client.Counter({
    name: 'websocket_messages_dropped_total',
    help: 'Messages not delivered to a slow WebSocket subscriber, by topic policy',
    labelNames: ['policy'] as const,
    registers: [registry],
  });
  const unhandledRejections = new client.Counter({
    name: 'unhandled_rejections_total',
    help: 'Rejected promises that nothing handled (a defect of the hub; logged as "unhandled rejection")',
    registers: [registry],
  });
  const wsClosedOverBudget = new client.Counter({
    name: 'websocket_closed_over_budget_total',
    help: 'WebSockets closed with 1008 for sending more messages than their budget',
    registers: [registry],
  });

  /** The series of one method and route (made on first use; hold on to it). */
  const seriesOf = (method: string, route: string): RouteSeries => {
    const key = `${method} ${route}`;
    let s = series.get(key);
    if (!s) series.set(key, (s = new RouteSeries(method, route)));
    return s;
  };

  return {
    registry,
    websockets,
    sseStreams,
    wsDropped,
    unhandledRejections,
    wsClosedOverBudget,
    series: seriesOf,
    observe(method: string, route: string, status: number, seconds: number) {
      seriesOf(method, route).observe(status, seconds);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
