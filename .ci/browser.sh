#!/usr/bin/env bash
# Debian's Chromium for the playground's browser tests (tests/playground). Idempotent: does nothing when
# /usr/bin/chromium is already there. Installs only as root; otherwise it says so and succeeds, and the browser
# tests skip (a developer without root installs `chromium` once by hand, or points COUCHGUARD_CHROMIUM elsewhere).
set -euo pipefail
say() { echo "browser: $*" >&2; }

if [ -x "${COUCHGUARD_CHROMIUM:-/usr/bin/chromium}" ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  say "not root: not installing chromium (the browser tests will skip)"
  exit 0
fi
say "installing the chromium package"
apt-get update -qq >&2
# fonts-dejavu-core: the screenshots need readable glyphs, and no font is fetched at run time
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
