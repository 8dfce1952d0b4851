# Run `make help` for the targets. Every target installs what it needs.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# `npm install` keeps the locked versions. Not `npm ci`: the registry this project's machines reach
# serves only their own platform's optional binaries (rollup's), so the lock cannot list the
# others and npm ci's completeness check always fails (docs/decisions/0001-foundation.md).
node_modules/.installed: package.json package-lock.json $(wildcard patches/*.patch libs/*/package.json services/*/package.json tools/*/package.json)
	npm install --no-audit --no-fund
	@touch $@

.PHONY: help install build lint format run test fault bench services tools clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

install: node_modules/.installed ## install dependencies from the lock file

build: install ## compile every package (tsc -b)
	npx tsc -b

# After build: Biome infers the types of other packages (noFloatingPromises) from their dist/*.d.ts.
# Both checks run and either fails the target, so one run shows everything to fix.
lint: build ## Biome (format; no any, no non-null !, import type, no floating promises) and the import rules (scripts/check-boundaries.mjs)
	status=0; \
	  npx biome ci . || status=1; \
	  node scripts/check-boundaries.mjs --self-test && node scripts/check-boundaries.mjs || status=1; \
	  exit $$status

format: install ## rewrite files to the Biome format and apply its safe lint fixes
	npx biome check --write .

services: ## make sure local Postgres and NATS (JetStream) are running
	@bash scripts/ensure-services.sh

# kubectl renders the Kubernetes manifests (kustomize) that test/arch/deploy.test.ts validates.
# Debian's kubernetes-client has it; a kubectl already installed (any version since 1.20) is used as is.
# Chromium (Debian's) is the headless browser test/e2e/docs-page.test.ts opens /docs in.
# PgBouncer (Debian's) fronts the stack in test/fault/pgbouncer.test.ts; promtool (in Debian's
# prometheus package; only the tool is used, no server is started) checks and unit-tests the alert rules.
# pg_auto_failover (Debian's postgresql-<major>-auto-failover, for the local server's major version;
# it brings pg_autoctl, in /usr/bin) runs the Postgres failover pair of test/fault/failover.test.ts.
tools: ## install the system tools the tests use (kubectl, chromium, pgbouncer, promtool, pg_autoctl) when missing
	@command -v pgbouncer >/dev/null 2>&1 || [ -n "$$PGBOUNCER" ] || { \
	  echo "installing pgbouncer (Debian package pgbouncer)" >&2; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null; fi; }
	@command -v promtool >/dev/null 2>&1 || [ -n "$$PROMTOOL" ] || { \
	  echo "installing promtool (Debian package prometheus)" >&2; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; fi; }
	@command -v pg_autoctl >/dev/null 2>&1 || [ -n "$$PG_AUTOCTL" ] || { \
	  pkg="postgresql-$$(pg_config --version 2>/dev/null | sed -E 's/^[^0-9]*([0-9]+).*/\1/' | grep -E '^[0-9]+$$' || echo 15)-auto-failover"; \
	  echo "installing pg_autoctl (Debian package $$pkg)" >&2; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$$pkg" >/dev/null; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$$pkg" >/dev/null; fi; }
	@command -v kubectl >/dev/null 2>&1 || { \
	  echo "installing kubectl (Debian package kubernetes-client)" >&2; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq kubernetes-client >/dev/null; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq kubernetes-client >/dev/null; fi; }
	@command -v chromium >/dev/null 2>&1 || [ -n "$$CHROMIUM_PATH" ] || { \
	  echo "installing chromium (Debian package chromium)" >&2; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; fi; }

run: build services ## run the whole stack (gateway on PORT, default 8080)
	node scripts/start.mjs

test: build lint services tools ## lint, type-check, then the whole suite and the fault suite against real Postgres and NATS
	npx tsc -p tsconfig.test.json
	@rm -f .vitest-results.json
	@rm -f .vitest-fault-results.json
	npx vitest run --reporter=default --reporter=json --outputFile.json=.vitest-results.json; \
	  status=$$?; \
	  npx vitest run --config vitest.fault.config.ts --reporter=default --reporter=json --outputFile.json=.vitest-fault-results.json || status=1; \
	  node scripts/test-summary.mjs .vitest-results.json .vitest-fault-results.json || status=1; exit $$status

fault: build services ## only the fault suite (crashes, restarts, mixed load, fuzz); prints its figures
	npx vitest run --config vitest.fault.config.ts

# wrk (Debian's) is the bench's load generator: in C, it leaves the 2 cores to the system under
# test (autocannon, the fallback, takes one of them and halves every figure).
bench: build services ## print throughput and latency figures (asserts nothing)
	@command -v wrk >/dev/null 2>&1 || { \
	  echo "installing wrk (Debian package wrk)" >&2; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq wrk >/dev/null; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq wrk >/dev/null; fi; }
	node test/bench/run.mjs

clean: ## remove build output
	rm -rf libs/*/dist services/*/dist tools/*/dist .vitest-results.json
