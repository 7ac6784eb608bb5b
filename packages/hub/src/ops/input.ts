import type { Config } from '../config.js'
import { parseInput } from '../validation.js'
import { inputSchemas, type Operation, type OperationInput } from './operation.js'

/** What each part of an input is called in error messages, by the face that received it. */
export interface InputNames {
  params: string
  query: string
  body: string
}

/** An HTTP request's parts, as errors name them. */
export const HTTP_INPUT: InputNames = { params: 'path', query: 'query', body: 'body' }
/** A tool call's arguments, which hold every part flattened. */
export const TOOL_INPUT: InputNames = { params: 'arguments', query: 'arguments', body: 'arguments' }

/**
 * Validates the three parts of an operation's input with its declared schemas: the one parse
 * between a face and `run`, so services receive typed input and never parse it again. A part
 * the operation declares no schema for is empty (no route without `:params` has any).
 */
export function parseOperationInput(
  op: Operation,
  raw: Partial<OperationInput<unknown, unknown, unknown>>,
  names: InputNames,
  config: Config,
): OperationInput<never, never, never> {
  const { params, query, body } = inputSchemas(op, config)
  return {
    params: params ? parseInput(params, raw.params ?? {}, names.params) : {},
    query: query ? parseInput(query, raw.query ?? {}, names.query) : {},
    body: body ? parseInput(body, raw.body, names.body) : undefined,
  } as OperationInput<never, never, never>
}
