/**
 * The protocol without its schemas: error codes and `BatonError`, the constants of discovery and
 * the signature profile, RFC 8941 structured fields, RFC 9530 digests, RFC 9421 signatures, RFC
 * 8785 canonical JSON and did:key, whole numbers as text and the identity file's shape.
 * The package root exports all of it too; this entry loads no zod, for programs that start, send
 * a request or two and exit (the `baton` CLI).
 *
 * @example import { BatonError, DISCOVERY_PATH } from '@baton/protocol/primitives'
 */
export * from './canonical-json.js'
export * from './constants.js'
export * from './content-digest.js'
export * from './did-key.js'
export * from './errors.js'
export * from './http-signatures.js'
export * from './identity-file.js'
export * from './platform.js'
export * from './structured-fields.js'
export * from './whole-number.js'
