#!/usr/bin/env bash
# Installs libfaketime (Debian's packages faketime + libfaketime), idempotently, for the test
# that runs one broker's JVM with its wall clock ahead (tests/real_broker/test_broker_clock_ahead.py).
#
# Only the library is used: LD_PRELOAD=<path> FAKETIME="+40s" FAKETIME_DONT_FAKE_MONOTONIC=1 in
# one broker's environment shifts that JVM's wall clock and leaves its monotonic clock alone, as
# on a host whose NTP is off. The packages come from apt-get, which keeps its own .deb cache;
# a warm machine finds the library and does nothing.
#
# Usage: bash tests/real_broker/install-faketime.sh    prints the library's path on the last line
# The test finds the library at $VOLUME_QUOTA_LIBFAKETIME, default the path printed here.
set -euo pipefail

FAKETIME_VERSION_PREFIX="0.9.10"   # Debian 12 (bookworm)
library="/usr/lib/$(uname -m)-linux-gnu/faketime/libfaketime.so.1"

installed_version() {
    dpkg-query -W -f='${Status} ${Version}' libfaketime 2>/dev/null |
        awk '$3 == "installed" { print $4 }'
}

version="$(installed_version || true)"
if [[ -f "$library" && "$version" == "$FAKETIME_VERSION_PREFIX"* ]]; then
    echo "libfaketime $version already installed" >&2
else
    command -v apt-get >/dev/null ||
        { echo "install-faketime.sh: needs apt-get (Debian's packages faketime, libfaketime)" >&2; exit 1; }
    echo "installing libfaketime (Debian packages faketime, libfaketime, apt-get)" >&2
    start=$SECONDS
    # Another apt-get may hold the dpkg lock (a CI step, a second install script): wait for it.
    apt_options=(-o DPkg::Lock::Timeout=600)
    apt-get "${apt_options[@]}" update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get "${apt_options[@]}" install -y -qq \
        --no-install-recommends faketime libfaketime >&2
    version="$(installed_version)"
    [[ -f "$library" ]] || { echo "install-faketime.sh: $library missing after install" >&2; exit 1; }
    echo "libfaketime $version installed in $((SECONDS - start)) s" >&2
fi
echo "$library"
