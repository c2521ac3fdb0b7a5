// pnpm bench [fs|postgres|github|browser]: side-by-side benchmarks. Figures are ratios against baselines measured
// in the same run (this machine is shared and noisy); absolute times are printed for context only.
const which = process.argv[2] ?? 'all'
const suites = {
  fs: () => import('./fs-bench.mjs'),
  postgres: () => import('./postgres-bench.mjs'),
  github: () => import('./github-bench.mjs'),
  browser: () => import('./browser-bench.mjs'),
}
for (const [name, load] of Object.entries(suites)) {
  if (which !== 'all' && which !== name) continue
  console.log(`\n### ${name}\n`)
  const suite = await load()
  await suite.run()
}
