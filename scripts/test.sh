#!/usr/bin/env bash
# The whole test suite: types, lint, unit tests (vitest) and end-to-end tests (Playwright in
# Debian's Chromium), on PGlite and on a real PostgreSQL that this script starts on a
# loopback port and stops it afterwards. Installs Debian's chromium, postgresql, v2ray (a real
# VPN server and client for the data-plane tests), trojan (a second, independent Trojan
# client) and openssl when missing. The steps run one after another: run side by side (vitest
# beside the build and the e2e tests) the whole took longer (1,112 s against 1,062 s) and
# database tests timed out under the contention.
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
cleanup() { pg_stop; }
trap cleanup EXIT

echo "== type check"
npx tsc --noEmit -p .
echo "== lint"
npx eslint . --max-warnings=0

# Built before the unit tests: a few of them start the real app (the start banner, backups).
echo "== build"
npm run build >.tmp/build.log 2>&1 || { cat .tmp/build.log; exit 1; }

echo "== starting PostgreSQL"
pg_start "${TEST_PG_PORT:-55432}"
echo "PostgreSQL on $PG_URL"

echo "== unit and integration tests (vitest)"
TEST_DATABASE_URL="$PG_URL" npx vitest run --reporter=default --reporter=json --outputFile=.tmp/vitest.json

echo "== end-to-end tests (Playwright, Chromium)"
rm -rf .tmp/e2e-data .tmp/e2e-data-pg
E2E_DATABASE_URL=$(pg_createdb rb_e2e)
export E2E_DATABASE_URL
pw_rc=0
PLAYWRIGHT_JSON_OUTPUT_NAME=.tmp/playwright.json npx playwright test --reporter=list,json || pw_rc=$?

node scripts/test-summary.mjs .tmp/vitest.json .tmp/playwright.json
exit $pw_rc
