"""A multi-step browser flow driven by the Python MCP SDK's Client over Streamable HTTP.

Usage: browser_flow.py <mcp url> <site url> <mode: auto|legacy>. Prints one JSON report.
In `auto` mode (2026-07-28, no session) the session handle navigate returns is passed on every
later call; in `legacy` mode (the initialize handshake) no handle is passed: the session is the
connection's.
"""

import json
import re
import sys

import anyio
from mcp.client.client import Client


def text_of(result):
    return "\n".join(getattr(block, "text", "") or "" for block in result.content)


def ref_of(text, pattern):
    for line in text.split("\n"):
        match = re.search(pattern, line)
        if match:
            ref = re.search(r"#(e\d+)", line[match.start():])
            if ref:
                return ref.group(1)
    raise RuntimeError(f"no ref for {pattern} in:\n{text}")


async def main(url, site, mode):
    report = {"steps": []}
    async with Client(url, mode=mode) as client:
        report["protocol"] = client.protocol_version
        session = None

        async def call(name, **arguments):
            if session:
                arguments["session"] = session
            result = await client.call_tool(name, arguments)
            report["steps"].append({"tool": name, "isError": bool(result.is_error)})
            if result.is_error:
                raise RuntimeError(f"{name} failed: {text_of(result)}")
            return result

        navigated = await call("navigate", url=f"{site}/form")
        session = (navigated.structured_content or {}).get("session")
        report["session"] = session
        report["sessionInText"] = bool(session) and session in text_of(navigated)
        snapshot = text_of(await call("snapshot"))
        await call("type", ref=ref_of(snapshot, r'textbox "Name"'), text="Ada")
        clicked = await call("click", ref=ref_of(snapshot, r'button "Send"'))
        report["clicked"] = text_of(clicked)
        await call("new_tab")
        tabs = await call("list_tabs")
        report["tabs"] = tabs.structured_content["tabs"]
        await call("select_tab", tab="t1")
        back = await call("go_back")
        report["back"] = back.structured_content
        if session:
            await call("close_session")
            after = await client.call_tool("list_tabs", {"session": session})
            report["afterClose"] = {"isError": bool(after.is_error), "text": text_of(after)}
    print(json.dumps(report))


anyio.run(main, *sys.argv[1:4])
