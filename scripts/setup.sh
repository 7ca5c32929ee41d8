#!/usr/bin/env bash
# The README's install command: pnpm 12.4.2 and every dependency, native addons built against the
# local Node headers (better-sqlite3 cannot download a prebuilt binary or Node headers offline).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(pnpm --version 2>/dev/null || true)" != "12.4.2" ]; then
  npm install --global pnpm@12.4.2
fi
export npm_config_nodedir="${npm_config_nodedir:-$(node -p 'require("path").resolve(process.execPath, "../..")')}"
pnpm install --frozen-lockfile
