#!/usr/bin/env node
// Launcher of the mcpepoch npm package: runs the prebuilt mcpepoch binary of
// this platform, installed as one of the optional dependencies
// @mcpepoch/{linux,darwin}-{x64,arm64}.
//
// It stays out of the way of a stdio MCP gateway: the binary inherits the
// launcher's stdin, stdout and stderr file descriptors (no byte passes
// through this process), every signal the launcher receives that a terminal
// or a client sends (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) is
// sent on to the binary, and the launcher ends the way the binary ended: with
// its exit status, or killed by the same signal.
"use strict";

const { spawn } = require("node:child_process");
const os = require("node:os");
const path = require("node:path");

// packages maps `${process.platform} ${process.arch}` to the package that
// holds that platform's binary.
const packages = {
  "linux x64": "@mcpepoch/linux-x64",
  "linux arm64": "@mcpepoch/linux-arm64",
  "darwin x64": "@mcpepoch/darwin-x64",
  "darwin arm64": "@mcpepoch/darwin-arm64",
};

const forwarded = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"];

function fail(message) {
  process.stderr.write(`mcpepoch: error: ${message}\n`);
  process.exit(1);
}

function binaryPath() {
  const key = `${process.platform} ${process.arch}`;
  const pkg = packages[key];
  if (!pkg) {
    fail(
      `no prebuilt binary for ${process.platform}/${process.arch} ` +
        "(there are for linux and darwin, x64 and arm64; Windows is not supported); " +
        "build one from a clone with: go install ./cmd/...",
    );
  }
  try {
    return require.resolve(`${pkg}/bin/mcpepoch`);
  } catch {
    fail(
      `${pkg}, the package that holds the binary for this platform, is not installed. ` +
        "npm installs it as an optional dependency of mcpepoch when it can get it: " +
        "from the registry, or from its tarball named next to mcpepoch's " +
        `(npm i -D mcpepoch-V.tgz ${pkg.replace("@mcpepoch/", "mcpepoch-")}-V.tgz); ` +
        "it is also left out by --omit=optional or --no-optional",
    );
  }
}

// MCPEPOCH_CLIENT_PID names the process that started this launcher: a host
// refuses to count approvals from its descendants as made at a terminal.
// It can only add to what the host finds itself by walking the process tree.
//
// MCPEPOCH_INVOKED_AS tells the binary how the person runs it, for the
// commands its messages name: "npx mcpepoch" when this launcher runs from a
// project's node_modules/.bin (npx, npm run, a client config's absolute
// path, npx's cache), which puts no mcpepoch on PATH; unset from a global
// install, whose bin directory is on PATH.
const env = { ...process.env, MCPEPOCH_CLIENT_PID: String(process.ppid) };
delete env.MCPEPOCH_INVOKED_AS;
const invokedFrom = path.dirname(path.resolve(process.argv[1] || ""));
if (path.basename(invokedFrom) === ".bin" && path.basename(path.dirname(invokedFrom)) === "node_modules") {
  env.MCPEPOCH_INVOKED_AS = "npx mcpepoch";
}
const child = spawn(binaryPath(), process.argv.slice(2), { stdio: "inherit", env });

const relay = {};
for (const sig of forwarded) {
  relay[sig] = () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(sig);
    }
  };
  process.on(sig, relay[sig]);
}

child.on("error", (err) => fail(`cannot run ${child.spawnfile}: ${err.message}`));

child.on("exit", (code, signal) => {
  if (signal) {
    // End the same way: drop our handler and send ourselves the signal.
    for (const sig of forwarded) process.removeListener(sig, relay[sig]);
    process.kill(process.pid, signal);
    // Should the signal not end this process, end it as a shell would.
    setTimeout(() => process.exit(128 + (os.constants.signals[signal] || 0)), 500);
    return;
  }
  process.exit(code);
});
