import { A2A_EXTENSION_URI } from '@baton/context'
import {
  A2A_RELAY_EXTENSION_URI,
  AnswerHandoffInput,
  booleanFlag,
  canonicalJson,
  HandoffObject,
  wholeNumber,
  withCode,
} from '@baton/protocol'
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
/** A did:key as the hub names principals. */
export const DID_KEY = /^did:key:z[1-9A-HJ-NP-Za-km-z]+$/
const metadata = z.record(z.string(), z.unknown())
/**
 * A generation: an int64 in ProtoJSON is its decimal text, and a query parameter is text, so its
 * digits are taken as well as a JSON integer (the exact codec every face publishes).
 */
const generation = () => wholeNumber().describe('A task generation (A2A dev-1.1)')

/** The most tasks one ListTasks page answers, and how many when `pageSize` is unset. */
export const LIST_PAGE_SIZE = { default: 50, max: 100 } as const

/**
 * A text the official SDK (1.x) writes as `""` when it is unset (ProtoJSON's zero for a string):
 * the empty text is read as unset, any other as itself.
 */
function unsetWhenEmpty<S extends z.ZodType<string, string>>(text: S) {
  return text.transform((t) => (t === '' ? undefined : t))
}

/**
 * ListTasks' `status` as the official SDK (1.x) writes it: an unset status is `"UNRECOGNIZED"`
 * (or ProtoJSON's `TASK_STATE_UNSPECIFIED`), each read as no filter; a state filters by it.
 */
const taskStateFilter = z
  .union([z.enum(TASK_STATES), z.enum(['TASK_STATE_UNSPECIFIED', 'UNRECOGNIZED'])])
  .transform((s): TaskState | undefined =>
    s === 'TASK_STATE_UNSPECIFIED' || s === 'UNRECOGNIZED' ? undefined : s,
  )

/**
 * ListTasks' `pageSize` as the official SDK (1.x) writes it: an unset size is `0` (ProtoJSON's
 * zero), read as unset; 1 to {@link LIST_PAGE_SIZE}.max is a page of that many.
 */
const listPageSize = wholeNumber({ max: LIST_PAGE_SIZE.max }).transform((n) =>
  n === 0 ? undefined : n,
)

/** Where a page of ListTasks starts: after the task last answered, by change time and id. */
export interface TaskCursor {
  updatedAt: number
  id: string
}

/** The `nextPageToken` that continues a ListTasks page after `cursor`. */
export function toPageToken(cursor: TaskCursor): string {
  return Buffer.from(canonicalJson({ u: cursor.updatedAt, i: cursor.id })).toString('base64url')
}

/**
 * ListTasks' `pageToken`: a `nextPageToken` this hub gave out (base64url), answered as the
 * cursor it names; `""` (the SDK's unset) is no token. Any other text is `invalid_request`.
 */
const pageToken = withCode(
  z
    .string()
    .max(256)
    .regex(/^[A-Za-z0-9_-]*$/, 'a nextPageToken this hub gave out')
    .transform((token, ctx): TaskCursor | undefined => {
      if (token === '') return undefined
      try {
        const { u, i } = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'))
        if (Number.isSafeInteger(u) && typeof i === 'string') return { updatedAt: u, id: i }
      } catch {
        // falls through to the refusal
      }
      ctx.addIssue({ code: 'custom', message: 'pageToken is not one this hub gave out' })
      return z.NEVER
    }),
  'cursor_invalid',
)

export const Part = z.looseObject({ metadata: metadata.optional() })

/**
 * A message's metadata: any members, and under the signed handoff context's URI (seed 003) a
 * Handoff object (in a user message) or a signed status (in an agent's message).
 */
const MessageMetadata = z.looseObject({
  [A2A_EXTENSION_URI]: z.union([HandoffObject, AnswerHandoffInput]).optional(),
})

export const Message = z.looseObject({
  messageId: id,
  role: z.enum(['ROLE_USER', 'ROLE_AGENT']),
  parts: z.array(Part).min(1).max(256),
  contextId: id.optional(),
  taskId: id.optional(),
  metadata: MessageMetadata.optional(),
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
/** A push config as sent. */
export type PushConfig = z.output<typeof PushConfigInput>
/** A push config as sent, for the task the request names. */
export type SetPushConfigInput = PushConfig & { taskId: string }

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
  ifGenerationMatch: generation().optional(),
})
export type RelayUpdate = z.output<typeof RelayUpdate>

/** The agent a new task is addressed to, with the way to name it when it is missing. */
const NewTaskTenant = withCode(
  z.string().max(256).regex(DID_KEY, 'an admitted agent’s did:key'),
  'invalid_request',
  'Set tenant to the did:key of the agent: build the A2A client from the card at /.well-known/agent-card.json?tenant=<did:key>, whose interface carries it into every request.',
).describe('The did:key of the agent a new task is addressed to')

const sendFields = {
  configuration: z
    .looseObject({
      acceptedOutputModes: z.array(z.string().max(256)).max(64).optional(),
      taskPushNotificationConfig: PushConfigInput.optional(),
      historyLength: wholeNumber().optional(),
      returnImmediately: z.boolean().optional(),
      ifGenerationMatch: generation().optional(),
    })
    .optional(),
  metadata: z.looseObject({ [RELAY_EXTENSION_URI]: RelayUpdate.optional() }).optional(),
}

/**
 * SendMessage's params, in the two shapes a send takes: a message that names its task continues
 * it (either party, `tenant` as the client's interface carries it); one that names none starts a
 * task, so it is the owner's ROLE_USER message and `tenant` names the agent it is addressed to
 * (an admitted principal, as A2A 1.0 names a tenant behind one endpoint).
 */
export const SendMessageParams = z.union([
  z.looseObject({
    tenant: NewTaskTenant,
    message: Message.extend({ role: z.literal('ROLE_USER') }),
    ...sendFields,
  }),
  z.looseObject({
    tenant: z.string().max(256).optional(),
    message: Message.extend({ taskId: id.describe('The task this message continues') }),
    ...sendFields,
  }),
])
export type SendMessageParams = z.output<typeof SendMessageParams>

export const GetTaskParams = z.looseObject({
  id,
  tenant: z.string().max(256).optional(),
  historyLength: wholeNumber().optional(),
  currentGeneration: generation().optional(),
})
/** What GetTask reads. */
export type GetTaskInput = Pick<
  z.output<typeof GetTaskParams>,
  'id' | 'historyLength' | 'currentGeneration'
>

export const ListTasksParams = z.looseObject({
  tenant: z.string().max(256).optional(),
  contextId: unsetWhenEmpty(z.string().max(256)).optional(),
  status: taskStateFilter.optional(),
  pageSize: listPageSize.optional(),
  pageToken: pageToken.optional(),
  historyLength: wholeNumber().optional(),
  includeArtifacts: booleanFlag().optional(),
})
/** What ListTasks reads. */
export type ListTasksInput = z.output<typeof ListTasksParams>

export const CancelTaskParams = z.looseObject({
  id,
  tenant: z.string().max(256).optional(),
  metadata: metadata.optional(),
})

export const TaskRefParams = z.looseObject({ id, tenant: z.string().max(256).optional() })

/** A task's push config, by the task's id and its own. */
export interface PushConfigRef {
  taskId: string
  id: string
}

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
