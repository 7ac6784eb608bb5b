import { fromHandoffJson, fromStatusJson, toHandoffJson, toStatusJson } from './carry.js'
import { MCP_META_KEY } from './constants.js'
import type { SignedElement } from './digest.js'
import type { Handoff } from './offer.js'
import type { SignedStatus, StatusObject } from './status.js'

/** Anything with an MCP `_meta` object: request params, a result, notification params. */
export interface McpMetaCarrier {
  /** MCP metadata. */
  _meta?: { [key: string]: unknown } | undefined
}

/**
 * Puts a Handoff object into MCP request params (e.g. `tools/call`) under `_meta`. Returns new
 * params.
 * @example client.callTool(withMcpHandoff({ name: 'write_patch', arguments: {} }, handoff))
 */
// seed 003: the Handoff object goes under "quantumlearningmachines.com/agent-handoff" in the
// _meta object of the request params
export function withMcpHandoff<P extends object>(
  params: P,
  handoff: Handoff,
): P & { _meta: { [key: string]: unknown } } {
  const meta = (params as McpMetaCarrier)._meta ?? {}
  return { ...params, _meta: { ...meta, [MCP_META_KEY]: toHandoffJson(handoff) } }
}

/**
 * Takes the Handoff object out of MCP params or a bare `_meta` object; undefined when none is
 * carried, ContextError('bad-signature') when malformed.
 */
export function readMcpHandoff(
  carrier: McpMetaCarrier | { [key: string]: unknown },
): Handoff | undefined {
  const v = metaOf(carrier)?.[MCP_META_KEY]
  return v === undefined ? undefined : fromHandoffJson(v)
}

/**
 * Puts a Status object under `_meta` of a CallToolResult, or of `notifications/cancelled` params
 * for a delegator's `canceled`. Returns a new object.
 */
// seed 003: a status goes under the same key in the CallToolResult's _meta; a canceled status in
// the _meta of the notifications/cancelled notification
export function withMcpStatus<C extends object>(
  carrier: C,
  status: SignedStatus | SignedElement | StatusObject,
): C & { _meta: { [key: string]: unknown } } {
  const meta = (carrier as McpMetaCarrier)._meta ?? {}
  return { ...carrier, _meta: { ...meta, [MCP_META_KEY]: toStatusJson(status) } }
}

/** Takes the Status object out of a CallToolResult, cancelled-notification params or `_meta`. */
export function readMcpStatus(
  carrier: McpMetaCarrier | { [key: string]: unknown },
): StatusObject | undefined {
  const v = metaOf(carrier)?.[MCP_META_KEY]
  return v === undefined ? undefined : fromStatusJson(v)
}

function metaOf(
  carrier: McpMetaCarrier | { [key: string]: unknown },
): Record<string, unknown> | undefined {
  const meta = (carrier as McpMetaCarrier)._meta
  if (typeof meta === 'object' && meta !== null) return meta
  return MCP_META_KEY in carrier ? (carrier as Record<string, unknown>) : undefined
}
