#!/usr/bin/env node
import { run } from '@keel-mcp/core'
import { server } from './server.js'

await run(server)
