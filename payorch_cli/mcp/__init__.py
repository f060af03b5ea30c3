"""`payorch mcp`: the sandbox as a Model Context Protocol server an AI coding agent drives.

The server is a client of the HTTP API and the control plane, like every other command: each
tool is one or a few calls through `payorch_cli.client.Client` (`sandbox.py`), never a second
path into the domain. Modules:

- `sandbox.py`: the credentials, namespace prefix, production-key rule and error envelopes;
- `embedded.py`: the `payorch serve` subprocess started when no `--base-url` is given;
- `explain.py`: a payment's trace with the requests and events around it, as text and data;
- `tools.py`: the tools, plain functions over a Sandbox (no MCP import: tested directly too);
- `access.py`: what `run_scenario` may read of the host (environment variables, folders);
- `server.py`: the MCPServer (the official SDK's): tools, resources, prompts, the argument check;
- `stdio.py`: the stdio transport that answers every line (the SDK's one private name is here).
The SDK is imported by `server.py` and `stdio.py` only, when `payorch mcp` runs.
"""
