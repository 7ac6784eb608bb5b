// Small SVG drawings for the dashboard: activity bars, a handoff's machine, a budget bar, a ledger.
// Every drawing is a string of SVG markup built from escaped values; CSS classes style it.

/** Escapes text for HTML and SVG markup. */
export function esc(value) {
  return String(value ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;')
}

/** Bars of a count series, one per bucket, scaled to the largest; fixed size so nothing jumps. */
export function barChart(values, label) {
  const n = values.length
  const max = Math.max(1, ...values)
  const w = 4
  const h = 40
  const bars = values
    .map((v, i) => {
      if (!v) return ''
      const bh = Math.max(1.5, (v / max) * (h - 2))
      return `<rect class="bar" x="${i * w + 0.5}" y="${h - bh}" width="${w - 1}" height="${bh}"><title>${v}</title></rect>`
    })
    .join('')
  return `<svg viewBox="0 0 ${n * w} ${h}" preserveAspectRatio="none" role="img" aria-label="${esc(label)}"><line class="base" x1="0" y1="${h - 0.5}" x2="${n * w}" y2="${h - 0.5}" />${bars}</svg>`
}

/**
 * A handoff's machine: states left to right in declared order, the current one filled, visited
 * ones outlined, final ones dashed; the moves it made are arcs above, the moves open now below.
 */
export function machineDrawing(machine, current, history) {
  const states = machine?.states ?? []
  const final = new Set(machine?.final ?? [])
  const col = 132
  const boxW = 110
  const boxH = 36
  const pad = 16
  const mid = 96
  const x = (s) => pad + states.indexOf(s) * col + boxW / 2
  const visited = new Set([states[0], ...history.flatMap((m) => [m.from, m.to])])
  const width = pad * 2 + Math.max(1, states.length) * col - (col - boxW)
  const arc = (from, to, above, cls, label) => {
    const x1 = x(from)
    const x2 = x(to)
    if (Number.isNaN(x1) || Number.isNaN(x2) || x1 === x2) return ''
    const dir = above ? -1 : 1
    const y = mid + (dir * boxH) / 2
    const lift = Math.min(70, 22 + Math.abs(x2 - x1) / 6)
    const cy = y + dir * lift
    const path = `M ${x1} ${y} C ${x1} ${cy}, ${x2} ${cy}, ${x2} ${y}`
    const tip = `${x2 - 5},${y + dir * 9} ${x2 + 5},${y + dir * 9} ${x2},${y}`
    const text = label
      ? `<text class="edge-label" x="${(x1 + x2) / 2}" y="${y + dir * lift * 0.75 - (above ? 3 : -10)}">${esc(label)}</text>`
      : ''
    return `<path class="edge ${cls}" d="${path}" /><polygon class="arrow ${cls}" points="${tip}" />${text}`
  }
  const edges = history.map((m) => arc(m.from, m.to, true, 'taken', `v${m.version}`)).join('')
  const open = final.has(current) ? [] : (machine?.transitions?.[current] ?? [])
  const next = open.map((to) => arc(current, to, false, 'next', '')).join('')
  const nodes = states
    .map((s, i) => {
      const cls = ['node', visited.has(s) ? 'visited' : '', final.has(s) ? 'final' : '']
      if (s === current) cls.push('current')
      const label = s.length > 14 ? `${s.slice(0, 13)}…` : s
      return `<g class="${cls.join(' ')}" data-state="${esc(s)}"><title>${esc(s)}${s === current ? ' (current)' : ''}${final.has(s) ? ' — final' : ''}</title><rect x="${pad + i * col}" y="${mid - boxH / 2}" width="${boxW}" height="${boxH}" rx="8" /><text x="${pad + i * col + boxW / 2}" y="${mid}">${esc(label)}</text></g>`
    })
    .join('')
  return `<svg width="${width}" viewBox="0 0 ${width} 190" role="img" aria-label="Machine: ${esc(states.join(', '))}; current state ${esc(current)}">${edges}${next}${nodes}</svg>`
}

/** A budget bar: spent over allocated; warn past 80%, bad when insolvent or over budget. */
export function budgetBar(spent, budget, state, mini = false) {
  const ratio = budget ? Math.min(1, spent / budget) : 0
  const bad = state === 'insolvent' || (budget !== null && budget > 0 && spent >= budget)
  const cls = bad ? 'bad' : ratio >= 0.8 ? 'warn' : ''
  const w = 1000
  return `<div class="budget ${mini ? 'mini' : ''} ${cls}" data-ratio="${ratio.toFixed(4)}"><svg viewBox="0 0 ${w} 10" preserveAspectRatio="none" role="img" aria-label="Budget ${Math.round(ratio * 100)}% spent"><rect class="track" x="0" y="0" width="${w}" height="10" rx="${mini ? 3 : 2}" /><rect class="fill" x="0" y="0" width="${(ratio * w).toFixed(1)}" height="10" rx="${mini ? 3 : 2}" /></svg></div>`
}

/**
 * A delegation budget's ledger (issue 28) as one bar of its grant: spent, reserved by
 * sub-delegations, held, then what remains (or, once closed, what went back to the parent).
 */
export function ledgerBar(b) {
  const w = 1000
  const granted = Math.max(1, b.grantedMicros)
  const parts = [
    ['spent', b.spentMicros],
    ['reserved', b.reservedMicros],
    ['held', b.heldMicros],
    [
      b.state === 'open' ? 'remaining' : 'released',
      b.state === 'open' ? b.remainingMicros : b.releasedMicros,
    ],
  ]
  let x = 0
  const rects = parts
    .map(([cls, micros]) => {
      const width = (Math.max(0, micros) / granted) * w
      const rect =
        width > 0
          ? `<rect class="${cls}" x="${x.toFixed(1)}" y="0" width="${width.toFixed(1)}" height="10"><title>${esc(cls)}</title></rect>`
          : ''
      x += width
      return rect
    })
    .join('')
  const label = parts.map(([cls, micros]) => `${cls} ${micros}`).join(', ')
  return `<div class="ledger" data-state="${esc(b.state)}"><svg class="ledger-bar" viewBox="0 0 ${w} 10" preserveAspectRatio="none" role="img" aria-label="Budget of ${esc(b.grantedMicros)}: ${esc(label)}"><rect class="track" x="0" y="0" width="${w}" height="10" rx="2" />${rects}</svg></div>`
}
