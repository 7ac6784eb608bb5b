import { A2A_RELAY_EXTENSION_URI } from '@baton/protocol'
import { z } from 'zod'

/**
 * The A2A 1.0 wire shapes the hub reads (ProtoJSON of `lf.a2a.v1`, as `@a2a-js/sdk` sends them),
 * with the dev-1.1 `generation` fields (A2A PR 1810). Objects are loose: fields the hub does not
 * read are kept as sent, so a newer peer's fields travel through the relay unchanged.
 */

/** Baton's own A2A extension: what a 1.0 peer, whose types drop dev-1.1 fields, reads and sends. */
export const RELAY_EXTENSION_URI = A2A_RELAY_EXTENSION_URI

/** The task states of A2A 1.0, as ProtoJSON enum names. */
export const TASK_STATES = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
] as const
export type TaskState = (typeof TASK_STATES)[number]

/** A2A 1.0: terminal states take no more messages and no more changes. */
export const TERMINAL_STATES: ReadonlySet<string> = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
])

/** A2A 1.0: interrupted states, where a blocking send and a stream stop to hand back the turn. */
export const INTERRUPTED_STATES: ReadonlySet<string> = new Set([
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
])

const id = z.string().min(1).max(256)
const metadata = z.record(z.string(), z.unknown())
/**
 * A whole number: an int64 in ProtoJSON is a decimal string, and a query parameter is text, so
 * digits are accepted as well as a number.
 */
const whole = z.union([
  z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  z
    .string()
    .regex(/^\d{1,15}$/)
    .transform(Number),
])
const generation = whole
/** A boolean, or its text as a query parameter carries it. */
const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')])

export const Part = z.looseObject({ metadata: metadata.optional() })

export const Message = z.looseObject({
  messageId: id,
  role: z.enum(['ROLE_USER', 'ROLE_AGENT']),
  parts: z.array(Part).min(1).max(256),
  contextId: id.optional(),
  taskId: id.optional(),
  metadata: metadata.optional(),
  extensions: z.array(z.string().max(2048)).max(64).optional(),
  referenceTaskIds: z.array(id).max(64).optional(),
})
export type Message = z.output<typeof Message>

export const Artifact = z.looseObject({
  artifactId: id,
  parts: z.array(Part).min(1).max(256),
  name: z.string().max(1024).optional(),
  description: z.string().max(4096).optional(),
  metadata: metadata.optional(),
})
export type Artifact = z.output<typeof Artifact>

export const PushConfigInput = z.looseObject({
  id: id.optional(),
  taskId: id.optional(),
  tenant: z.string().max(256).optional(),
  url: z.string().min(1).max(2048),
  // Sent as a header value with every delivery: visible ASCII only, so a delivery never fails on it.
  token: z
    .string()
    .max(1024)
    .regex(/^[\x21-\x7E]*$/, 'The token is sent as a header: visible ASCII, no spaces')
    .optional(),
  authentication: z.unknown().optional(),
})

/** What the agent of a task may add to its own send, under {@link RELAY_EXTENSION_URI}. */
export const RelayUpdate = z.looseObject({
  state: z.enum(TASK_STATES).optional(),
  artifacts: z
    .array(
      z.strictObject({
        artifact: Artifact,
        append: z.boolean().optional(),
        lastChunk: z.boolean().optional(),
      }),
    )
    .max(64)
    .optional(),
  ifGenerationMatch: generation.optional(),
})

export const SendMessageParams = z.looseObject({
  /** The addressee: an admitted principal, as A2A 1.0 names a tenant behind one endpoint. */
  tenant: z.string().max(256).optional(),
  message: Message,
  configuration: z
    .looseObject({
      acceptedOutputModes: z.array(z.string().max(256)).max(64).optional(),
      taskPushNotificationConfig: PushConfigInput.optional(),
      historyLength: whole.optional(),
      returnImmediately: z.boolean().optional(),
      ifGenerationMatch: generation.optional(),
    })
    .optional(),
  metadata: metadata.optional(),
})
export type SendMessageParams = z.output<typeof SendMessageParams>

export const GetTaskParams = z.looseObject({
  id,
  tenant: z.string().max(256).optional(),
  historyLength: whole.optional(),
  currentGeneration: generation.optional(),
})

export const ListTasksParams = z.looseObject({
  tenant: z.string().max(256).optional(),
  contextId: z.string().max(256).optional(),
  // The official SDK (1.x) writes an unset status as "UNRECOGNIZED" and an unset page size as 0
  // (ProtoJSON's zero): each is read as unset, so the SDK's own request is served.
  status: z
    .union([
      z.enum(TASK_STATES),
      z.literal('TASK_STATE_UNSPECIFIED'),
      z.literal('UNRECOGNIZED').transform(() => 'TASK_STATE_UNSPECIFIED' as const),
    ])
    .optional(),
  pageSize: whole
    .pipe(z.number().max(100))
    .transform((n) => (n === 0 ? undefined : n))
    .optional(),
  pageToken: z.string().max(256).optional(),
  historyLength: whole.optional(),
  includeArtifacts: flag.optional(),
})

export const CancelTaskParams = z.looseObject({
  id,
  tenant: z.string().max(256).optional(),
  metadata: metadata.optional(),
})

export const TaskRefParams = z.looseObject({ id, tenant: z.string().max(256).optional() })

export const PushConfigRefParams = z.looseObject({
  taskId: id,
  id,
  tenant: z.string().max(256).optional(),
})

export const ListPushConfigsParams = z.looseObject({
  taskId: id,
  tenant: z.string().max(256).optional(),
  pageSize: whole.optional(),
  pageToken: z.string().max(256).optional(),
})

/** A task as A2A 1.0 shows it, plus dev-1.1 `generation`. */
export interface TaskView {
  id: string
  contextId: string
  status: TaskStatusView
  artifacts: Artifact[]
  history: Message[]
  generation: number
  metadata: Record<string, unknown>
}

export interface TaskStatusView {
  state: TaskState
  message?: Message
  timestamp: string
}

/** One event of a task's stream: a StreamResponse of A2A 1.0, and its generation. */
export type StreamEvent =
  | { task: TaskView }
  | {
      statusUpdate: {
        taskId: string
        contextId: string
        status: TaskStatusView
        generation: number
        metadata: Record<string, unknown>
      }
    }
  | {
      artifactUpdate: {
        taskId: string
        contextId: string
        artifact: Artifact
        append: boolean
        lastChunk: boolean
        generation: number
        metadata: Record<string, unknown>
      }
    }

export interface PushConfigView {
  id: string
  taskId: string
  url: string
  token?: string
}
