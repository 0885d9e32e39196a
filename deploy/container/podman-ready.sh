# Sourced by the image builds (deploy/container/build.sh, tests/systemd/build-systemd-image.sh):
# installs podman, runc, debootstrap and Debian's archive keys when missing (apt-get) and stops with podman's own words
# when it cannot open its storage or runtime here. Needs `say` and the array PODMAN.
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
# The keys debootstrap checks the Debian archive's signature with (build.sh passes --keyring).
[[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] || missing+=(debian-archive-keyring)
if ((${#missing[@]})); then
    say "installing ${missing[*]} (apt-get)"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi
if ! "${PODMAN[@]}" info >/dev/null 2>&1; then
    "${PODMAN[@]}" info >&2 || true
    say "podman cannot open its storage or runtime here (see above); nothing was built"
    exit 1
fi
