#!/usr/bin/env node
import { run } from '@keel-mcp/core'
import { server } from './replica-server.js'

void run(server)
