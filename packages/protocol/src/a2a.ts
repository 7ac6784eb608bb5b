import { z } from 'zod'
import { fromBase64url, toBase64url } from './base64.js'
import { canonicalJson } from './canonical-json.js'
import { booleanFlag, wholeNumber, withCode } from './codecs.js'
import { DID_KEY_PATTERN } from './did-key.js'
import { AnswerHandoffInput, HandoffObject } from './hops.js'

/**
 * Baton's A2A extension (issue 16): the metadata key of tasks and events that carries
 * `generation`, `owner` and `agent` for A2A 1.0 peers, whose types drop the dev-1.1 fields, and
 * under which the agent of a task sets its state and artifacts in its own SendMessage.
 */
export const A2A_RELAY_EXTENSION_URI = 'urn:baton:a2a:relay:v1'

/** The A2A extension URI: the metadata key, also listed in `Message.extensions`. */
// seed 003: the A2A carrying key
export const A2A_EXTENSION_URI = 'https://quantumlearningmachines.com/a2a/ext/agent-handoff/v1'

/** The MCP `_meta` key for the handoff object and statuses. */
// seed 003: the MCP carrying key
export const MCP_META_KEY = 'quantumlearningmachines.com/agent-handoff'

/**
 * The A2A 1.0 wire shapes the hub reads (ProtoJSON of `lf.a2a.v1`, as `@a2a-js/sdk` sends them),
 * with the dev-1.1 `generation` fields (A2A PR 1810). Objects are loose: fields the hub does not
 * read are kept as sent, so a newer peer's fields travel through the relay unchanged.
 */

/** The task states of A2A 1.0, as ProtoJSON enum names. */
export const A2A_TASK_STATES = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
] as const
export type A2aTaskState = (typeof A2A_TASK_STATES)[number]

/** A2A 1.0: terminal states take no more messages and no more changes. */
export const A2A_TERMINAL_STATES: ReadonlySet<string> = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
])

/** A2A 1.0: interrupted states, where a blocking send and a stream stop to hand back the turn. */
export const A2A_INTERRUPTED_STATES: ReadonlySet<string> = new Set([
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
])

const id = z.string().min(1).max(256)
const metadata = z.record(z.string(), z.unknown())
/**
 * A generation: an int64 in ProtoJSON is its decimal text, and a query parameter is text, so its
 * digits are taken as well as a JSON integer (the exact codec every face publishes).
 */
const generation = () => wholeNumber().describe('A task generation (A2A dev-1.1)')

/** The most tasks one ListTasks page answers, and how many when `pageSize` is unset. */
export const A2A_LIST_PAGE_SIZE = { default: 50, max: 100 } as const

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
  .union([z.enum(A2A_TASK_STATES), z.enum(['TASK_STATE_UNSPECIFIED', 'UNRECOGNIZED'])])
  .transform((s): A2aTaskState | undefined =>
    s === 'TASK_STATE_UNSPECIFIED' || s === 'UNRECOGNIZED' ? undefined : s,
  )

/**
 * ListTasks' `pageSize` as the official SDK (1.x) writes it: an unset size is `0` (ProtoJSON's
 * zero), read as unset; 1 to {@link A2A_LIST_PAGE_SIZE}.max is a page of that many.
 */
const listPageSize = wholeNumber({ max: A2A_LIST_PAGE_SIZE.max }).transform((n) =>
  n === 0 ? undefined : n,
)

/** Where a page of ListTasks starts: after the task last answered, by change time and id. */
export interface A2aTaskCursor {
  updatedAt: number
  id: string
}

/** The `nextPageToken` that continues a ListTasks page after `cursor`. */
export function toA2aPageToken(cursor: A2aTaskCursor): string {
  return toBase64url(new TextEncoder().encode(canonicalJson({ u: cursor.updatedAt, i: cursor.id })))
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
    .transform((token, ctx): A2aTaskCursor | undefined => {
      if (token === '') return undefined
      try {
        const bytes = fromBase64url(token)
        const { u, i } = JSON.parse(
          bytes ? new TextDecoder('utf-8', { fatal: true }).decode(bytes) : '',
        )
        if (Number.isSafeInteger(u) && typeof i === 'string') return { updatedAt: u, id: i }
      } catch {
        // falls through to the refusal
      }
      ctx.addIssue({ code: 'custom', message: 'pageToken is not one this hub gave out' })
      return z.NEVER
    }),
  'cursor_invalid',
)

export const A2aPart = z.looseObject({ metadata: metadata.optional() })

/**
 * A message's metadata: any members, and under the signed handoff context's URI (seed 003) a
 * Handoff object (in a user message) or a signed status (in an agent's message).
 */
const MessageMetadata = z.looseObject({
  [A2A_EXTENSION_URI]: z.union([HandoffObject, AnswerHandoffInput]).optional(),
})

export const A2aMessage = z.looseObject({
  messageId: id,
  role: z.enum(['ROLE_USER', 'ROLE_AGENT']),
  parts: z.array(A2aPart).min(1).max(256),
  contextId: id.optional(),
  taskId: id.optional(),
  metadata: MessageMetadata.optional(),
  extensions: z.array(z.string().max(2048)).max(64).optional(),
  referenceTaskIds: z.array(id).max(64).optional(),
})
export type A2aMessage = z.output<typeof A2aMessage>

export const A2aArtifact = z.looseObject({
  artifactId: id,
  parts: z.array(A2aPart).min(1).max(256),
  name: z.string().max(1024).optional(),
  description: z.string().max(4096).optional(),
  metadata: metadata.optional(),
})
export type A2aArtifact = z.output<typeof A2aArtifact>

export const A2aPushConfigInput = z.looseObject({
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
export type A2aPushConfig = z.output<typeof A2aPushConfigInput>
/** A push config as sent, for the task the request names. */
export type A2aSetPushConfigInput = A2aPushConfig & { taskId: string }

/** What the agent of a task may add to its own send, under {@link A2A_RELAY_EXTENSION_URI}. */
export const A2aRelayUpdate = z.looseObject({
  state: z.enum(A2A_TASK_STATES).optional(),
  artifacts: z
    .array(
      z.strictObject({
        artifact: A2aArtifact,
        append: z.boolean().optional(),
        lastChunk: z.boolean().optional(),
      }),
    )
    .max(64)
    .optional(),
  ifGenerationMatch: generation().optional(),
})
export type A2aRelayUpdate = z.output<typeof A2aRelayUpdate>

/** The agent a new task is addressed to, with the way to name it when it is missing. */
const NewTaskTenant = withCode(
  z.string().max(256).regex(DID_KEY_PATTERN, 'an admitted agent’s did:key'),
  'invalid_request',
  'Set tenant to the did:key of the agent: build the A2A client from the card at /.well-known/agent-card.json?tenant=<did:key>, whose interface carries it into every request.',
).describe('The did:key of the agent a new task is addressed to')

const sendFields = {
  configuration: z
    .looseObject({
      acceptedOutputModes: z.array(z.string().max(256)).max(64).optional(),
      taskPushNotificationConfig: A2aPushConfigInput.optional(),
      historyLength: wholeNumber().optional(),
      returnImmediately: z.boolean().optional(),
      ifGenerationMatch: generation().optional(),
    })
    .optional(),
  metadata: z.looseObject({ [A2A_RELAY_EXTENSION_URI]: A2aRelayUpdate.optional() }).optional(),
}

/**
 * SendMessage's params, in the two shapes a send takes: a message that names its task continues
 * it (either party, `tenant` as the client's interface carries it); one that names none starts a
 * task, so it is the owner's ROLE_USER message and `tenant` names the agent it is addressed to
 * (an admitted principal, as A2A 1.0 names a tenant behind one endpoint).
 */
export const A2aSendMessageParams = z.union([
  z.looseObject({
    tenant: NewTaskTenant,
    message: A2aMessage.extend({ role: z.literal('ROLE_USER') }),
    ...sendFields,
  }),
  z.looseObject({
    tenant: z.string().max(256).optional(),
    message: A2aMessage.extend({ taskId: id.describe('The task this message continues') }),
    ...sendFields,
  }),
])
export type A2aSendMessageParams = z.output<typeof A2aSendMessageParams>

export const A2aGetTaskParams = z.looseObject({
  id,
  tenant: z.string().max(256).optional(),
  historyLength: wholeNumber().optional(),
  currentGeneration: generation().optional(),
})
/** What GetTask reads. */
export type A2aGetTaskInput = Pick<
  z.output<typeof A2aGetTaskParams>,
  'id' | 'historyLength' | 'currentGeneration'
>

export const A2aListTasksParams = z.looseObject({
  tenant: z.string().max(256).optional(),
  contextId: unsetWhenEmpty(z.string().max(256)).optional(),
  status: taskStateFilter.optional(),
  pageSize: listPageSize.optional(),
  pageToken: pageToken.optional(),
  historyLength: wholeNumber().optional(),
  includeArtifacts: booleanFlag().optional(),
})
/** What ListTasks reads. */
export type A2aListTasksInput = z.output<typeof A2aListTasksParams>

export const A2aCancelTaskParams = z.looseObject({
  id,
  tenant: z.string().max(256).optional(),
  metadata: metadata.optional(),
})

export const A2aTaskRefParams = z.looseObject({ id, tenant: z.string().max(256).optional() })

/** A task's push config, by the task's id and its own. */
export interface A2aPushConfigRef {
  taskId: string
  id: string
}

/** A task as A2A 1.0 shows it, plus dev-1.1 `generation`. */
export interface A2aTaskView {
  id: string
  contextId: string
  status: A2aTaskStatusView
  artifacts: A2aArtifact[]
  history: A2aMessage[]
  generation: number
  metadata: Record<string, unknown>
}

export interface A2aTaskStatusView {
  state: A2aTaskState
  message?: A2aMessage
  timestamp: string
}

/** One event of a task's stream: a StreamResponse of A2A 1.0, and its generation. */
export type A2aStreamEvent =
  | { task: A2aTaskView }
  | {
      statusUpdate: {
        taskId: string
        contextId: string
        status: A2aTaskStatusView
        generation: number
        metadata: Record<string, unknown>
      }
    }
  | {
      artifactUpdate: {
        taskId: string
        contextId: string
        artifact: A2aArtifact
        append: boolean
        lastChunk: boolean
        generation: number
        metadata: Record<string, unknown>
      }
    }

export interface A2aPushConfigView {
  id: string
  taskId: string
  url: string
  token?: string
}
