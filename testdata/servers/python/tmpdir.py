# A stdio MCP server in plain Python whose tool "tmp" answers the TMPDIR
# it was started with. End-to-end tests copy it into a project
# (internal/testenv.PythonServer).
import json, os, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") is None:
        continue
    meth, ok = m.get("method"), lambda r: send({"jsonrpc": "2.0", "id": m["id"], "result": r})
    if meth == "initialize":
        ok({"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "tmp", "version": "1"}})
    elif meth == "tools/list":
        ok({"tools": [{"name": "tmp", "description": "says its TMPDIR", "inputSchema": {"type": "object", "properties": {}}}]})
    elif meth == "tools/call":
        ok({"content": [{"type": "text", "text": "TMPDIR=" + os.environ.get("TMPDIR", "")}]})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "method not found"}})
