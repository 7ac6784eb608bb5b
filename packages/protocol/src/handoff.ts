import { z } from 'zod'
import { DEFAULT_MAX_WAIT_SECONDS } from './codecs.js'
import { nonNullJson } from './json.js'
import { handedTrace } from './trace.js'

/** Seed 002 defaults: the machine every handoff uses unless it declares its own. */
export const DEFAULT_MACHINE = {
  states: ['offered', 'accepted', 'working', 'done', 'failed', 'returned'],
  final: ['done', 'failed', 'returned'],
} as const

/** Seed 002 limits, each overridable by the hub's configuration. */
export const HANDOFF_LIMITS = {
  maxPayloadBytes: 16 * 1024,
  maxNoteChars: 500,
  maxStates: 12,
  maxWaitSeconds: DEFAULT_MAX_WAIT_SECONDS,
  ttlMs: 24 * 60 * 60 * 1000,
  dailyCreatesPerIp: 100,
} as const

/** A state name: a short identifier safe in a URL path segment. */
export const StateName = z
  .string()
  .min(1)
  .max(64)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    'letters, digits, _ . - and starting with a letter or digit',
  )

/** A caller's nonce that makes a move safe to repeat. */
export const Nonce = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')

/** The limits of a token handoff's input that a hub's operator may change. */
export interface HandoffInputLimits {
  /** Characters of a note on a handoff or a move. */
  maxNoteChars: number
  /** States of a custom machine. */
  maxStates: number
}

/**
 * The body of `POST /services/v1/handoff` under a hub's limits: the whole rule of its shape
 * (a machine's meaning, such as final states being declared ones, is `invalid_machine`).
 */
export function createHandoffInput(limits: HandoffInputLimits = HANDOFF_LIMITS) {
  const states = z.array(StateName).max(limits.maxStates)
  return z.strictObject({
    payload: nonNullJson(),
    note: z.string().max(limits.maxNoteChars).optional(),
    notify_url: z.string().max(2048).optional(),
    states: states.min(2).optional(),
    final: states.min(1).optional(),
    transitions: z.record(StateName, states).optional(),
  })
}
/** The body of `POST /services/v1/handoff` under the default limits. */
export const CreateHandoffInput = createHandoffInput()
/** A parsed create request. */
export type CreateHandoffInput = z.infer<typeof CreateHandoffInput>

/** The body of `POST /services/v1/handoff/{id}/{state}` under a hub's limits. */
export function advanceInput(limits: Pick<HandoffInputLimits, 'maxNoteChars'> = HANDOFF_LIMITS) {
  return z.strictObject({
    from: StateName,
    nonce: Nonce.optional(),
    note: z.string().max(limits.maxNoteChars).optional(),
  })
}
/** The body of a move under the default limits. */
export const AdvanceInput = advanceInput()
/** A parsed move request. */
export type AdvanceInput = z.infer<typeof AdvanceInput>

/** A handoff's state machine as answered on the wire. */
export const MachineView = z.object({
  states: z.array(z.string()),
  final: z.array(z.string()),
  transitions: z.record(z.string(), z.array(z.string())),
})
/** A machine with every non-final state's moves spelled out. */
export type MachineView = z.infer<typeof MachineView>

/** One committed move in a handoff's history. */
export const MoveView = z.object({
  from: z.string(),
  to: z.string(),
  version: z.number().int(),
  by: z.enum(['owner', 'receiver']),
  nonce: z.string().nullable(),
  note: z.string().nullable(),
  at: z.iso.datetime(),
})
/** A committed move. */
export type MoveView = z.infer<typeof MoveView>

/** A handoff as read with either token. */
export const HandoffView = z.object({
  handoff_id: z.string(),
  state: z.string(),
  version: z.number().int(),
  ended: z.boolean(),
  payload: z.unknown(),
  note: z.string().nullable(),
  machine: MachineView,
  allowed_next: z.array(z.string()),
  history: z.array(MoveView),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
  expires_at: z.iso.datetime(),
  ...handedTrace('the request that created the handoff or, once moved, made its last move'),
})
/** A handoff as read. */
export type HandoffView = z.infer<typeof HandoffView>

/** The answer to a create: the handoff plus both tokens, shown only this once. */
export const CreatedHandoffView = z.object({
  handoff_id: z.string(),
  owner_token: z.string(),
  receiver_token: z.string(),
  state: z.string(),
  version: z.number().int(),
  ended: z.boolean(),
  machine: MachineView,
  created_at: z.iso.datetime(),
  expires_at: z.iso.datetime(),
})
/** A created handoff with its tokens. */
export type CreatedHandoffView = z.infer<typeof CreatedHandoffView>

/** The answer to a committed move, or to a repeat of one (`repeated: true`). */
export const MoveResultView = z.object({
  handoff_id: z.string(),
  state: z.string(),
  version: z.number().int(),
  ended: z.boolean(),
  from: z.string(),
  by: z.enum(['owner', 'receiver']),
  nonce: z.string().nullable(),
  at: z.iso.datetime(),
  repeated: z.boolean(),
  current_state: z.string(),
  current_version: z.number().int(),
  current_ended: z.boolean(),
})
/** A move's answer. */
export type MoveResultView = z.infer<typeof MoveResultView>

/** The answer to a wait: the handoff and whether it changed while waiting. */
export const WaitView = HandoffView.extend({ changed: z.boolean() })
/** A wait's answer. */
export type WaitView = z.infer<typeof WaitView>

/** The small signal posted to a handoff's notify_url after each committed move (no payload, no token). */
export interface NotifySignal {
  /** Stable across retries of one signal, so a receiver can drop a repeat. */
  event_id: string
  handoff_id: string
  state: string
  version: number
  ended: boolean
  at: string
}
