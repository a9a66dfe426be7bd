// inventory-node is a small stdio MCP server used to show and test mcpepoch.
//
// It keeps stock counts in a JSON file, <data dir>/inventory.json, shaped
// {"<sku>": <quantity>, ...}. The data dir is $INVENTORY_DATA_DIR, or ./data
// relative to the working directory; both are created on the first write.
//
// Tools:
//   inventory_lookup {sku: string}                 read-only
//   inventory_adjust {sku: string, delta: integer} adds delta to the count;
//                                                  a result below zero is a
//                                                  tool error and writes nothing
//   inventory_order {sku: string, quantity: integer}
//                                                  orders stock from the supplier:
//                                                  asks mcpepoch host for the
//                                                  supplier token (credential
//                                                  scope inventory-supplier),
//                                                  appends the order, signed with
//                                                  it, to <data dir>/orders.jsonl
//                                                  and adds quantity to the count;
//                                                  without the token it is a tool
//                                                  error and writes nothing
//
// Every result names the code revision that produced it ("revision=A"), so a
// caller can tell which build answered. Edit REVISION and rebuild to get a new
// one.

import { createHmac } from "node:crypto";
import { appendFile, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { getCredential } from "mcpepoch/credentials";
import { z } from "zod";

const REVISION = "A";

const dataDir = path.resolve(process.env.INVENTORY_DATA_DIR || "./data");
const dataFile = path.join(dataDir, "inventory.json");
const ordersFile = path.join(dataDir, "orders.jsonl");

// SUPPLIER_SCOPE is the credential scope inventory_order uses: the
// [credentials.inventory-supplier] table of the project's mcpepoch.toml.
const SUPPLIER_SCOPE = "inventory-supplier";

// orderSignature is the hex HMAC-SHA256, keyed with the supplier token, of
// "SKU QUANTITY REVISION": it proves which token signed an order without
// holding it.
function orderSignature(token: string, sku: string, quantity: number): string {
  return createHmac("sha256", token).update(`${sku} ${quantity} ${REVISION}`).digest("hex");
}

type Inventory = Record<string, number>;

async function load(): Promise<Inventory> {
  let text: string;
  try {
    text = await readFile(dataFile, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      return {};
    }
    throw err;
  }
  const parsed: unknown = JSON.parse(text);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error(`${dataFile}: want a JSON object of sku to quantity`);
  }
  const inv: Inventory = {};
  for (const [sku, qty] of Object.entries(parsed)) {
    if (!Number.isSafeInteger(qty)) {
      throw new Error(`${dataFile}: quantity of ${JSON.stringify(sku)} is not an integer`);
    }
    inv[sku] = qty as number;
  }
  return inv;
}

// save writes inv atomically: a temporary file in the same directory, then a
// rename over the old one.
async function save(inv: Inventory): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  const tmp = `${dataFile}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(inv, null, 2) + "\n", { flush: true });
  await rename(tmp, dataFile);
}

// Adjustments run one at a time so that concurrent calls never lose an update.
let queue: Promise<unknown> = Promise.resolve();

function serialize<T>(fn: () => Promise<T>): Promise<T> {
  const run = queue.then(fn, fn);
  queue = run.catch(() => undefined);
  return run;
}

function result(sku: string, quantity: number): CallToolResult {
  return {
    content: [{ type: "text", text: `sku=${sku} quantity=${quantity} revision=${REVISION}` }],
    structuredContent: { sku, quantity, revision: REVISION },
  };
}

const output = {
  sku: z.string(),
  quantity: z.number().int(),
  revision: z.string(),
};

const server = new McpServer({ name: "inventory-node", version: "0.1.0" });

server.registerTool(
  "inventory_lookup",
  {
    title: "Look up stock",
    description: "Return the quantity in stock for a SKU (0 if the SKU is unknown).",
    inputSchema: { sku: z.string().min(1).describe("stock keeping unit") },
    outputSchema: output,
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  async ({ sku }) => {
    const inv = await load();
    return result(sku, inv[sku] ?? 0);
  },
);

server.registerTool(
  "inventory_adjust",
  {
    title: "Adjust stock",
    description:
      "Add delta (may be negative) to the quantity in stock for a SKU and return the new quantity. " +
      "Fails without writing if the quantity would drop below zero.",
    inputSchema: {
      sku: z.string().min(1).describe("stock keeping unit"),
      delta: z.number().int().describe("change in quantity"),
    },
    outputSchema: output,
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: false,
    },
  },
  async ({ sku, delta }) =>
    serialize(async () => {
      const inv = await load();
      const quantity = (inv[sku] ?? 0) + delta;
      if (quantity < 0) {
        return {
          isError: true,
          content: [
            {
              type: "text",
              text: `sku=${sku} quantity=${inv[sku] ?? 0} revision=${REVISION}: insufficient stock for delta ${delta}`,
            },
          ],
        };
      }
      inv[sku] = quantity;
      await save(inv);
      return result(sku, quantity);
    }),
);

server.registerTool(
  "inventory_order",
  {
    title: "Order stock from the supplier",
    description:
      `Order quantity of a SKU from the supplier, signed with the supplier token (credential scope ${SUPPLIER_SCOPE}), ` +
      "and add it to the stock.",
    inputSchema: {
      sku: z.string().min(1).describe("stock keeping unit"),
      quantity: z.number().int().min(1).describe("how many to order"),
    },
    outputSchema: output,
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: false,
    },
  },
  async ({ sku, quantity }, extra) => {
    let token: string;
    try {
      // The request's _meta names the call to the host, which hands the
      // token to a call a person approved for the scope only.
      token = await getCredential(SUPPLIER_SCOPE, extra._meta);
    } catch (err) {
      // The message names the scope and the host's reason, never a value.
      return { isError: true, content: [{ type: "text", text: (err as Error).message }] };
    }
    const signature = orderSignature(token, sku, quantity);
    return serialize(async () => {
      const inv = await load();
      inv[sku] = (inv[sku] ?? 0) + quantity;
      await mkdir(dataDir, { recursive: true });
      await appendFile(ordersFile, JSON.stringify({ sku, quantity, revision: REVISION, signature }) + "\n");
      await save(inv);
      return result(sku, inv[sku]);
    });
  },
);

const transport = new StdioServerTransport();
await server.connect(transport);
console.error(`inventory-node revision=${REVISION} pid=${process.pid} data=${dataFile}`);
