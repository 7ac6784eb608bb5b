import type { ErrorCode } from '@baton/protocol'
import { BatonError } from '@baton/protocol/primitives'
import type { FastifyRequest } from 'fastify'
import type { AppContext } from '../app.js'
import { bearerToken } from '../http/bearer.js'
import type { SignedCaller } from '../identity/caller.js'
import type { Auth, Caller } from './operation.js'

/**
 * Everything one kind of auth means, in every face: the faces read this table and make no
 * decision of their own about who must show what.
 */
export interface AuthKind {
  /** What each request must carry before the operation runs. */
  credential: 'nothing' | 'bearer token' | 'signature'
  /** Whether the signature hook requires a signed, admitted request for the route. */
  signed: boolean
  /** What this kind adds to an operation's answers. */
  errors: readonly ErrorCode[]
  /** The OpenAPI security requirement (its schemes are in the document's components). */
  security: readonly object[]
  /**
   * How `baton` takes the credential: its flag, the variables that stand in for it (in order)
   * and what a command without it says; and what `--help` says of the auth.
   */
  cli: {
    credential?: {
      flag: 'token' | 'identity' | 'admin-token'
      env: readonly string[]
      missing: string
    }
    help: string
    /** Whether its commands sit under `baton admin`. */
    admin: boolean
  }
  /**
   * How a remote face (the CLI, `baton mcp`) sends the call: signed as its identity, or plain,
   * with `caller.token` as `Authorization: Bearer` when the kind takes a bearer token.
   */
  remote: 'plain' | 'bearer' | 'signed'
  /**
   * Which MCP sessions are offered the operation as a tool: every session, signed ones only, or
   * none (minting a transfer token or approving admission is never a tool).
   */
  mcp: 'every session' | 'signed sessions' | 'never'
  /**
   * The extra tool argument holding the credential, for a kind a tool call must name: a string,
   * described so. (Not a schema here: the CLI reads this table, and loads no zod.)
   */
  toolArg?: { name: 'token'; description: string }
  /** Checks an HTTP request's credential and puts what it proves on the caller. */
  fromHttp(ctx: AppContext, req: FastifyRequest, caller: Caller): void
}

/** The signed caller of a request the signature hook admitted, or `signature_missing`. */
export function requireSigned(req: FastifyRequest): SignedCaller {
  if (!req.signed) throw new BatonError('signature_missing', 'The request is not signed')
  return req.signed
}

const SIGNATURE_ERRORS: readonly ErrorCode[] = [
  'signature_missing',
  'signature_malformed',
  'unknown_key',
  'signature_invalid',
  'digest_mismatch',
  'signature_stale',
  'signature_replayed',
  'admission_pending',
  'admission_rejected',
  'principal_suspended',
]

/** The one table of auth kinds. */
export const AUTH_KINDS: { readonly [K in Auth]: AuthKind } = {
  none: {
    credential: 'nothing',
    signed: false,
    errors: [],
    security: [],
    cli: { help: 'no credentials', admin: false },
    remote: 'plain',
    mcp: 'every session',
    fromHttp() {},
  },
  'handoff-token': {
    credential: 'bearer token',
    signed: false,
    errors: ['token_missing'],
    security: [{ handoffToken: [] }],
    cli: {
      credential: {
        flag: 'token',
        env: ['BATON_TOKEN', 'BATON_HANDOFF_TOKEN'],
        missing: '--token is required (or set BATON_TOKEN)',
      },
      help: 'needs --token',
      admin: false,
    },
    remote: 'bearer',
    mcp: 'every session',
    toolArg: { name: 'token', description: 'The owner or receiver token' },
    fromHttp(_ctx, req, caller) {
      caller.token = bearerToken(req)
      if (!caller.token) {
        throw new BatonError('token_missing', 'Send the token as Authorization: Bearer <token>')
      }
    },
  },
  signature: {
    credential: 'signature',
    signed: true,
    errors: SIGNATURE_ERRORS,
    security: [{ httpSignature: [] }],
    cli: {
      credential: {
        flag: 'identity',
        env: ['BATON_IDENTITY'],
        missing: '--identity FILE is required (or set BATON_IDENTITY)',
      },
      help: 'signed with --identity',
      admin: false,
    },
    remote: 'signed',
    mcp: 'signed sessions',
    fromHttp(_ctx, req, caller) {
      caller.principal = requireSigned(req).principal
    },
  },
  operator: {
    credential: 'bearer token',
    signed: false,
    errors: ['admin_token_invalid', 'admin_disabled'],
    security: [{ operatorToken: [] }],
    cli: {
      credential: {
        flag: 'admin-token',
        env: ['BATON_ADMIN_TOKEN'],
        missing: '--admin-token is required (or set BATON_ADMIN_TOKEN)',
      },
      help: 'needs --admin-token',
      admin: true,
    },
    remote: 'bearer',
    mcp: 'never',
    fromHttp(ctx, req) {
      ctx.identity.assertAdmin(bearerToken(req))
    },
  },
}

const KINDS = Object.keys(AUTH_KINDS) as Auth[]
const SESSION_AUTHS = {
  signed: new Set(KINDS.filter((k) => AUTH_KINDS[k].mcp !== 'never')),
  unsigned: new Set(KINDS.filter((k) => AUTH_KINDS[k].mcp === 'every session')),
}

/** The kinds of auth an MCP session satisfies, signed or not: it is offered their tools. */
export function sessionAuths(signed: boolean): ReadonlySet<Auth> {
  return signed ? SESSION_AUTHS.signed : SESSION_AUTHS.unsigned
}
