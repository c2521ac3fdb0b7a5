import { spawn } from 'node:child_process'
const { startFakeSlack, BOT_TOKEN } = await import('../../tools/bench/node_modules/.cache/keel-bench/slack-fake/fake-slack.js')
const slack = await startFakeSlack()
const flags = (process.env.FLAGS ?? '').split(' ').filter(Boolean)
const child = spawn(process.execPath, [...flags, process.env.BIN ?? 'dist/index.js'], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: slack.url, LOG_LEVEL: 'warn' } })
let buf = ''; const waiters = new Map(); let id = 0
child.stdout.on('data', (d) => { buf += d; let i; while ((i = buf.indexOf('\n')) >= 0) { const m = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1); waiters.get(m.id)?.(m); waiters.delete(m.id) } })
const req = (method, params) => new Promise((r) => { const n = ++id; waiters.set(n, r); child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: n, method, params }) + '\n') })
await req('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } })
child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n')
const call = () => req('tools/call', { name: 'get_channel_history', arguments: { channel: 'C0GENERAL', limit: 10 } })
for (let i = 0; i < 200; i++) await call()
const n = Number(process.env.N ?? 2000)
const t = performance.now()
for (let i = 0; i < n; i++) { const m = await call(); if (m.result?.isError) throw new Error(JSON.stringify(m)) }
console.log('ms/call wall', ((performance.now() - t) / n).toFixed(3))
child.stdin.end(); await new Promise((r) => child.on('exit', r)); await slack.close()
