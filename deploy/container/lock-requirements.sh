#!/usr/bin/env bash
# Regenerates the image's Python lock files from pyproject.toml, with every distribution's
# SHA-256 (pip-compile --generate-hashes, pip-tools pinned below). The Dockerfile installs only
# from these files, with `pip install --require-hashes`. Run it after changing a dependency in
# pyproject.toml ([project] dependencies, [build-system] requires or the [history] extra);
# tests/supply_chain/test_requirements_lock.py fails until then.
#
#   bash deploy/container/lock-requirements.sh          # all three, keeping the current pins
#   bash deploy/container/lock-requirements.sh --upgrade  # newest versions within the ranges
#
# The lock files (deploy/container/):
#   requirements-build.lock    the build backend: setuptools and wheel ([build-system] requires)
#   requirements.lock          the sidecar's runtime dependencies ([project] dependencies)
#   requirements-history.lock  the [history] extra, installed into the same environment by
#                              the history target
# Each is constrained to the pins of the ones before it, so that a package they share has one
# version.
#
# They are resolved on this machine: Linux x86_64 with CPython 3.11, like the image (Debian
# bookworm's python3). pip-tools is installed once into a cache directory:
# ${XDG_CACHE_HOME:-~/.cache}/volume-quota/pip-tools-<version>.
set -euo pipefail
cd "$(dirname "$0")/../.."

PIP_TOOLS_VERSION="7.6.2"
tools="${XDG_CACHE_HOME:-$HOME/.cache}/volume-quota/pip-tools-$PIP_TOOLS_VERSION"
if [[ ! -x "$tools/bin/pip-compile" ]] ||
    [[ "$("$tools/bin/pip-compile" --version 2>/dev/null)" != *"version $PIP_TOOLS_VERSION" ]]; then
    echo "installing pip-tools $PIP_TOOLS_VERSION into $tools" >&2
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/pip" install --quiet --disable-pip-version-check "pip-tools==$PIP_TOOLS_VERSION"
fi

out=deploy/container
inputs="$(mktemp -d)"
trap 'rm -rf "$inputs"' EXIT
python3 - "$inputs" <<'PYTHON'
import sys
import tomllib
from pathlib import Path

project = tomllib.loads(Path("pyproject.toml").read_text())
inputs = Path(sys.argv[1])
lists = {
    "build.in": project["build-system"]["requires"],
    "runtime.in": project["project"]["dependencies"],
    "history.in": project["project"]["optional-dependencies"]["history"],
}
for name, requirements in lists.items():
    (inputs / name).write_text("".join(f"{requirement}\n" for requirement in requirements))
PYTHON
# One environment gets them all: a package in two locks must have one version in both.
echo "-c $PWD/$out/requirements-build.lock" >>"$inputs/runtime.in"
printf -- '-c %s\n' "$PWD/$out/requirements-build.lock" "$PWD/$out/requirements.lock" \
    >>"$inputs/history.in"

compile() {
    local input="$1" output="$2"
    shift 2
    # CUSTOM_COMPILE_COMMAND: the header of each lock names this script, not pip-compile.
    # PyPI only: a machine's own pip settings (find-links, index) stay out of the locks.
    env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \
        CUSTOM_COMPILE_COMMAND="bash deploy/container/lock-requirements.sh" \
        "$tools/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
        --no-emit-index-url --no-emit-find-links --resolver=backtracking "$@" \
        --output-file "$output" "$input"
    # pip-compile names the temporary input in "via" comments: name pyproject.toml instead.
    sed -i "s|$inputs/[a-z]*\.in|pyproject.toml|g; s|-c $PWD/|-c |g" "$output"
}
compile "$inputs/build.in" "$out/requirements-build.lock" "${@}"
compile "$inputs/runtime.in" "$out/requirements.lock" "${@}"
compile "$inputs/history.in" "$out/requirements-history.lock" "${@}"
echo "wrote $out/requirements-build.lock, $out/requirements.lock, $out/requirements-history.lock" >&2
