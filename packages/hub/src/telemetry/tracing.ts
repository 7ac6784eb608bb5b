import type { Span } from '@opentelemetry/api'
import type { Logger } from 'pino'
import { useTracer } from './spans.js'
import type { TraceContext } from './trace-context.js'

/** Where and whether the hub exports spans (OTLP over HTTP, JSON encoding). */
export interface TracingConfig {
  /** The OTLP/HTTP traces URL (…/v1/traces); undefined: tracing is off. */
  tracesUrl: string | undefined
  serviceName: string
}

/** The hub's tracing: off (no OpenTelemetry code loaded) or exporting to an OTLP receiver. */
export interface Tracing {
  readonly enabled: boolean
  /** Starts a server span for a request, a child of the caller's trace context when it sent one. */
  startRequest(name: string, parent: TraceContext | undefined): Span | undefined
  /** Runs `fn` with `span` as the active span, so spans started inside are its children. */
  within<T>(span: Span, fn: () => T): T
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>
}

const OFF: Tracing = {
  enabled: false,
  startRequest: () => undefined,
  within: (_span, fn) => fn(),
  shutdown: async () => {},
}

/**
 * Starts tracing when an OTLP endpoint is configured: loads the OpenTelemetry SDK (only then),
 * registers its tracer provider, context manager and W3C propagator, and exports spans in
 * batches. Answers the no-op tracing otherwise.
 */
export async function startTracing(
  config: TracingConfig,
  version: string,
  log: Logger,
): Promise<Tracing> {
  if (!config.tracesUrl) return OFF
  const [api, sdk, otlp, resources, semconv] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ])
  const provider = new sdk.NodeTracerProvider({
    resource: resources.resourceFromAttributes({
      [semconv.ATTR_SERVICE_NAME]: config.serviceName,
      [semconv.ATTR_SERVICE_VERSION]: version,
    }),
    spanProcessors: [
      new sdk.BatchSpanProcessor(new otlp.OTLPTraceExporter({ url: config.tracesUrl })),
    ],
  })
  provider.register()
  const tracer = provider.getTracer('@baton/hub', version)
  useTracer(tracer, api)
  log.info({ traces: config.tracesUrl }, 'exporting OpenTelemetry spans over OTLP/HTTP')
  return {
    enabled: true,
    startRequest(name, parent) {
      let ctx = api.ROOT_CONTEXT
      if (parent) {
        ctx = api.trace.setSpanContext(ctx, {
          traceId: parent.traceId,
          spanId: parent.spanId,
          traceFlags: parent.flags,
          isRemote: true,
          ...(parent.state ? { traceState: api.createTraceState(parent.state) } : {}),
        })
      }
      return tracer.startSpan(name, { kind: api.SpanKind.SERVER }, ctx)
    },
    within(span, fn) {
      return api.context.with(api.trace.setSpan(api.context.active(), span), fn)
    },
    async shutdown() {
      useTracer(undefined, undefined)
      await provider.shutdown().catch((err: unknown) => log.warn({ err }, 'span export failed'))
      api.trace.disable()
      api.context.disable()
      api.propagation.disable()
    },
  }
}
