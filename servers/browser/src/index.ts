#!/usr/bin/env node
import { run } from '@keel-mcp/core'
import { server } from './server.js'

void run(server)
