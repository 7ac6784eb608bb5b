// Signs in with fetch so a wrong token shows its message in place; the form posts without JS too.
const form = document.getElementById('signin-form')
const error = document.getElementById('signin-error')
document.getElementById('token').focus()

form.addEventListener('submit', async (event) => {
  event.preventDefault()
  error.hidden = true
  const token = new FormData(form).get('token')
  const button = form.querySelector('button')
  button.disabled = true
  try {
    const res = await fetch('/dashboard/session', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
      credentials: 'same-origin',
    })
    if (res.ok) {
      const body = await res.json()
      location.assign(body.next || '/dashboard/')
      return
    }
    const body = await res.json().catch(() => ({}))
    error.textContent =
      body.code === 'rate_limited'
        ? `Too many failed attempts; try again in ${body.retry_after ?? 'a few'} seconds.`
        : body.code === 'admin_token_invalid'
          ? 'The operator token is wrong.'
          : body.error || `Sign-in failed (HTTP ${res.status}).`
    error.hidden = false
  } catch {
    error.textContent = 'The hub does not answer.'
    error.hidden = false
  } finally {
    button.disabled = false
  }
})
