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

# For `deb` and `test --suite debian`: debootstrap makes the trixie
# chroots the packages are built and tried in; lintian, dpkg-deb and
# readelf (binutils) check them; patch tries the quilt series.
apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
  debootstrap lintian dpkg-dev binutils patch

# DNS servers and their load generator for `bench --only dns`. The bench
# runs them in network namespaces of its own, on the libuv it installs:
# the system's named or kresd must not run. Without systemd, installing
# bind9 would start named through invoke-rc.d (listening on port 53 of
# the host): a policy-rc.d that refuses every start is put in place for
# this install when the machine has none. On a machine with systemd, the
# services that this install brings in are disabled and stopped; an
# install that was there before is left as it was.
dns_pkgs="bind9 knot-resolver dnsperf"
fresh=""
for pkg in bind9 knot-resolver; do
  dpkg -s "$pkg" >/dev/null 2>&1 || fresh="$fresh $pkg"
done
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# install-debian.sh: no service starts\nexit 101\n' \
    > "$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
# shellcheck disable=SC2086
apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
  $dns_pkgs
if [ -d /run/systemd/system ]; then
  case "$fresh" in *bind9*) systemctl disable --now named.service || true ;;
  esac
  case "$fresh" in *knot-resolver*)
    systemctl disable --now 'kresd@*.service' kresd.target || true ;;
  esac
fi
