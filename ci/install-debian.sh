#!/usr/bin/env bash
# Installs the build and test prerequisites on Debian or Ubuntu, and a
# deb-src entry for Debian trixie so `apt-get source libuv1` can provide
# the pinned libuv tree offline from GitHub. Run it as root, or as a user
# who has sudo: it then runs itself again through sudo.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    exec sudo -- bash "$0" "$@"
  fi
  echo "install-debian.sh: needs root, and there is no sudo here:" \
       "run it as root (su -c 'bash $0')" >&2
  exit 1
fi

src_list=/etc/apt/sources.list.d/uvpatch-trixie-src.sources
if [ ! -f "$src_list" ]; then
  # Reuse the mirror this machine already uses for Debian, so no host
  # name is written here.
  uri=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk '/^URIs:/ && $2 ~ /debian\/?$/ && $2 !~ /security/ {print $2; exit}' "$f")
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
  fi
  if [ -n "$uri" ]; then
    printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$uri" > "$src_list"
  else
    echo "install-debian.sh: no Debian entry found to copy; the Debian" \
         "source package will not be available" >&2
  fi
fi

apt-get -o DPkg::Lock::Timeout=600 update -q
apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
  ca-certificates git cmake ninja-build gcc libc6-dev python3 ccache \
  pkg-config xz-utils iproute2 util-linux gcc-mingw-w64-x86-64 wine wine64 valgrind
