#!/usr/bin/env bash
# The whole test suite: types, lint, unit tests (vitest) and end-to-end tests (Playwright in
# Debian's Chromium), on PGlite and on a real PostgreSQL that this script starts on a
# loopback port and stops it afterwards. Installs Debian's chromium, postgresql, v2ray (a real
# VPN server and client for the data-plane tests), trojan (a second, independent Trojan
# client) and openssl when missing.
set -euo pipefail
# Nothing in the suite may talk to the outside world (Next.js would send build telemetry).
export NEXT_TELEMETRY_DISABLED=1
cd "$(dirname "$0")/.."
source scripts/pg.sh

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
pg_bin_dir >/dev/null || need_apt+=(postgresql)
command -v v2ray >/dev/null && command -v v2ctl >/dev/null || need_apt+=(v2ray)
command -v openssl >/dev/null || need_apt+=(openssl)
command -v trojan >/dev/null || need_apt+=(trojan)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing Debian packages: ${need_apt[*]}"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null \
      || { echo "Could not install ${need_apt[*]} with apt-get: install them by hand (apt-get install ${need_apt[*]}) and run again" >&2; exit 1; }
  else
    echo "The tests need Debian's ${need_apt[*]}: run 'sudo apt-get install ${need_apt[*]}' and try again" >&2
    exit 1
  fi
fi
[ -d node_modules ] || { echo "== npm ci"; npm ci; }

mkdir -p .tmp
# Steps that do not depend on each other run side by side: the machine has few cores and each
# step leaves some of them idle (tsc and ESLint use one; the end-to-end tests wait on
# browsers, agents and timers), so the whole run is shorter than the steps one after another.
# Each step's output goes to .tmp/<step>.log and is printed when the step ends.
declare -A step_pid step_start
failed_steps=()
start_step() {
  local name=$1
  shift
  step_start[$name]=$SECONDS
  # exec: $! is the step's own process, so a cleanup signal reaches it and not only a subshell.
  ( exec "$@" ) >".tmp/$name.log" 2>&1 &
  step_pid[$name]=$!
}
finish_step() {
  local name=$1 rc=0
  wait "${step_pid[$name]}" || rc=$?
  unset "step_pid[$name]"
  echo "== $name: $((SECONDS - step_start[$name])) s, exit $rc"
  cat ".tmp/$name.log"
  [ $rc -eq 0 ] || failed_steps+=("$name")
}
cleanup() {
  local pid
  for pid in "${step_pid[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pg_stop
}
trap cleanup EXIT

echo "== type check and lint"
start_step typecheck node_modules/.bin/tsc --noEmit -p .
start_step lint node_modules/.bin/eslint . --max-warnings=0
finish_step typecheck
finish_step lint
if [ ${#failed_steps[@]} -gt 0 ]; then echo "failed: ${failed_steps[*]}" >&2; exit 1; fi

echo "== starting PostgreSQL"
pg_start "${TEST_PG_PORT:-55432}"
echo "PostgreSQL on $PG_URL"
rm -rf .tmp/e2e-data .tmp/e2e-data-pg .tmp/vitest.json .tmp/playwright.json
E2E_DATABASE_URL=$(pg_createdb rb_e2e)
export E2E_DATABASE_URL

echo "== unit and integration tests (vitest), and the build then the end-to-end tests (Playwright, Chromium), side by side"
start_step vitest env TEST_DATABASE_URL="$PG_URL" node_modules/.bin/vitest run --reporter=default --reporter=json --outputFile=.tmp/vitest.json
start_step e2e bash -c 'npm run build >.tmp/build.log 2>&1 || { echo "== build failed"; cat .tmp/build.log; exit 1; }
  echo "== build done"
  PLAYWRIGHT_JSON_OUTPUT_NAME=.tmp/playwright.json exec node_modules/.bin/playwright test --reporter=list,json'
finish_step vitest
finish_step e2e

summary_rc=0
node scripts/test-summary.mjs .tmp/vitest.json .tmp/playwright.json || summary_rc=$?
if [ ${#failed_steps[@]} -gt 0 ]; then echo "failed: ${failed_steps[*]}" >&2; exit 1; fi
exit $summary_rc
