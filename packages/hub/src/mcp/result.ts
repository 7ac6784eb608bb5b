import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { toBatonError } from '../http/errors.js'

/**
 * Runs a tool's operation and shapes the answer: the result as structured content and JSON text,
 * or a domain failure as `isError: true` with the same code and context as the HTTP body.
 */
export async function toolCall(fn: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    const value = (await fn()) as Record<string, unknown>
    return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value }
  } catch (error) {
    const body = toBatonError(error).toBody()
    return {
      isError: true,
      content: [{ type: 'text', text: JSON.stringify(body) }],
      structuredContent: body,
    }
  }
}
