#!/usr/bin/env bash
# Installs the Debian 12 packages prof needs to build, test and run (as root,
# or with sudo when not root). Safe to run again.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config python3 gfortran clang
  mpich libmpich-dev
  nlohmann-json3-dev libcli11-dev
  libotf2-trace-dev otf2-tools
  libdw-dev libelf-dev libnuma-dev libhwloc-dev libjemalloc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  qt6-base-dev qt6-svg-dev fonts-dejavu-core
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
