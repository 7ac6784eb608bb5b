// The operator dashboard: hash routes, one view per section, live re-reads on hub events.
import { barChart, budgetBar, esc, ledgerBar, machineDrawing } from './draw.js'

const view = document.getElementById('view')
const live = document.getElementById('live')
let csrfToken = ''
/** How the hub admits new keys (`approval` or `open`), from the session. */
let admissionMode = 'approval'
/**
 * Display labels by did:key, from the `labels` of every answer. A label is text an agent chose:
 * it is only ever written escaped, and it never stands in for the did:key it sits beside.
 */
const labels = new Map()

// ---- talking to the hub ---------------------------------------------------------------------

async function api(path) {
  const res = await fetch(path, {
    credentials: 'same-origin',
    headers: { accept: 'application/json' },
  })
  if (res.status === 401) {
    location.assign('/')
    throw new Error('signed out')
  }
  const body = await res.json().catch(() => ({}))
  if (!res.ok)
    throw Object.assign(new Error(body.error || `HTTP ${res.status}`), {
      body,
      status: res.status,
    })
  for (const [principal, label] of Object.entries(body.labels ?? {})) labels.set(principal, label)
  return body
}

async function post(path) {
  const res = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'x-csrf-token': csrfToken },
  })
  if (res.status === 401) {
    location.assign('/')
    throw new Error('signed out')
  }
  const body = res.status === 204 ? {} : await res.json().catch(() => ({}))
  if (!res.ok) throw Object.assign(new Error(body.error || `HTTP ${res.status}`), { body })
  return body
}

// ---- formatting -----------------------------------------------------------------------------

const number = new Intl.NumberFormat('en')

function ago(isoTime) {
  if (!isoTime) return '—'
  const s = Math.round((Date.now() - Date.parse(isoTime)) / 1000)
  const abs = Math.abs(s)
  const unit =
    abs < 60
      ? `${abs} s`
      : abs < 3600
        ? `${Math.round(abs / 60)} min`
        : abs < 86400
          ? `${Math.round(abs / 3600)} h`
          : `${Math.round(abs / 86400)} d`
  return s >= 0 ? `${unit} ago` : `in ${unit}`
}

const time = (isoTime) =>
  isoTime ? `<time datetime="${esc(isoTime)}" title="${esc(isoTime)}">${ago(isoTime)}</time>` : '—'
const badge = (state) => `<span class="badge s-${esc(state)}">${esc(state)}</span>`
const short = (id, cls = '') => `<span class="id ${cls}" title="${esc(id)}">${esc(id)}</span>`

const copyIcon =
  '<svg class="copy-icon" viewBox="0 0 16 16" width="14" height="14" aria-hidden="true" focusable="false"><rect x="5" y="5" width="9" height="9" rx="1.5" /><path d="M11 3.5V3a1 1 0 0 0-1-1H3a1 1 0 0 0-1 1v7a1 1 0 0 0 1 1h.5" /></svg>'

/**
 * A principal. Every Ed25519 did:key starts `did:key:z6Mk`, so cutting the end off leaves rows
 * that cannot be told apart: narrow screens show the method and the key's last characters
 * instead. The whole value is in the title and behind a copy button; `href` makes it a link.
 */
function who(value, { href = '', cls = '' } = {}) {
  if (!value) return '—'
  const v = String(value)
  const did = /^(did:[a-z0-9]+:)(.{9,})$/.exec(v)
  const tail = did ? `${did[1]}…${did[2].slice(-4)}` : ''
  const id = did
    ? `<span class="id who ${cls}" title="${esc(v)}" data-principal-text="${esc(v)}"><span class="full">${esc(v)}</span><span class="tail">${esc(tail)}</span></span>`
    : short(v, cls)
  // The label is the agent's own words: beside the did:key, never instead of it.
  const name = did ? labels.get(v) : undefined
  const label = name
    ? `<span class="who-label" title="${esc(name)}" data-label="${esc(name)}">${esc(name)}</span>`
    : ''
  const shown = href
    ? `<a href="${esc(href)}" data-focus-key="who:${esc(href)}">${label}${id}</a>`
    : `${label}${id}`
  if (!did) return shown
  return `<span class="who-wrap">${shown}<button type="button" class="copy" data-copy="${esc(v)}" aria-label="Copy ${esc(tail)}" title="Copy ${esc(v)}">${copyIcon}</button></span>`
}

/** A checksum such as `sha-256:…`: the algorithm stays whole, only the digest may break. */
function checksum(value) {
  if (!value) return '—'
  const at = String(value).indexOf(':')
  if (at < 0) return `<span class="digest">${esc(value)}</span>`
  return `<span class="checksum"><span class="algo">${esc(value.slice(0, at + 1))}</span><span class="digest">${esc(value.slice(at + 1))}</span></span>`
}

/** Escaped JSON of event data, with any checksum's algorithm kept on one line. */
const eventData = (data) =>
  esc(JSON.stringify(data)).replace(
    /(&quot;)(sha-\d+:)/g,
    (_, q, algo) => `${q}<span class="algo">${algo}</span>`,
  )
/**
 * An amount of a transfer budget (seed 004), counted in integer micro-units (1 unit = 1 000 000):
 * two decimals and the unit, the exact amount in the title. A rate keeps up to six decimals.
 */
function money(micros, { rate = false } = {}) {
  if (micros === null || micros === undefined) return '—'
  const units = micros / 1_000_000
  const exact = units.toLocaleString('en', { minimumFractionDigits: 2, maximumFractionDigits: 6 })
  const shown = rate
    ? exact
    : units.toLocaleString('en', { minimumFractionDigits: 2, maximumFractionDigits: 2 })
  // A small amount that two decimals would show as zero keeps its digits.
  const text = shown === '0.00' && micros !== 0 ? exact : shown
  const unit = rate ? 'units / s' : 'units'
  return `<span class="amount" title="${esc(`${exact} ${unit} (${number.format(micros)} micro-units${rate ? ' / s' : ''})`)}">${esc(text)} ${unit}</span>`
}
/** An amount of a delegation budget in its own unit: micro-units shown as units, exact in the title. */
function amount(micros, unit) {
  if (micros === null || micros === undefined) return '—'
  const units = micros / 1_000_000
  const exact = units.toLocaleString('en', { maximumFractionDigits: 6 })
  return `<span class="amount" title="${esc(`${exact} ${unit} (${number.format(micros)} micro-units)`)}">${esc(exact)} ${esc(unit)}</span>`
}
const json = (value) => `<pre class="json">${esc(JSON.stringify(value, null, 2))}</pre>`
const enc = encodeURIComponent

function table(head, rows, empty, cls = '') {
  if (!rows.length) return `<div class="table-wrap"><p class="empty">${esc(empty)}</p></div>`
  return `<div class="table-wrap"><table class="${cls}"><thead><tr>${head.join('')}</tr></thead><tbody>${rows.join('')}</tbody></table></div>`
}

function select(id, label, options, value) {
  const opts = options
    .map(
      ([v, text]) =>
        `<option value="${esc(v)}"${v === value ? ' selected' : ''}>${esc(text)}</option>`,
    )
    .join('')
  return `<label for="${id}">${esc(label)}</label> <select id="${id}">${opts}</select>`
}

// ---- routes ---------------------------------------------------------------------------------

/** Reads the hash: `#/section/id?key=value`. */
function route() {
  const raw = location.hash.replace(/^#\/?/, '')
  const [pathPart, queryPart = ''] = raw.split('?')
  const [section = 'overview', ...rest] = pathPart.split('/')
  return {
    section: section || 'overview',
    id: rest.length ? decodeURIComponent(rest.join('/')) : '',
    params: new URLSearchParams(queryPart),
  }
}

function setParams(section, params) {
  const qs = params.toString()
  history.replaceState(null, '', `#/${section}${qs ? `?${qs}` : ''}`)
}

const isType = (ev, prefix) => ev.type.startsWith(prefix) || ev.topic.startsWith(prefix)

const stateOf = (params) => {
  const state = params.get('state') ?? 'pending'
  return state === 'all' ? '' : state
}

const views = {
  overview: {
    title: 'Overview',
    shell: () => `<h1 class="page">Overview</h1><div id="content"></div>`,
    load: () => api('/dashboard/api/overview'),
    draw: drawOverview,
    onEvent: (ev) => !ev.type.startsWith('home.'),
    pollMs: 10_000,
  },
  admission: {
    title: 'Admission',
    shell: ({ params }) =>
      `<h1 class="page">Admission queue</h1>${
        admissionMode === 'open'
          ? '<p class="panel note" id="admission-open" role="note"><strong>Admission is open:</strong> every new key is approved as it enrols (<code>BATON_ADMISSION=open</code>), so nothing waits here. Reject or suspend still shut a key out.</p>'
          : ''
      }<div class="toolbar">${select(
        'f-state',
        'Show',
        [
          ['pending', 'Pending'],
          ['approved', 'Approved'],
          ['rejected', 'Rejected'],
          ['suspended', 'Suspended'],
          ['all', 'All principals'],
        ],
        params.get('state') ?? 'pending',
      )}</div><div id="content"></div>`,
    // One page at a time: the hub answers a cursor for the next, kept in the address.
    load: ({ params }) => {
      const cursor = params.get('cursor')
      return api(
        `/dashboard/api/principals?state=${enc(stateOf(params))}${cursor ? `&cursor=${enc(cursor)}` : ''}`,
      )
    },
    draw: drawPrincipals,
    onEvent: (ev) => isType(ev, 'principal'),
    // Enrolment publishes no event, so the queue is also re-read now and then.
    pollMs: 5_000,
  },
  handoffs: {
    title: 'Handoffs',
    shell: ({ id, params }) =>
      id
        ? `<p class="crumbs"><a href="#/handoffs">Handoffs</a> /</p><div id="content"></div>`
        : `<h1 class="page">Token handoffs</h1><div class="toolbar"><label for="f-state">State</label> <input id="f-state" type="search" list="handoff-states" placeholder="any state" aria-describedby="f-state-hint" value="${esc(params.get('state') ?? '')}" /><span id="f-state-hint" class="muted hint">open, expired or a state name</span><datalist id="handoff-states">${[
            'open',
            'expired',
            'offered',
            'accepted',
            'working',
            'done',
            'failed',
            'returned',
          ]
            .map((v) => `<option value="${v}"></option>`)
            .join('')}</datalist></div><div id="content"></div>`,
    load: ({ id, params }) =>
      id
        ? api(`/dashboard/api/handoffs/${enc(id)}`)
        : api(`/dashboard/api/handoffs?state=${enc(params.get('state') ?? '')}`),
    draw: (data, r) => (r.id ? drawHandoff(data) : drawHandoffs(data)),
    onEvent: (ev, r) => (r.id ? ev.topic === `handoff:${r.id}` : isType(ev, 'handoff')),
  },
  transfers: {
    title: 'Transfers',
    shell: ({ id, params }) =>
      id
        ? `<p class="crumbs"><a href="#/transfers">Transfers</a> /</p><div id="content"></div>`
        : `<h1 class="page">Session transfers</h1><div class="toolbar">${select(
            'f-state',
            'State',
            [
              ['', 'All'],
              ...['staged', 'provisioned', 'pushed', 'active', 'insolvent', 'terminated'].map(
                (s) => [s, s],
              ),
            ],
            params.get('state') ?? '',
          )}</div><div id="content"></div>`,
    load: async ({ id, params }) => {
      if (!id) return api(`/dashboard/api/transfers?state=${enc(params.get('state') ?? '')}`)
      const [transfer, budgets] = await Promise.all([
        api(`/dashboard/api/transfers/${enc(id)}`),
        api(`/dashboard/api/budgets?transfer=${enc(id)}`),
      ])
      return { ...transfer, ledgers: budgets.budgets }
    },
    draw: (data, r) => (r.id ? drawTransfer(data) : drawTransfers(data)),
    onEvent: (ev, r) =>
      r.id
        ? ev.topic.includes(r.id) || ev.ids.transferId === r.id || ev.ids.transfer_id === r.id
        : isType(ev, 'transfer'),
    // A usage report publishes no event of its own, so an open transfer is also re-read often.
    pollMs: (r) => (r.id ? 2_000 : 10_000),
  },
  resources: {
    title: 'Resources',
    shell: ({ id }) =>
      id
        ? `<p class="crumbs"><a href="#/resources">Resources</a> /</p><div id="content"></div>`
        : `<h1 class="page">Resources and grants</h1><div id="content"></div>`,
    load: async ({ id, params }) => {
      if (id) return api(`/dashboard/api/resources/${enc(id)}`)
      const ns = params.get('namespace') ?? ''
      const owner = params.get('owner') ?? ''
      const status = params.get('grants') ?? 'live'
      const [resources, grants] = await Promise.all([
        api(`/dashboard/api/resources?namespace=${enc(ns)}&owner=${enc(owner)}`),
        api(`/dashboard/api/grants?status=${enc(status)}`),
      ])
      return { ...resources, grants: grants.grants, ns, owner, status }
    },
    draw: (data, r) => (r.id ? drawResource(data) : drawResources(data)),
    onEvent: (ev, r) =>
      r.id ? ev.topic === `resource:${r.id}` : isType(ev, 'resource') || isType(ev, 'grant'),
  },
  messages: {
    title: 'Messages',
    shell: ({ id }) =>
      id
        ? `<p class="crumbs"><a href="#/messages">Messages</a> /</p><div id="content"></div>`
        : `<h1 class="page">Messages</h1><p class="muted">Per recipient: sequence and acknowledgement state. Bodies stay hidden unless you open one.</p><div id="content"></div>`,
    load: ({ id }) =>
      id ? api(`/dashboard/api/messages?principal=${enc(id)}`) : api('/dashboard/api/messages'),
    draw: (data, r) => (r.id ? drawMessages(data) : drawMessageSummary(data)),
    onEvent: (ev, r) =>
      r.id ? isType(ev, 'message') && ev.topic.endsWith(r.id) : isType(ev, 'message'),
  },
  a2a: {
    title: 'A2A',
    shell: ({ id, params }) =>
      id
        ? `<p class="crumbs"><a href="#/a2a">A2A</a> /</p><div id="content"></div>`
        : `<h1 class="page">A2A tasks</h1><div class="toolbar">${select(
            'f-state',
            'State',
            [['', 'All'], ...A2A_STATES.map((s) => [s, s])],
            params.get('state') ?? '',
          )}</div><div id="content"></div>`,
    load: ({ id, params }) =>
      id
        ? api(`/dashboard/api/a2a/${enc(id)}`)
        : api(`/dashboard/api/a2a?state=${enc(params.get('state') ?? '')}`),
    draw: (data, r) => (r.id ? drawA2aTask(data) : drawA2aTasks(data)),
    onEvent: (ev, r) => (r.id ? ev.topic.includes(r.id) : isType(ev, 'a2a')),
  },
  hops: {
    title: 'Hops',
    shell: ({ id }) =>
      id
        ? `<p class="crumbs"><a href="#/hops">Hops</a> /</p><div id="content"></div>`
        : `<h1 class="page">Signed handoff hops</h1><p class="muted">Offers the hub witnessed (seed 003), most recently changed first. Open one to see its delegation chain hop by hop.</p><div id="content"></div>`,
    load: async ({ id }) => {
      if (!id) return api('/dashboard/api/hops')
      const [chain, budgets] = await Promise.all([
        api(`/dashboard/api/hops/${enc(id)}`),
        api(`/dashboard/api/budgets?hop=${enc(id)}`),
      ])
      return { ...chain, ledgers: budgets.budgets }
    },
    draw: (data, r) => (r.id ? drawHopChain(data, r.id) : drawHops(data)),
    onEvent: (ev) => isType(ev, 'hop') || isType(ev, 'budget'),
    pollMs: 10_000,
  },
  compute: {
    title: 'Compute',
    shell: () =>
      `<h1 class="page">Compute</h1><p class="muted">json-expr-v1 jobs (seed 000): the queue, the runtimes live now, and the most recent jobs. Programs, inputs and outputs are not shown.</p><div id="content"></div>`,
    load: () => api('/dashboard/api/compute'),
    draw: drawCompute,
    onEvent: (ev) => isType(ev, 'compute'),
    pollMs: 5_000,
  },
  notify: {
    title: 'Notify',
    shell: () =>
      `<h1 class="page">Notify queue</h1><p class="muted">Signals to notify_url receivers: counts, and the oldest still pending or dead. Receivers are shown by origin only.</p><div id="content"></div>`,
    load: () => api('/dashboard/api/notify'),
    draw: drawNotify,
    onEvent: (ev) => isType(ev, 'handoff'),
    pollMs: 10_000,
  },
}

/** Sections that have one page per id; the others have no pages below them. */
const withIds = new Set(['handoffs', 'transfers', 'resources', 'messages', 'a2a', 'hops'])

const notFoundPage = (what) =>
  `<div class="panel not-found" id="not-found"><p>There is nothing at <code>${esc(what)}</code>.</p><p><a href="#/overview" data-focus-key="home">Go to the overview</a></p></div>`

const notFound = {
  title: 'Not found',
  shell: () => `<h1 class="page">Not found</h1><div id="content"></div>`,
  load: async () => ({}),
  draw: () => notFoundPage(location.hash || '#/'),
}

/** The view of a route: an unknown section, or an id below a section without ids, is not found. */
function viewOf(r) {
  const v = Object.hasOwn(views, r.section) ? views[r.section] : undefined
  if (!v || (r.id && !withIds.has(r.section))) return notFound
  return v
}

// ---- views ----------------------------------------------------------------------------------

function stat(label, value, breakdown = '', attention = false) {
  return `<div class="panel stat${attention ? ' attention' : ''}"><div class="label">${esc(label)}</div><div class="value" data-stat="${esc(label)}">${esc(number.format(value))}</div><div class="breakdown">${breakdown}</div></div>`
}

function byState(counts) {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([s, n]) => `<span class="chip">${esc(s)} ${number.format(n)}</span>`)
    .join('')
}

/** A2A 1.0 task states, as the dashboard names them. */
const A2A_STATES = [
  'submitted',
  'working',
  'input-required',
  'auth-required',
  'completed',
  'failed',
  'canceled',
  'rejected',
]

/** The transfer states the "Running transfers" card counts. */
const RUNNING = ['active', 'insolvent']

/** A2A counts by the state names the A2A page uses. */
const a2aNames = (counts) =>
  Object.fromEntries(
    Object.entries(counts).map(([s, n]) => [
      s
        .replace(/^TASK_STATE_/, '')
        .toLowerCase()
        .replaceAll('_', '-'),
      n,
    ]),
  )

function drawOverview(o) {
  const sum = (obj) => Object.values(obj).reduce((a, b) => a + b, 0)
  // A card's chips break down exactly the number on the card, never the ended ones.
  const open = o.openHandoffs ?? {}
  const running = Object.fromEntries(
    RUNNING.filter((s) => o.transfers[s]).map((s) => [s, o.transfers[s]]),
  )
  const openHandoffs = sum(open)
  const runningTransfers = sum(running)
  const principals = sum(o.principals)
  const stats = [
    stat(
      'Pending admissions',
      o.pendingAdmissions,
      `<a href="#/admission">Review queue</a>`,
      o.pendingAdmissions > 0,
    ),
    stat('Open handoffs', openHandoffs, byState(open)),
    stat('Running transfers', runningTransfers, byState(running), (o.transfers.insolvent ?? 0) > 0),
    stat('Unacked messages', o.unackedMessages, `<a href="#/messages">By recipient</a>`),
    stat('Principals', principals, byState(o.principals)),
    stat(
      'Resources',
      o.resources,
      `<span class="chip">live grants ${number.format(o.liveGrants)}</span>`,
    ),
    stat(
      'A2A tasks',
      sum(o.a2aTasks ?? {}),
      `${byState(a2aNames(o.a2aTasks ?? {}))} <a href="#/a2a">Tasks</a>`,
    ),
    stat(
      'Compute jobs',
      sum(o.computeJobs ?? {}),
      `${byState(o.computeJobs ?? {})} <a href="#/compute">Queue</a>`,
    ),
    stat('Hops', sum(o.hops ?? {}), `${byState(o.hops ?? {})} <a href="#/hops">Chains</a>`),
  ].join('')
  const chart = (title, values) => {
    const total = values.reduce((a, b) => a + b, 0)
    const last5 = values.slice(-5).reduce((a, b) => a + b, 0)
    return `<div class="panel chart"><h3>${esc(title)}</h3><div class="rate">${number.format(total)} in the last hour · ${(last5 / 5).toFixed(1)} / min lately</div>${barChart(values, `${title}: ${total} in the last hour`)}<div class="axis"><span>60 min ago</span><span>now</span></div></div>`
  }
  const a = o.activity
  return `<section aria-label="Counts"><div class="stats">${stats}</div></section>
  <h2>Activity, per minute over the last hour</h2>
  <section class="charts" aria-label="Activity">${chart('Handoff moves', a.handoffMoves)}${chart('Messages sent', a.messages)}${chart('Resource versions', a.resourceVersions)}${chart('Transfer events', a.transferEvents)}</section>`
}

/** Links to the first and the next page of a cursor-paged list. */
function pager(section, params, nextCursor) {
  const at = (cursor) => {
    const p = new URLSearchParams(params)
    if (cursor) p.set('cursor', cursor)
    else p.delete('cursor')
    const qs = p.toString()
    return `#/${section}${qs ? `?${qs}` : ''}`
  }
  const links = [
    params.get('cursor')
      ? `<a href="${esc(at(''))}" data-focus-key="page:first">First page</a>`
      : '',
    nextCursor
      ? `<a href="${esc(at(nextCursor))}" id="next-page" data-focus-key="page:next">Next page</a>`
      : '',
  ].filter(Boolean)
  return links.length ? `<nav class="pager" aria-label="Pages">${links.join('')}</nav>` : ''
}

function drawPrincipals({ principals, next_cursor }, r) {
  const rows = principals.map((p) => {
    const act = (decision, label, disabled) =>
      `<button type="button" class="${decision}" data-decide="${decision}" data-principal="${esc(p.principal)}" data-focus-key="${decision}:${esc(p.principal)}"${disabled ? ' disabled' : ''}>${label}</button>`
    return `<tr data-principal="${esc(p.principal)}"><td>${who(p.principal, { cls: 'long' })}</td><td>${badge(p.state)}</td><td class="hide-narrow">${time(p.enrolledAt)}</td><td class="hide-narrow">${time(p.decidedAt)}</td><td class="actions">${act('approve', 'Approve', p.state === 'approved')}${act('reject', 'Reject', p.state === 'rejected')}${act('suspend', 'Suspend', p.state === 'suspended')}</td></tr>`
  })
  return `${table(
    [
      '<th>Principal</th>',
      '<th>State</th>',
      '<th class="hide-narrow">Enrolled</th>',
      '<th class="hide-narrow">Decided</th>',
      '<th>Decision</th>',
    ],
    rows,
    'No principals in this state.',
    'stack',
  )}${pager('admission', r.params, next_cursor)}`
}

/** A machine's states in order as small steps, the current one filled; the steps wrap. */
function miniMachine(states, state) {
  if (!states.length) return '—'
  const steps = states
    .map(
      (s) =>
        `<li class="step${s === state ? ' current' : ''}"${s === state ? ' aria-current="step"' : ''}>${esc(s)}</li>`,
    )
    .join('')
  return `<ol class="mini-machine" aria-label="states in order">${steps}</ol>`
}

function drawHandoffs({ handoffs }) {
  const rows = handoffs.map(
    (h) =>
      `<tr><td><a href="#/handoffs/${enc(h.id)}" data-focus-key="h:${esc(h.id)}">${short(h.id)}</a></td><td>${badge(h.expired ? 'expired' : h.state)}</td><td class="num hide-narrow">${h.version}</td><td>${miniMachine(h.states, h.state)}</td><td class="hide-narrow">${time(h.updatedAt)}</td><td class="hide-narrow">${time(h.expiresAt)}</td></tr>`,
  )
  return table(
    [
      '<th>Handoff</th>',
      '<th>State</th>',
      '<th class="num hide-narrow">Version</th>',
      '<th>Machine</th>',
      '<th class="hide-narrow">Changed</th>',
      '<th class="hide-narrow">Expires</th>',
    ],
    rows,
    'No handoffs match.',
  )
}

function drawHandoff(h) {
  const history = h.history
    .map(
      (m) =>
        `<tr><td class="num">v${m.version}</td><td>${badge(m.from)} → ${badge(m.to)}</td><td>${who(m.actor)}</td><td class="hide-narrow">${esc(m.note ?? '')}</td><td>${time(m.at)}</td></tr>`,
    )
    .join('')
  return `<h1 class="page"><span class="mono">${esc(h.id)}</span> <span id="handoff-state">${badge(h.expired ? 'expired' : h.state)}</span> <span class="muted" id="handoff-version">version ${h.version}</span></h1>
  <dl class="panel meta">
    <div><dt>State</dt><dd>${esc(h.state)}${h.ended ? ' (ended)' : ''}</dd></div>
    <div><dt>Created</dt><dd>${time(h.createdAt)}</dd></div>
    <div><dt>Last change</dt><dd>${time(h.updatedAt)}</dd></div>
    ${h.ended ? `<div><dt>Ended</dt><dd id="ended">${time(h.updatedAt)} in ${esc(h.state)}</dd></div>` : `<div><dt>Expires</dt><dd>${time(h.expiresAt)}</dd></div>`}
    <div><dt>Note</dt><dd>${esc(h.note ?? '—')}</dd></div>
    <div><dt>Notify URL</dt><dd>${h.hasNotifyUrl ? 'set (hidden)' : 'none'}</dd></div>
  </dl>
  <h2>Machine</h2>
  <div class="panel machine" id="machine" data-current="${esc(h.state)}">${machineDrawing(h.machine, h.state, h.history)}</div>
  <p class="legend"><span>filled: current state</span><span>outlined: visited</span><span>dashed box: final</span><span>arcs above: moves made (version)</span><span>dashed arcs below: moves open now</span></p>
  <h2>History</h2>
  ${table(['<th class="num">Version</th>', '<th>Move</th>', '<th>By</th>', '<th class="hide-narrow">Note</th>', '<th>At</th>'], history ? [history] : [], 'No moves yet: the handoff is in its first state.')}
  <h2>Payload</h2>
  <div class="panel" id="reveal-box"><p class="hidden-body">${number.format(h.payloadChars)} characters of JSON, hidden.</p><button type="button" data-reveal="/dashboard/api/handoffs/${enc(h.id)}/payload" data-field="payload" data-focus-key="reveal">Show payload</button></div>`
}

function drawA2aTasks({ tasks }) {
  const rows = tasks.map(
    (t) =>
      `<tr data-task="${esc(t.id)}"><td><a href="#/a2a/${enc(t.id)}" data-focus-key="a2a:${esc(t.id)}">${short(t.id)}</a></td><td>${badge(t.state)}</td><td class="hide-narrow">${who(t.owner)}</td><td class="hide-narrow">${who(t.agent)}</td><td class="num">${number.format(t.generation)}</td><td>${time(t.updatedAt)}</td></tr>`,
  )
  return table(
    [
      '<th>Task</th>',
      '<th>State</th>',
      '<th class="hide-narrow">Owner</th>',
      '<th class="hide-narrow">Agent</th>',
      '<th class="num">Generation</th>',
      '<th>Updated</th>',
    ],
    rows,
    'No A2A tasks match.',
  )
}

function drawA2aTask(t) {
  const events = t.events
    .map(
      (e) =>
        `<li data-generation="${e.generation}"><span class="seq">#${e.generation}</span><div><strong>${esc(e.kind)}</strong>${e.state ? ` ${badge(e.state)}` : ''}${e.artifactId ? ` <span class="mono">${esc(e.artifactId)}</span>` : ''} <span class="muted">by ${who(e.author)} · ${time(e.at)}</span></div></li>`,
    )
    .join('')
  return `<h1 class="page"><span class="mono">${esc(t.id)}</span> <span id="a2a-state">${badge(t.state)}</span> <span class="muted">generation ${number.format(t.generation)}</span></h1>
  <dl class="panel meta">
    <div><dt>Owner</dt><dd>${who(t.owner, { cls: 'long' })}</dd></div>
    <div><dt>Agent</dt><dd>${who(t.agent, { cls: 'long' })}</dd></div>
    <div><dt>Context</dt><dd><span class="id" title="${esc(t.contextId)}">${esc(t.contextId)}</span></dd></div>
    <div><dt>Created</dt><dd>${time(t.createdAt)}</dd></div>
    <div><dt>Updated</dt><dd>${time(t.updatedAt)}</dd></div>
  </dl>
  <h2>Events</h2>
  <p class="muted">Oldest first, one per generation. Message and artifact contents are not shown.</p>
  <div class="panel"><ol class="timeline" id="a2a-events">${events || '<li class="muted">No events.</li>'}</ol></div>`
}

function drawHops({ hops }) {
  const rows = hops.map(
    (h) =>
      `<tr><td><a href="#/hops/${enc(h.digest)}" data-focus-key="hop:${esc(h.digest)}" class="mono">${esc(h.digest.slice(0, 12))}…</a></td><td>${badge(h.state)}${outcomeBeside(h)}</td><td class="hide-narrow">${who(h.iss)}</td><td class="hide-narrow">${who(h.aud)}</td><td class="hide-narrow">${esc(h.dialog)}</td><td class="num">${h.chain.length}</td><td>${time(h.updatedAt)}</td></tr>`,
  )
  return table(
    [
      '<th>Hop</th>',
      '<th>State</th>',
      '<th class="hide-narrow">Delegator</th>',
      '<th class="hide-narrow">Delegate</th>',
      '<th class="hide-narrow">Dialog</th>',
      '<th class="num">Chain</th>',
      '<th>Changed</th>',
    ],
    rows,
    'No hops yet.',
  )
}

function drawCompute({ queue, workers, jobs }) {
  const queueRows = queue.map(
    (q) =>
      `<tr data-queue="${esc(q.language)}"><td>${esc(q.language)}</td><td class="num queued">${number.format(q.queued)}</td><td class="num running">${number.format(q.running)}</td></tr>`,
  )
  const workerRows = workers.map(
    (w) =>
      `<tr data-worker="${esc(w.runtimeId)}"><td class="mono">${esc(w.runtimeId)}</td><td class="hide-narrow">${w.principal === 'hub' ? 'embedded' : who(w.principal)}</td><td>${esc(w.languages.join(', '))}</td><td>${time(w.lastHeartbeat)}</td></tr>`,
  )
  const jobRows = jobs.map(
    (j) =>
      `<tr data-job="${esc(j.jobId)}"><td class="mono">${esc(j.jobId)}</td><td class="job-state">${badge(j.state)}</td><td class="hide-narrow">${who(j.owner)}</td><td class="hide-narrow">${esc(j.language)}</td><td class="num">${j.steps === null ? '—' : number.format(j.steps)}</td><td class="num">${j.durationMs === null ? '—' : `${number.format(j.durationMs)} ms`}</td><td class="job-error mono">${esc(j.errorCode ?? '')}</td><td>${time(j.createdAt)}</td></tr>`,
  )
  return `<h2>Queue</h2>
  ${table(['<th>Language</th>', '<th class="num">Queued</th>', '<th class="num">Running</th>'], queueRows, 'No languages.')}
  <h2>Live runtimes</h2>
  ${table(['<th>Runtime</th>', '<th class="hide-narrow">Principal</th>', '<th>Languages</th>', '<th>Last heartbeat</th>'], workerRows, 'No runtime is live: submits answer compute_unavailable.')}
  <h2>Recent jobs</h2>
  ${table(['<th>Job</th>', '<th>State</th>', '<th class="hide-narrow">Owner</th>', '<th class="hide-narrow">Language</th>', '<th class="num">Steps</th>', '<th class="num">Duration</th>', '<th>Error</th>', '<th>Created</th>'], jobRows, 'No jobs yet.')}`
}

// seed 003: a cancel does not show the work took no effect; an outcome the state does not show
// (one that arrived after the cancel) is drawn beside it.
function outcomeBeside(h) {
  return h.outcome && h.outcome !== h.state
    ? ` <span class="hop-outcome" title="the delegate's outcome, after the cancel">· ${badge(h.outcome)}</span>`
    : ''
}

/** A hub receipt on one line, cut with an ellipsis; the whole value in its title and a copy button. */
function receipt(value) {
  if (!value) return '—'
  return `<span class="receipt-wrap"><span class="mono receipt" title="${esc(value)}">${esc(value)}</span><button type="button" class="copy" data-copy="${esc(value)}" aria-label="Copy the receipt" title="Copy the receipt">${copyIcon}</button></span>`
}

/** The entries (reports) of a ledger: charged ones plainly, crossings marked with their receipt. */
function ledgerEntries(entries, unit) {
  if (!entries?.length) return ''
  const rows = entries
    .map(
      (e, i) =>
        `<li class="${e.charged ? '' : 'crossing'}"><span class="seq">#${entries.length - i}</span><div><div class="status-line">${e.charged ? '' : `${badge('refused')} `}${badge(e.kind)} <strong>${amount(e.amountMicros, unit)}</strong>${e.charged ? '' : ` <span class="muted">${amount(e.remainingMicros, unit)} left</span>`} <span class="muted by">by ${who(e.reporter)} · ${time(e.at)}</span></div>${e.receipt ? receipt(e.receipt) : ''}</div></li>`,
    )
    .join('')
  return `<h4>Latest reports</h4><ol class="timeline ledger-entries">${rows}</ol>`
}

/** A delegation budget (issue 28): its ledger bar, its figures and its latest reports. */
function budgetPanel(b, entries) {
  const reason = b.closedReason ? ` <span class="muted">${esc(b.closedReason)}</span>` : ''
  const figures = [
    ['granted', b.grantedMicros],
    ['spent', b.spentMicros],
    ['reserved', b.reservedMicros],
    ['held', b.heldMicros],
    b.state === 'open' ? ['remaining', b.remainingMicros] : ['released', b.releasedMicros],
  ]
    .map(
      ([name, micros]) =>
        `<span class="ledger-figure" data-figure="${name}"><span class="swatch ${name}"></span>${name} <strong>${amount(micros, b.unit)}</strong></span>`,
    )
    .join('')
  return `<section class="budget-panel" data-budget="${esc(b.hop)}" aria-label="Budget">
  <h3>Budget ${badge(b.state)}${reason}${b.crossings ? ` <span class="chip flag">${b.crossings} refused</span>` : ''}</h3>
  ${ledgerBar(b)}
  <div class="budget-numbers ledger-figures">${figures}</div>
  <p class="muted budget-meta">${b.children} open sub-delegation${b.children === 1 ? '' : 's'} · ${b.holds} open hold${b.holds === 1 ? '' : 's'} · ${b.rateMicrosPerSecond === null ? 'no rate' : `rate ${amount(b.rateMicrosPerSecond, `${b.unit} / s`)}`} · ${b.state === 'open' ? 'expires' : 'closed'} ${time(b.closedAt ?? b.expiresAt)}</p>
  ${ledgerEntries(entries, b.unit)}
</section>`
}

// One box per hop, oldest first, linked by prev: its parties, state, flags, statuses and receipts.
function drawHopChain({ hops, ledgers = [] }, current) {
  const entriesOf = new Map(ledgers.map((l) => [l.hop, l.entries]))
  const boxes = hops
    .map((h, i) => {
      const statuses = h.statuses
        .map(
          (s, j) =>
            `<li class="hop-status"><span class="seq">#${j + 1}</span><div><div class="status-line">${badge(s.state)}${s.reason ? ` <span class="muted">${esc(s.reason)}</span>` : ''} <span class="muted by">by ${who(s.iss)} · ${time(s.receivedAt)}</span></div>${receipt(s.receipt)}</div></li>`,
        )
        .join('')
      const flags = h.flags.map((f) => `<span class="chip flag">${esc(f)}</span>`).join(' ')
      const refs = h.refs.map((r) => `<span class="chip">${esc(r.outcome)}</span>`).join(' ')
      return `${i > 0 ? '<div class="hop-link" aria-hidden="true">↓ prev</div>' : ''}<section class="panel hop${h.digest === current ? ' hop-current' : ''}" data-hop="${esc(h.digest)}" aria-label="hop ${i + 1} of ${hops.length}">
  <h2 class="flush">Hop ${i + 1} <span class="hop-state">${badge(h.state)}</span>${outcomeBeside(h)} ${flags}</h2>
  <dl class="meta">
    <div><dt>Delegator</dt><dd>${who(h.iss, { cls: 'long' })}</dd></div>
    <div><dt>Delegate</dt><dd>${who(h.aud, { cls: 'long' })}</dd></div>
    <div><dt>Dialog</dt><dd>${esc(h.dialog)}${h.task ? ` · ${esc(h.task)}` : ''}</dd></div>
    <div><dt>Digest</dt><dd class="mono">${esc(h.digest)}</dd></div>
    <div><dt>Offered</dt><dd>${time(h.createdAt)}</dd></div>
    <div><dt>Expires</dt><dd>${time(new Date(h.exp * 1000).toISOString())}</dd></div>
    <div><dt>References</dt><dd>${refs || '—'}</dd></div>
    <div><dt>Offer receipt</dt><dd>${receipt(h.receipt)}</dd></div>
  </dl>
  ${h.budget ? budgetPanel(h.budget, entriesOf.get(h.digest)) : ''}
  <h3>Statuses</h3>
  <ol class="timeline">${statuses || '<li class="muted">No status yet.</li>'}</ol>
</section>`
    })
    .join('')
  return `<h1 class="page">Delegation chain <span class="muted">${hops.length} hop${hops.length === 1 ? '' : 's'}</span></h1><div class="hop-chain" id="hop-chain">${boxes}</div>`
}

function drawTransfers({ transfers }) {
  const rows = transfers.map(
    (t) =>
      `<tr><td><a href="#/transfers/${enc(t.id)}" data-focus-key="t:${esc(t.id)}">${short(t.id)}</a></td><td>${badge(t.state)}</td><td class="hide-narrow">${who(t.owner)}</td><td class="hide-narrow">${esc(t.tier ?? '—')}</td><td>${budgetBar(t.spentMicros, t.budgetMicros, t.state, true)}</td><td class="num hide-narrow">${money(t.spentMicros)} / ${money(t.budgetMicros)}</td><td class="hide-narrow">${time(t.updatedAt)}</td></tr>`,
  )
  return table(
    [
      '<th>Transfer</th>',
      '<th>State</th>',
      '<th class="hide-narrow">Owner</th>',
      '<th class="hide-narrow">Tier</th>',
      '<th>Budget</th>',
      '<th class="num hide-narrow">Spent / allocated</th>',
      '<th class="hide-narrow">Changed</th>',
    ],
    rows,
    'No transfers match.',
  )
}

/** How a transfer ended, by its `endReason`. */
const endReasons = {
  orchestrator: 'terminated by the operator',
  insolvent: 'out of budget after the grace period',
  expired: 'expired before it was activated',
}

function drawTransfer(t) {
  // An ended transfer counts nothing down: it shows when and how it ended instead.
  const ended = t.state === 'terminated'
  const endedAt = ended ? t.events.findLast((e) => e.to === 'terminated')?.at : null
  const remaining = t.budgetMicros === null ? null : t.budgetMicros - t.spentMicros
  const grace =
    t.state === 'insolvent' && t.graceEndsAt
      ? `<span class="grace">Insolvent: grace ends <span data-countdown="${esc(t.graceEndsAt)}">${ago(t.graceEndsAt)}</span></span>`
      : t.state === 'terminated'
        ? `<span class="grace">Terminated${t.endReason ? ` (${esc(t.endReason)})` : ''}</span>`
        : ''
  const events = t.events
    .map(
      (e) =>
        `<li><span class="seq">#${e.seq}</span><div><strong>${esc(e.type)}</strong> ${e.from ? `${badge(e.from)} → ` : ''}${badge(e.to)} <span class="muted">by ${who(e.actor)} · ${time(e.at)}</span>${Object.keys(e.data ?? {}).length ? `<div class="muted mono data">${eventData(e.data)}</div>` : ''}</div></li>`,
    )
    .join('')
  return `<h1 class="page"><span class="mono">${esc(t.id)}</span> <span id="transfer-state">${badge(t.state)}</span></h1>
  <div class="panel"><h2 class="flush">Budget <span class="muted" id="budget-percent">${t.budgetMicros ? Math.round((t.spentMicros / t.budgetMicros) * 100) : 0}% spent</span></h2>
    <div id="budget">${budgetBar(t.spentMicros, t.budgetMicros, t.state)}</div>
    <div class="budget-numbers"><span>spent <strong id="spent">${money(t.spentMicros)}</strong> of <strong>${money(t.budgetMicros)}</strong> allocated</span><span>${remaining !== null && remaining < 0 ? `over budget by ${money(-remaining)}` : `remaining ${money(remaining)}`}</span><span>rate ${money(t.rateMicros, { rate: true })}</span>${grace}</div>
  </div>
  <h2>Delegation budgets</h2>
  <div class="panel" id="delegation-budgets">${
    t.ledgers?.length
      ? t.ledgers
          .map(
            (b) =>
              `<p class="budget-hop">Hop <a href="#/hops/${enc(b.hop)}" class="mono">${esc(b.hop.slice(0, 12))}…</a> from ${who(b.iss)} to ${who(b.aud)}</p>${budgetPanel(b, b.entries)}`,
          )
          .join('')
      : '<p class="muted">No witnessed hop references this transfer. A hop whose offer names it in a digest ref shows its budget here.</p>'
  }</div>
  <h2>Runtime</h2>
  <dl class="panel meta">
    <div><dt>Runtime</dt><dd>${t.runtime ? who(t.runtime, { cls: 'long' }) : '—'}</dd></div>
    <div><dt>Tier</dt><dd>${esc(t.tier ?? '—')}</dd></div>
    ${ended ? '' : `<div><dt>Lease ends</dt><dd>${time(t.leaseEndsAt)}</dd></div>`}
    <div><dt>Owner</dt><dd>${who(t.owner, { cls: 'long' })}</dd></div>
    <div><dt>Created</dt><dd>${time(t.createdAt)}</dd></div>
    ${ended ? `<div><dt>Ended</dt><dd id="ended">${time(endedAt)}${t.endReason ? ` · ${esc(endReasons[t.endReason] ?? t.endReason)}` : ''}</dd></div>` : `<div><dt>Expires</dt><dd>${time(t.expiresAt)}</dd></div>`}
    <div><dt>Snapshot</dt><dd>${number.format(t.snapshotBytes)} bytes</dd></div>
    <div><dt>Checksum</dt><dd class="mono" id="checksum">${checksum(t.checksum)}</dd></div>
  </dl>
  <h2>Event timeline</h2>
  <div class="panel"><ol class="timeline" id="timeline">${events || '<li class="muted">No events.</li>'}</ol></div>
  <h2>Snapshot</h2>
  <div class="panel" id="reveal-box"><p class="hidden-body">The snapshot content is hidden. Open it only when you need to.</p><button type="button" data-reveal="/dashboard/api/transfers/${enc(t.id)}/snapshot" data-field="snapshot" data-focus-key="reveal">Open snapshot</button></div>`
}

function drawResources(d) {
  const nsChips = [
    ['', 'All namespaces'],
    ...d.namespaces.map((n) => [n.namespace, `${n.namespace} (${n.resources})`]),
  ]
    .map(
      ([v, label]) =>
        `<button type="button" data-ns="${esc(v)}" aria-pressed="${v === d.ns}" data-focus-key="ns:${esc(v)}">${esc(label)}</button>`,
    )
    .join('')
  const rows = d.resources.map(
    (r) =>
      `<tr><td><a href="#/resources/${enc(r.id)}" data-focus-key="r:${esc(r.id)}">${short(r.id)}</a></td><td>${esc(r.namespace)}</td><td class="hide-narrow">${esc(r.kind)}</td><td class="hide-narrow">${who(r.owner, { href: `#/resources?owner=${enc(r.owner)}` })}</td><td class="num">${r.version}</td><td class="num hide-narrow">${number.format(r.size)}</td><td>${time(r.updatedAt)}</td></tr>`,
  )
  const statusChips = ['live', 'revoked', 'expired', 'all']
    .map(
      (s) =>
        `<button type="button" data-grants="${s}" aria-pressed="${s === d.status}" data-focus-key="g:${s}">${s}</button>`,
    )
    .join('')
  return `<div class="toolbar"><div class="chips" role="group" aria-label="Namespace">${nsChips}</div></div>
  <div class="toolbar"><label for="f-owner">Owner</label> <input id="f-owner" type="search" placeholder="did:key:…" value="${esc(d.owner)}" size="28" /></div>
  ${table(['<th>Resource</th>', '<th>Namespace</th>', '<th class="hide-narrow">Kind</th>', '<th class="hide-narrow">Owner</th>', '<th class="num">Version</th>', '<th class="num hide-narrow">Bytes</th>', '<th>Changed</th>'], rows, 'No resources match.')}
  <h2>Grants</h2>
  <div class="toolbar"><div class="chips" role="group" aria-label="Grant status">${statusChips}</div></div>
  ${drawGrants(d.grants)}`
}

function drawGrants(grants) {
  const rows = grants.map(
    (g) =>
      `<tr><td class="hide-narrow">${short(g.id)}</td><td class="hide-narrow"><a href="#/resources/${enc(g.resourceId)}">${short(g.resourceId)}</a></td><td>${who(g.subject)}</td><td>${esc((g.actions ?? []).join(', '))}</td><td>${badge(g.status)}</td><td class="hide-narrow">${g.status === 'revoked' ? time(g.revokedAt) : time(g.expiresAt)}</td></tr>`,
  )
  return table(
    [
      '<th class="hide-narrow">Grant</th>',
      '<th class="hide-narrow">Resource</th>',
      '<th>Subject</th>',
      '<th>Actions</th>',
      '<th>Status</th>',
      '<th class="hide-narrow">Expires / revoked</th>',
    ],
    rows,
    'No grants.',
  )
}

function diffList(changes) {
  if (!changes) return '<p class="muted">First version.</p>'
  if (!changes.length) return '<p class="muted">No change in data.</p>'
  const v = (x) => esc(JSON.stringify(x))
  return `<ul class="diff">${changes
    .map((c) =>
      c.op === 'add'
        ? `<li class="add">+ ${esc(c.path)}: ${v(c.after)}</li>`
        : c.op === 'remove'
          ? `<li class="remove">− ${esc(c.path)}: ${v(c.before)}</li>`
          : `<li class="change">~ ${esc(c.path)}: ${v(c.before)} → ${v(c.after)}</li>`,
    )
    .join('')}</ul>`
}

function drawResource(r) {
  const versions = [...r.versions]
    .reverse()
    .map(
      (v) =>
        `<article class="panel version" data-version="${v.version}"><h3>Version ${v.version} <span class="muted">by ${who(v.actor)} · ${time(v.at)}</span></h3>${diffList(v.changes)}<details><summary data-focus-key="data:${v.version}">Data at version ${v.version}</summary>${json(v.data)}</details></article>`,
    )
    .join('')
  return `<h1 class="page"><span class="mono">${esc(r.id)}</span> <span class="badge">v${r.version}</span></h1>
  <dl class="panel meta">
    <div><dt>Namespace</dt><dd>${esc(r.namespace)}</dd></div>
    <div><dt>Kind</dt><dd>${esc(r.kind)}</dd></div>
    <div><dt>Owner</dt><dd>${who(r.owner, { cls: 'long' })}</dd></div>
    <div><dt>Size</dt><dd>${number.format(r.size)} bytes</dd></div>
    <div><dt>Created</dt><dd>${time(r.createdAt)}</dd></div>
    <div><dt>Last change</dt><dd>${time(r.updatedAt)} by ${who(r.updatedBy)}</dd></div>
  </dl>
  <h2>History and diffs (newest first)</h2>
  <div class="versions" id="versions">${versions}</div>
  <h2>Grants on this resource</h2>
  ${drawGrants(r.grants)}`
}

function drawNotify({ counts, oldestPending, oldestDead }) {
  const rows = (list, next) =>
    list.map(
      (s) =>
        `<tr><td>${short(s.event_id)}</td><td><a href="#/handoffs/${enc(s.handoff_id)}">${short(s.handoff_id)}</a> v${s.version}</td><td>${esc(s.origin)}</td><td class="num">${s.attempts}</td><td>${esc(s.last_outcome ?? '—')}</td><td>${time(s.created_at)}</td>${next ? `<td>${time(s.next_at)}</td>` : ''}</tr>`,
    )
  const head = (next) => [
    '<th>Event</th>',
    '<th>Handoff</th>',
    '<th>Receiver</th>',
    '<th class="num">Attempts</th>',
    '<th>Last outcome</th>',
    '<th>Moved</th>',
    ...(next ? ['<th>Next try</th>'] : []),
  ]
  return `<section aria-label="Counts"><div class="stats">${stat('Pending', counts.pending, '', counts.pending > 0)}${stat('Dead', counts.dead, '', counts.dead > 0)}${stat('Delivered', counts.delivered)}</div></section>
  <h2>Oldest pending</h2>${table(head(true), rows(oldestPending, true), 'Nothing pending.')}
  <h2>Oldest dead</h2>${table(head(false), rows(oldestDead, false), 'No dead signals.')}`
}

function drawMessageSummary({ principals }) {
  const rows = principals.map(
    (p) =>
      `<tr><td>${who(p.principal, { href: `#/messages/${enc(p.principal)}`, cls: 'long' })}</td><td class="num">${number.format(p.total)}</td><td class="num">${p.unacked ? `<strong>${number.format(p.unacked)}</strong>` : '0'}</td><td class="num hide-narrow">${p.lastSequence}</td><td class="num hide-narrow">${p.oldestUnackedSequence ?? '—'}</td><td class="hide-narrow">${time(p.lastAt)}</td></tr>`,
  )
  return table(
    [
      '<th>Recipient</th>',
      '<th class="num">Messages</th>',
      '<th class="num">Unacked</th>',
      '<th class="num hide-narrow">Last seq</th>',
      '<th class="num hide-narrow">Oldest unacked</th>',
      '<th class="hide-narrow">Last</th>',
    ],
    rows,
    'No messages yet.',
  )
}

function drawMessages({ principal, messages }) {
  const rows = messages.map(
    (m) =>
      `<tr data-message="${esc(m.id)}"><td class="num">${m.sequence}</td><td>${m.direction === 'in' ? 'from' : 'to'} ${who(m.direction === 'in' ? m.sender : m.recipient)}</td><td>${m.ackedAt ? badge('acked') : badge('pending')}</td><td class="num hide-narrow">${number.format(m.bodyChars)}</td><td class="hide-narrow">${time(m.createdAt)}</td><td class="actions"><button type="button" data-reveal="/dashboard/api/messages/${enc(m.id)}/body" data-field="body" data-focus-key="body:${esc(m.id)}" aria-label="Show the body of message ${m.sequence}">Show</button></td></tr><tr class="reveal-row" hidden><td colspan="6"></td></tr>`,
  )
  return `<h1 class="page">Messages of ${who(principal, { cls: 'long' })}</h1>
  ${table(['<th class="num">Seq</th>', '<th>Counterpart</th>', '<th>Ack</th>', '<th class="num hide-narrow">Chars</th>', '<th class="hide-narrow">Sent</th>', '<th>Body</th>'], rows, 'No messages to or from this principal.')}`
}

// ---- events on the page ---------------------------------------------------------------------

// Filters: the state select of a list, and the owner search of resources.
view.addEventListener('change', (e) => {
  const { section, params } = route()
  const key = e.target.id === 'f-state' ? 'state' : e.target.id === 'f-owner' ? 'owner' : ''
  if (!key) return
  const value = e.target.value.trim()
  if (value) params.set(key, value)
  else params.delete(key)
  // Another filter starts again at the first page.
  params.delete('cursor')
  setParams(section, params)
  void refresh()
})

function placeReveal(button, value) {
  const row = button.closest('tr')
  const box = row ? row.nextElementSibling : button.closest('#reveal-box')
  if (row && box) {
    box.hidden = false
    box.firstElementChild.innerHTML = json(value)
  } else if (box) {
    box.innerHTML = json(value)
  }
}

const confirmDialog = document.getElementById('confirm')
const decisionWords = {
  reject: {
    title: 'Reject this principal?',
    text: 'Its requests will be refused; approving it later admits it again.',
  },
  suspend: {
    title: 'Suspend this principal?',
    text: 'Its requests will be refused until it is approved again.',
  },
}

/** Asks before a decision that shuts a principal out; answers whether the operator confirmed. */
function confirmDecision(decision, principal) {
  const words = decisionWords[decision]
  if (!words) return Promise.resolve(true)
  document.getElementById('confirm-title').textContent = words.title
  // As text: the label is the agent's own words.
  const label = labels.get(principal)
  document.getElementById('confirm-principal').textContent = label
    ? `${label} · ${principal}`
    : principal
  document.getElementById('confirm-text').textContent = words.text
  const ok = document.getElementById('confirm-ok')
  ok.textContent = decision === 'reject' ? 'Reject' : 'Suspend'
  ok.className = decision
  confirmDialog.dataset.decision = decision
  confirmDialog.returnValue = ''
  confirmDialog.showModal()
  return new Promise((resolve) => {
    confirmDialog.addEventListener('close', () => resolve(confirmDialog.returnValue === 'ok'), {
      once: true,
    })
  })
}

async function copyText(button) {
  const value = button.dataset.copy
  try {
    await navigator.clipboard.writeText(value)
  } catch {
    // No clipboard (a plain-http address that is not loopback): select the text to copy by hand.
    const text = button.parentElement.querySelector('.id, .receipt')
    const range = document.createRange()
    range.selectNodeContents(text)
    getSelection().removeAllRanges()
    getSelection().addRange(range)
    return
  }
  button.dataset.copied = 'true'
  document.getElementById('announce').textContent = `Copied ${value}`
  setTimeout(() => delete button.dataset.copied, 1500)
}

view.addEventListener('click', async (e) => {
  const target = e.target.closest('button')
  if (!target) return
  if (target.dataset.copy) {
    e.preventDefault()
    await copyText(target)
  } else if (target.dataset.decide) {
    if (!(await confirmDecision(target.dataset.decide, target.dataset.principal))) return
    target.disabled = true
    try {
      await post(
        `/dashboard/api/principals/${enc(target.dataset.principal)}/${target.dataset.decide}`,
      )
      await refresh()
    } catch (err) {
      alert(err.message)
      target.disabled = false
    }
  } else if (target.dataset.reveal) {
    // Hidden content is read only on this deliberate click, and shown in place.
    const data = await api(target.dataset.reveal)
    revealed.set(target.dataset.reveal, data[target.dataset.field])
    placeReveal(target, data[target.dataset.field])
  } else if (target.dataset.ns !== undefined) {
    const { params } = route()
    if (target.dataset.ns) params.set('namespace', target.dataset.ns)
    else params.delete('namespace')
    setParams('resources', params)
    await refresh()
  } else if (target.dataset.grants) {
    const { params } = route()
    params.set('grants', target.dataset.grants)
    setParams('resources', params)
    await refresh()
  }
})

// ---- rendering ------------------------------------------------------------------------------

let current = null
let generation = 0
let pending = null
let pollTimer = null
const revealed = new Map()

async function show() {
  const r = route()
  const v = viewOf(r)
  current = { r, v }
  view.dataset.view = v === notFound ? 'not-found' : r.section
  revealed.clear()
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === r.section) a.setAttribute('aria-current', 'page')
    else a.removeAttribute('aria-current')
  }
  document.title = `${v.title} · Baton hub`
  view.innerHTML = v.shell(r)
  clearInterval(pollTimer)
  const every = typeof v.pollMs === 'function' ? v.pollMs(r) : v.pollMs
  if (every) pollTimer = setInterval(() => void refresh(), every)
  await refresh()
}

/** Re-reads the current view and redraws its content, keeping focus and open details in place. */
async function refresh() {
  if (!current) return
  const { v } = current
  const r = route()
  current.r = r
  const mine = ++generation
  const content = document.getElementById('content')
  if (!content) return
  try {
    const data = await v.load(r)
    if (mine !== generation) return
    const focusKey = document.activeElement?.dataset?.focusKey
    const open = [...content.querySelectorAll('details[open] summary')].map(
      (s) => s.dataset.focusKey,
    )
    content.innerHTML = v.draw(data, r)
    for (const key of open)
      content
        .querySelector(`summary[data-focus-key="${CSS.escape(key)}"]`)
        ?.parentElement?.setAttribute('open', '')
    for (const [url, value] of revealed) {
      const button = content.querySelector(`[data-reveal="${CSS.escape(url)}"]`)
      if (button) placeReveal(button, value)
    }
    // On a narrow screen the machine scrolls sideways: keep its current state in view.
    const machine = content.querySelector('#machine')
    const node = machine?.querySelector('.node.current rect')
    if (machine && node) {
      const x = Number(node.getAttribute('x'))
      machine.scrollLeft = Math.max(0, x + 55 - machine.clientWidth / 2)
    }
    if (focusKey) content.querySelector(`[data-focus-key="${CSS.escape(focusKey)}"]`)?.focus()
    view.setAttribute('aria-busy', 'false')
    view.dataset.loadedAt = String(Date.now())
  } catch (err) {
    if (mine !== generation) return
    // A page for an id the hub does not know is not found, as an unknown route is.
    if (err.status === 404) view.dataset.view = 'not-found'
    content.innerHTML =
      err.status === 404
        ? notFoundPage(location.hash)
        : `<div class="panel"><p class="error">${esc(err.message)}</p></div>`
    view.setAttribute('aria-busy', 'false')
    view.dataset.loadedAt = String(Date.now())
  }
}

function scheduleRefresh() {
  clearTimeout(pending)
  pending = setTimeout(() => void refresh(), 150)
}

// ---- live -----------------------------------------------------------------------------------

function connect() {
  const source = new EventSource('/dashboard/events')
  source.onopen = () => {
    live.dataset.state = 'live'
    live.textContent = 'live'
  }
  source.onmessage = (msg) => {
    let ev
    try {
      ev = JSON.parse(msg.data)
    } catch {
      return
    }
    window.dispatchEvent(new CustomEvent('baton:event', { detail: ev }))
    if (current?.v.onEvent?.(ev, current.r)) scheduleRefresh()
  }
  source.onerror = async () => {
    live.dataset.state = 'offline'
    live.textContent = 'reconnecting'
    if (source.readyState === EventSource.CLOSED) {
      // The stream was refused (signed out, or the hub restarted): check the session, then retry.
      try {
        await api('/dashboard/api/session')
        setTimeout(connect, 3000)
      } catch {
        /* api() already went to the sign-in page */
      }
    }
  }
}

// Relative times and grace countdowns tick without re-reading anything.
setInterval(() => {
  for (const el of document.querySelectorAll('time[datetime]'))
    el.textContent = ago(el.getAttribute('datetime'))
  for (const el of document.querySelectorAll('[data-countdown]'))
    el.textContent = ago(el.dataset.countdown)
}, 1000)

document.getElementById('signout').addEventListener('click', async () => {
  try {
    await post('/dashboard/signout')
  } finally {
    location.assign('/')
  }
})

window.addEventListener('hashchange', () => {
  void show()
  document.getElementById('main').focus({ preventScroll: true })
})

const session = await api('/dashboard/api/session')
csrfToken = session.csrfToken
admissionMode = session.admission ?? 'approval'
connect()
await show()
