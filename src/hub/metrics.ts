import client from 'prom-client';

/** The hub's Prometheus registry: requests and latency per route, open sockets, event-loop lag. */
export function createMetrics() {
  const registry = new client.Registry();
  // nodejs_eventloop_lag_* (including p99) and process figures
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });

  const requests = new client.Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const latency = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
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

  // Label lookups hash their values on every call: keep the labelled children per combination.
  const children = new Map<
    string,
    { count: ReturnType<typeof requests.labels>; time: ReturnType<typeof latency.labels> }
  >();

  return {
    registry,
    websockets,
    sseStreams,
    wsDropped,
    observe(method: string, route: string, status: number, seconds: number) {
      const key = `${method} ${status} ${route}`;
      let c = children.get(key);
      if (!c) {
        c = { count: requests.labels(method, route, String(status)), time: latency.labels(method, route) };
        children.set(key, c);
      }
      c.count.inc();
      c.time.observe(seconds);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
