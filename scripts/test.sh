#!/usr/bin/env bash
# The whole test suite: types, lint, unit tests (vitest) and end-to-end tests (Playwright in
# Debian's Chromium), on PGlite and on a real PostgreSQL that this script starts on a
# loopback port and stops it afterwards. Installs Debian's chromium, postgresql, v2ray (a real
# VPN server and client for the data-plane tests), trojan (a second, independent Trojan
# client) and openssl when missing.
#
# vitest runs as two processes side by side (vitest.config.ts, VITEST_PART), then Playwright.
# vitest beside Playwright was tried: the fuzz shards, CPU-bound, took six times as long
# beside the browsers and the apps, and the whole took longer (README, Tests).
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
# Scratch files go to memory where /dev/shm is a tmpfs with room: every vitest file copies a
# 40 MB PGlite template, and the apps, agents, cores and browsers the tests start write their
# own folders. On disk the kernel's work for those writes (ext4, writeback) was a tenth of the
# suite's CPU, and vitest files that open databases took twice as long (README, Tests).
# Everything that asks os.tmpdir() (Node) or TMPDIR (Chromium, mktemp) lands there; the
# folder goes when the suite ends. ROUTEBOARD_TEST_TMP=disk keeps the system's TMPDIR.
scratch=""
if [ "${ROUTEBOARD_TEST_TMP:-}" != disk ] && [ -d /dev/shm ] && [ -w /dev/shm ] \
  && [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -gt $((4 * 1024 * 1024)) ]; then
  scratch=$(mktemp -d /dev/shm/routeboard-test.XXXXXX)
  # Traversable: PostgreSQL (scripts/pg.sh) runs as its own user and keeps its folder here.
  chmod 755 "$scratch"
  export TMPDIR=$scratch
  echo "== scratch files in $scratch (memory)"
fi
cleanup() {
  pg_stop
  if [ -n "$scratch" ]; then rm -rf "$scratch"; fi
}
trap cleanup EXIT

# Prints a step's log when it failed; the step's exit code is returned.
report_step() {
  local name=$1 pid=$2 log=$3 rc=0
  wait "$pid" || rc=$?
  if [ "$rc" != 0 ]; then echo "== $name failed (exit $rc):"; cat "$log"; fi
  return "$rc"
}

# tsc and ESLint side by side (one core each); the build after them, as tsc reads the
# next-env.d.ts that the build rewrites.
echo "== type check and lint"
npx tsc --noEmit -p . >.tmp/tsc.log 2>&1 &
tsc_pid=$!
npx eslint . --max-warnings=0 >.tmp/eslint.log 2>&1 &
lint_pid=$!
checks_rc=0
report_step "type check" "$tsc_pid" .tmp/tsc.log || checks_rc=1
report_step "lint" "$lint_pid" .tmp/eslint.log || checks_rc=1
[ "$checks_rc" = 0 ] || exit 1

# Built before the tests: Playwright runs the built app, and a few unit tests start it too
# (the start banner, backups).
echo "== build"
npm run build >.tmp/build.log 2>&1 || { cat .tmp/build.log; exit 1; }

echo "== starting PostgreSQL"
pg_start "${TEST_PG_PORT:-55432}"
echo "PostgreSQL on $PG_URL"

echo "== unit and integration tests (vitest: two processes side by side, vitest.config.ts; each shown when it ends)"
TEST_DATABASE_URL="$PG_URL" VITEST_PART=1 npx vitest run --reporter=default --reporter=json --outputFile=.tmp/vitest-1.json >.tmp/vitest-1.log 2>&1 &
part1_pid=$!
TEST_DATABASE_URL="$PG_URL" VITEST_PART=2 npx vitest run --reporter=default --reporter=json --outputFile=.tmp/vitest-2.json >.tmp/vitest-2.log 2>&1 &
part2_pid=$!
vitest_rc=0
wait "$part2_pid" || vitest_rc=$?
cat .tmp/vitest-2.log
wait "$part1_pid" || vitest_rc=$?
cat .tmp/vitest-1.log

echo "== end-to-end tests (Playwright, Chromium)"
rm -rf .tmp/e2e-data .tmp/e2e-data-pg
# The two apps' PGlite folders with the rest of the scratch files.
if [ -n "$scratch" ]; then export E2E_DATA_DIR="$scratch/e2e-data"; fi
E2E_DATABASE_URL=$(pg_createdb rb_e2e)
export E2E_DATABASE_URL
pw_rc=0
PLAYWRIGHT_JSON_OUTPUT_NAME=.tmp/playwright.json npx playwright test --reporter=list,json || pw_rc=$?

node scripts/test-summary.mjs .tmp/playwright.json .tmp/vitest-1.json .tmp/vitest-2.json
[ "$vitest_rc" = 0 ] && [ "$pw_rc" = 0 ]
