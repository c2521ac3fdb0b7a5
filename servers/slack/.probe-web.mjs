import { WebClient, LogLevel } from '@slack/web-api'
const { startFakeSlack, BOT_TOKEN } = await import('../../tools/bench/node_modules/.cache/keel-bench/slack-fake/fake-slack.js')
const slack = await startFakeSlack({ latencyMs: Number(process.env.LAT ?? 0) })
const quiet = () => () => {}
const mode = process.env.MODE ?? 'web'
const client = new WebClient(BOT_TOKEN, { slackApiUrl: slack.url, rejectRateLimitedCalls: true, logLevel: LogLevel.INFO })
const call = mode === 'web'
  ? () => client.apiCall('conversations.history', { channel: 'C0GENERAL', limit: 10 })
  : () => fetch(slack.url + 'conversations.history', { method: 'POST', headers: { authorization: `Bearer ${BOT_TOKEN}`, 'content-type': 'application/x-www-form-urlencoded' }, body: 'channel=C0GENERAL&limit=10' }).then((r) => r.json())
for (let i = 0; i < 200; i++) await call()
const n = Number(process.env.N ?? 2000)
const c0 = process.cpuUsage(); const t = performance.now()
let next = 0
await Promise.all(Array.from({ length: 8 }, async () => { while (next++ < n) await call() }))
const cpu = process.cpuUsage(c0)
console.log(mode, 'calls/s', (n / ((performance.now() - t) / 1000)).toFixed(0), 'cpu ms/call (client+fake)', ((cpu.user + cpu.system) / 1000 / n).toFixed(3))
await slack.close()
