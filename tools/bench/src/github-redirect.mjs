// Preloaded into the reference GitHub server for the benchmark only (node --import): it has
// https://api.github.com written into every request, so its fetch calls are sent to the loopback
// fake in GITHUB_BENCH_API instead. Nothing leaves the machine.
const target = process.env.GITHUB_BENCH_API
const original = globalThis.fetch
if (target) {
  globalThis.fetch = (input, init) =>
    original(String(input).replace(/^https:\/\/api\.github\.com/, target), init)
}
