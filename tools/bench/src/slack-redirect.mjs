// Preloaded into the reference Slack server for the benchmark only (node --import): it has
// https://slack.com/api/ written into every request, so its fetch calls are sent to the loopback
// fake in SLACK_BENCH_API instead. Nothing leaves the machine. The Web API takes a method's
// arguments as a query string or as a form body; the fake reads bodies, so a GET's query string is
// sent as the form body of a POST (same arguments, same answer from Slack).
const target = process.env.SLACK_BENCH_API
const original = globalThis.fetch
if (target) {
  globalThis.fetch = (input, init = {}) => {
    const url = new URL(String(input).replace(/^https:\/\/slack\.com\/api\//, `${target}/api/`))
    if ((init.method ?? 'GET') === 'GET' && url.search) {
      const body = url.searchParams.toString()
      url.search = ''
      return original(url, {
        ...init,
        method: 'POST',
        headers: { ...init.headers, 'Content-Type': 'application/x-www-form-urlencoded' },
        body,
      })
    }
    return original(url, init)
  }
}
