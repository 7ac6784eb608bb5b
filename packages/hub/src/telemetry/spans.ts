import type { Attributes, Tracer } from '@opentelemetry/api'

// The tracer of the hub that configured an exporter, or none: with none, `inSpan` is a plain
// call and nothing of OpenTelemetry runs. One per process, as OpenTelemetry's global API is.
let active: Tracer | undefined
let api: typeof import('@opentelemetry/api') | undefined

/** Sets (or, with undefined, clears) the tracer spans are made with; `startTracing` calls it. */
export function useTracer(
  tracer: Tracer | undefined,
  otel: typeof import('@opentelemetry/api') | undefined,
): void {
  active = tracer
  api = otel
}

/** The tracer spans are made with, while tracing is configured. */
export function activeTracer(): Tracer | undefined {
  return active
}

/**
 * Runs `fn` in a span named `name`, a child of the active span, when tracing is configured;
 * otherwise it only calls `fn`. A thrown error marks the span failed and is thrown on.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  const tracer = active
  if (!tracer || !api) return fn()
  const { SpanStatusCode } = api
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn()
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR })
      span.recordException(error as Error)
      throw error
    } finally {
      span.end()
    }
  })
}
