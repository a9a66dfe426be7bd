# mcpepoch.mk: the mcpepoch build hook for make.
#
# Include it from your Makefile and end the build recipe with
# $(MCPEPOCH_RECORD) on the same line as the build command, so that the hook
# runs whether the build succeeded or not and the build's exit status is kept:
#
#   include mcpepoch.mk
#
#   .PHONY: build
#   build:
#   	npx tsc; $(MCPEPOCH_RECORD)
#
# which make echoes as
#
#   npx tsc; eval "$MCPEPOCH_HOOK"
#
# where the exported MCPEPOCH_HOOK holds the hook itself,
#
#   rc=$?; mcpepoch record --exit-code $rc || true; exit $rc
#
# (eval runs it in the recipe's shell, so $? is still the build's status),
# and mcpepoch record then prints one line about the build and one per host.
#
# The build command and the hook must share one recipe line (one shell), and
# that shell must not stop at the first failure: under .POSIX, or with -e in
# .SHELLFLAGS, write the line as
#
#   rc=0; npx tsc || rc=$$?; $(MCPEPOCH) record --exit-code $$rc $(MCPEPOCH_FLAGS) || true; exit $$rc
#
# mcpepoch record writes .mcpepoch/manifest.toml and tells every running
# `mcpepoch host` of the project that a build finished. A failing hook never
# fails the build.
#
# Variables:
#   MCPEPOCH        the mcpepoch command (default: $MCPEPOCH, else mcpepoch)
#   MCPEPOCH_FLAGS  extra flags for mcpepoch record, such as --require-host

MCPEPOCH ?= mcpepoch
MCPEPOCH_FLAGS ?=
export MCPEPOCH_HOOK = rc=$$?; $(MCPEPOCH) record --exit-code $$rc $(MCPEPOCH_FLAGS) || true; exit $$rc
MCPEPOCH_RECORD = eval "$$MCPEPOCH_HOOK"
