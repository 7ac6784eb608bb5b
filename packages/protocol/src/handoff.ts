import { z } from 'zod'

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
  maxWaitSeconds: 25,
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

/** The body of `POST /services/v1/handoff`. */
export const CreateHandoffInput = z.strictObject({
  payload: z.json().refine((v) => v !== null, 'payload must not be null'),
  note: z.string().max(HANDOFF_LIMITS.maxNoteChars).optional(),
  notify_url: z.string().max(2048).optional(),
  states: z.array(StateName).min(1).optional(),
  final: z.array(StateName).optional(),
  transitions: z.record(z.string(), z.array(StateName)).optional(),
})
/** A parsed create request. */
export type CreateHandoffInput = z.infer<typeof CreateHandoffInput>

/** The body of `POST /services/v1/handoff/{id}/{state}`. */
export const AdvanceInput = z.strictObject({
  from: StateName,
  nonce: Nonce.optional(),
  note: z.string().max(HANDOFF_LIMITS.maxNoteChars).optional(),
})
/** A parsed move request. */
export type AdvanceInput = z.infer<typeof AdvanceInput>

/** A handoff's state machine as answered on the wire. */
export interface MachineView {
  states: string[]
  final: string[]
  transitions: Record<string, string[]>
}

/** One committed move in a handoff's history. */
export interface MoveView {
  from: string
  to: string
  version: number
  by: 'owner' | 'receiver'
  nonce: string | null
  note: string | null
  at: string
}

/** A handoff as read with either token. */
export interface HandoffView {
  handoff_id: string
  state: string
  version: number
  ended: boolean
  payload: unknown
  note: string | null
  machine: MachineView
  allowed_next: string[]
  history: MoveView[]
  created_at: string
  updated_at: string
  expires_at: string
}

/** The answer to a create: the handoff plus both tokens, shown only this once. */
export interface CreatedHandoffView {
  handoff_id: string
  owner_token: string
  receiver_token: string
  state: string
  version: number
  ended: boolean
  machine: MachineView
  created_at: string
  expires_at: string
}

/** The answer to a committed move, or to a repeat of one (`repeated: true`). */
export interface MoveResultView {
  handoff_id: string
  state: string
  version: number
  ended: boolean
  from: string
  by: 'owner' | 'receiver'
  nonce: string | null
  at: string
  repeated: boolean
  current_state: string
  current_version: number
  current_ended: boolean
}

/** The answer to a wait: the handoff and whether it changed while waiting. */
export interface WaitView extends HandoffView {
  changed: boolean
}

/** The small signal posted to a handoff's notify_url after each committed move (no payload, no token). */
export interface NotifySignal {
  handoff_id: string
  state: string
  version: number
  ended: boolean
  at: string
}
