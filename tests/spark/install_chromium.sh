#!/usr/bin/env bash
# Headless Chromium from Debian's packages, for the report's browser check
# (tests/spark/test_report_browser.py). Idempotent: does nothing when it is installed.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install_chromium.sh: chromium is missing and this is not root: apt-get install -y chromium" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
chromium --version
