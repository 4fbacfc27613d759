#!/usr/bin/env bash
# Machine setup for the container tests on a fresh Debian 12 CI machine, as root (about 10 min on
# 2 cores, most of it compiling llama.cpp):
#   1. podman with runc (CONTAINERS_CONF=.ci/containers.conf holds what these VMs need);
#   2. a Debian bookworm base image made with mmdebstrap from the archive, because no registry is
#      reachable here, plus a thin layer with this machine's extra CA certificates (outbound TLS goes
#      through a proxy with its own CA, so pip inside a build needs them): localhost/semif-debian:bookworm;
#   3. llama.cpp b10970 with llama-server (container/build_libllama.sh; the build nearest the DLC's v0.4.1 = b10964), which the DLC replica image
#      carries, the native binding tests load and `semif bench peer` runs.
# The images themselves (replica, adapter) are built by the tests from the checked-out sources.
# Nothing here is specific to the project's Dockerfiles: on a machine with a registry, skip steps 1-2.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/.ci/containers.conf}"
export DEBIAN_FRONTEND=noninteractive
BASE_IMAGE="${SEMIF_BASE_IMAGE:-localhost/semif-debian:bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

stage() { echo "container setup: $1 in $((SECONDS - stage_start)) s" >&2; stage_start=$SECONDS; }
stage_start=$SECONDS

packages=(podman runc conmon containernetworking-plugins iptables uidmap fuse-overlayfs slirp4netns catatonit mmdebstrap cmake g++ make)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
stage "packages (${missing[*]:-none missing})"

if ! podman image exists "$BASE_IMAGE"; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  mmdebstrap --quiet --variant=minbase --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' bookworm "$work/rootfs.tar" "$MIRROR"
  podman import --change 'CMD ["/bin/bash"]' "$work/rootfs.tar" "${BASE_IMAGE}-root" >/dev/null
  mkdir -p "$work/ca"
  cp /usr/local/share/ca-certificates/*.crt "$work/ca/" 2>/dev/null || true
  cat > "$work/Containerfile" <<CONTAINERFILE
FROM ${BASE_IMAGE}-root
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
CONTAINERFILE
  podman build -q -t "$BASE_IMAGE" "$work" >/dev/null
fi
stage "base image $BASE_IMAGE"

if [ ! -x .semif/pip-venv/bin/pip ]; then python3 -m venv .semif/pip-venv; fi
PIP=.semif/pip-venv/bin/pip bash container/build_libllama.sh >/tmp/semif-build-libllama.log 2>&1 \
  || { tail -40 /tmp/semif-build-libllama.log >&2; exit 1; }
stage "llama.cpp b10970 with llama-server"
