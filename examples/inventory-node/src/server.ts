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
//
// Every result names the code revision that produced it ("revision=A"), so a
// caller can tell which build answered. Edit REVISION and rebuild to get a new
// one.

import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const REVISION = "A";

const dataDir = path.resolve(process.env.INVENTORY_DATA_DIR || "./data");
const dataFile = path.join(dataDir, "inventory.json");

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

const transport = new StdioServerTransport();
await server.connect(transport);
console.error(`inventory-node revision=${REVISION} pid=${process.pid} data=${dataFile}`);
