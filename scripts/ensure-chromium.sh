#!/usr/bin/env bash
# Ensures Debian's Chromium, the browser the UI end-to-end tests drive through playwright-core
# (test/support/browser.ts). Playwright's own browser download is not used: machines reach package
# registries only. Idempotent: exits 0 when the browser is there (KMIRROR_CHROMIUM, else
# /usr/bin/chromium); installs it when run as root; otherwise prints the command and exits 1.
set -euo pipefail

chromium="${KMIRROR_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$chromium" ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-chromium: $chromium is missing; install it with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium" >&2
  exit 1
fi
echo "ensure-chromium: installing Debian's chromium…" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
if [ ! -x "$chromium" ]; then
  echo "ensure-chromium: chromium installed but $chromium is missing (set KMIRROR_CHROMIUM to its path)" >&2
  exit 1
fi
