import { z } from 'zod'

/**
 * The W3C Trace Context a view hands on, as two optional fields: the `traceparent` (and the
 * `tracestate` that came with it) of `of`, which the agent reading the view sends as its own
 * headers (or MCP `_meta`) to continue that trace.
 *
 * @example
 * const MessageView = z.object({ id: z.string(), ...handedTrace('the request that sent it') })
 */
export function handedTrace(of: string) {
  return {
    traceparent: z
      .string()
      .optional()
      .describe(`The W3C traceparent of ${of}: send it as your traceparent to continue that trace`),
    tracestate: z
      .string()
      .optional()
      .describe('The W3C tracestate that came with the traceparent: send it as your tracestate'),
  }
}
