// Core's own per-call cost: a Keel server with one no-op tool against the SDK's plain server with
// the same tool (baselines/), both over stdio, alternated. What is left between them is core's
// per-call path: argument validation, signal and timeout, log plumbing, output cap, projection.
import { fileURLToPath } from 'node:url'
import { compareServers } from './harness.mjs'

const baseline = (name) => fileURLToPath(new URL(`./baselines/${name}`, import.meta.url))
const call = { name: 'noop', arguments: { text: 'hello' } }

export function contenders() {
  return [
    { label: 'keel no-op', command: process.execPath, args: [baseline('keel-noop.mjs')], call },
    {
      label: 'SDK no-op',
      command: process.execPath,
      args: [baseline('sdk-noop.mjs')],
      call,
      reference: true,
    },
    // The reference servers' SDK generation, for context: not the goal's baseline.
    { label: 'SDK v1 no-op', command: process.execPath, args: [baseline('sdk-v1-noop.mjs')], call },
  ]
}

export async function run() {
  const [keel, sdk, v1] = await compareServers('core', contenders())
  console.log(
    `\nGoal: keel no-op ≤ 1.5× the SDK no-op. CPU per call ${(keel.cpu / sdk.cpu).toFixed(2)}×, p50 ${(keel.p50 / sdk.p50).toFixed(2)}×.`,
  )
  console.log(
    `SDK v2 against v1 (the reference servers' generation), same tool: CPU per call ${(sdk.cpu / v1.cpu).toFixed(2)}×, p50 ${(sdk.p50 / v1.p50).toFixed(2)}×.`,
  )
}
