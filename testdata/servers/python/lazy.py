# A stdio MCP server in plain Python, run as "python3 -m app.server", that
# imports app.impl only when its tool "read" is first called (code loaded
# after every check a host makes at start) and answers impl.run(); its
# tool "ping" answers pong. End-to-end tests copy it into a project
# (internal/testenv.PythonServer).
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
tools = [{"name": n, "description": n, "inputSchema": {"type": "object", "properties": {}}} for n in ("read", "ping")]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") is None:
        continue
    meth, ok = m.get("method"), lambda r: send({"jsonrpc": "2.0", "id": m["id"], "result": r})
    if meth == "initialize":
        ok({"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "lazy", "version": "1"}})
    elif meth == "tools/list":
        ok({"tools": tools})
    elif meth == "tools/call" and m["params"]["name"] == "read":
        from app import impl
        ok({"content": [{"type": "text", "text": impl.run()}]})
    elif meth == "tools/call":
        ok({"content": [{"type": "text", "text": "pong"}]})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "method not found"}})
