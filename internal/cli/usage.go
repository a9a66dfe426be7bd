package cli

// Usage is the list of commands that "mcpepoch help" prints.
const Usage = `usage: mcpepoch <command> [flags]

  init [flags]              wire this project: mcpepoch.toml, build hook, dev task, client configs
  dev [flags]               watch the sources, build, record, restart: the whole loop in one terminal
  doctor                    one line per problem with the wiring, each with its fix
  record [flags]            post-build hook: hash the build, write .mcpepoch/manifest.toml,
                            signal every host of this project
  host [flags] -- CMD...    stdio MCP gateway: run CMD under execution epochs
  status [--json]           what every host of this project is running
  restart                   restart every host's server under a new epoch now
  approve [flags]           review what a host runs and grant tools to an agent run
  enroll --web|--ssh KEY    enroll an authenticator that proves a person (presence)
  authenticators            list the enrolled authenticators
  grants [--live] [--json]  list grants, live and revoked
  policy [show|accept]      the project's policy floor beside mcpepoch.toml; accept a weakening as a person
  revoke GRANT-ID           end a grant (a unique prefix of its id is enough)
  audit verify|show         check the audit log's hash chain, or show its timeline
  identity [-- CMD...]      explain every input hashed into a launch command's identity
  template NAME             print a Taskfile, Makefile or client-config snippet
  version [--json]          print the version

Run 'mcpepoch <command> -h' for a command's flags.
`
