// The Python MCP SDK client driver run by python.ts: reads a JSON plan on stdin, connects with
// `mcp.client.client.Client` (stdio or Streamable HTTP, mode `auto` or `legacy`), runs the steps and
// prints one JSON answer. Kept as a string so it ships in dist with the rest of the testing helpers.
export const PYTHON_DRIVER = String.raw`
"""Drives one MCP server with the Python SDK from a JSON plan on stdin; prints one JSON answer."""
import json
import os
import sys
import time

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


def dump(value):
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return value


def event_json(event):
    out = {"type": type(event).__name__}
    uri = getattr(event, "uri", None)
    if uri is not None:
        out["uri"] = str(uri)
    return out


class Driver:
    def __init__(self, client):
        self.client = client
        self.notifications = []
        self.notified = anyio.Event()

    async def on_message(self, message):
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        # Log messages reach logging_callback; the rest is recorded here.
        if isinstance(method, str) and method.startswith("notifications/") and method != "notifications/message":
            params = getattr(root, "params", None)
            self.notifications.append({"method": method, "params": dump(params) if params is not None else None})
            self.notified.set()

    async def run_steps(self, steps):
        results = []
        for step in steps:
            try:
                results.append({"ok": await self.step(step)})
            except MCPError as error:
                results.append({"error": {"code": error.code, "message": error.message, "data": dump(error.error.data)}})
            except Exception as error:  # the test asserts on what went wrong
                results.append({"exception": type(error).__name__ + ": " + str(error)})
        return results

    async def step(self, step):
        client = self.client
        op = step["op"]
        meta = step.get("meta")
        if op == "info":
            session = client.session
            return {
                "protocolVersion": client.protocol_version,
                "serverInfo": dump(client.server_info),
                "capabilities": dump(client.server_capabilities),
                "instructions": client.instructions,
                "discover": dump(session.discover_result),
                "initialize": dump(session.initialize_result),
            }
        if op == "list_tools":
            return dump(await client.list_tools(meta=meta, cache_mode="refresh"))
        if op == "call_tool":
            return dump(await client.call_tool(step["name"], step.get("arguments", {}), meta=meta))
        if op == "list_resources":
            return dump(await client.list_resources(meta=meta, cache_mode="refresh"))
        if op == "list_resource_templates":
            return dump(await client.list_resource_templates(meta=meta, cache_mode="refresh"))
        if op == "read_resource":
            return dump(await client.read_resource(step["uri"], meta=meta))
        if op == "list_prompts":
            return dump(await client.list_prompts(meta=meta, cache_mode="refresh"))
        if op == "get_prompt":
            return dump(await client.get_prompt(step["name"], step.get("arguments"), meta=meta))
        if op == "ping":
            return dump(await client.send_ping())
        if op == "request":
            session = client.session
            data = {"method": step["method"], "params": step.get("params") or {}}
            opts = {}
            session._stamp(data, opts)
            return dump(await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts))
        if op == "set_logging_level":
            return dump(await client.set_logging_level(step["level"]))
        if op == "subscribe":
            return dump(await client.session.subscribe_resource(step["uri"]))
        if op == "write_local":
            with open(step["path"], "w", encoding="utf-8") as handle:
                handle.write(step["content"])
            return None
        if op == "sleep":
            await anyio.sleep(step["seconds"])
            return None
        if op == "wait_notifications":
            return await self.wait_notifications(step)
        if op == "listen":
            return await self.listen(step)
        raise ValueError("unknown op " + op)

    async def wait_notifications(self, step):
        method = step["method"]
        want = step.get("count", 1)
        deadline = time.monotonic() + step.get("timeout", 10)
        while True:
            found = [n for n in self.notifications if n["method"] == method]
            if len(found) >= want or time.monotonic() >= deadline:
                return {"notifications": found, "waitedMs": None}
            self.notified = anyio.Event()
            with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
                await self.notified.wait()

    async def listen(self, step):
        events = []
        with anyio.move_on_after(step.get("timeout", 10)):
            async with self.client.listen(
                resource_subscriptions=step.get("uris", ()),
                tools_list_changed=step.get("toolsListChanged", False),
                resources_list_changed=step.get("resourcesListChanged", False),
                prompts_list_changed=step.get("promptsListChanged", False),
            ) as subscription:
                honored = dump(subscription.honored)
                during = await self.run_steps(step.get("during", []))
                started = time.monotonic()
                async for event in subscription:
                    events.append({**event_json(event), "afterMs": round((time.monotonic() - started) * 1000)})
                    if len(events) >= step.get("count", 1):
                        break
                return {"honored": honored, "during": during, "events": events}
        return {"timedOut": True, "events": events}


async def main():
    plan = json.load(sys.stdin)
    target = plan["target"]
    if "url" in target:
        server = target["url"]
    else:
        env = dict(os.environ)
        env.update(target.get("env") or {})
        server = StdioServerParameters(command=target["command"], args=target.get("args", []), env=env, cwd=target.get("cwd"))
    holder = {}

    async def message_handler(message):
        driver = holder.get("driver")
        if driver is not None:
            await driver.on_message(message)

    async def logging_callback(params):
        driver = holder.get("driver")
        if driver is not None:
            driver.notifications.append({"method": "notifications/message", "params": dump(params)})
            driver.notified.set()

    options = {"mode": plan.get("mode", "auto"), "message_handler": message_handler, "logging_callback": logging_callback}
    if plan.get("logLevel"):
        options["log_level"] = plan["logLevel"]
    if plan.get("elicit") is not None:
        answer = plan["elicit"]

        async def elicitation_callback(context, params):
            import mcp_types as types
            return types.ElicitResult(action=answer.get("action", "accept"), content=answer.get("content"))

        options["elicitation_callback"] = elicitation_callback
    output = {}
    try:
        async with Client(server, **options) as client:
            driver = Driver(client)
            holder["driver"] = driver
            output["protocolVersion"] = client.protocol_version
            output["results"] = await driver.run_steps(plan.get("steps", []))
            output["notifications"] = driver.notifications
    except BaseException as error:  # a connect failure is an answer too
        output["connectError"] = type(error).__name__ + ": " + str(error)
    sys.stdout.write(json.dumps(output) + "\n")
    sys.stdout.flush()


anyio.run(main)
`
