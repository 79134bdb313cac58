#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian 12 packages the workbench needs (only what is missing).
set -euo pipefail
pkgs=(linux-source-6.12 build-essential bc flex bison libelf-dev libssl-dev
      libdw-dev libtraceevent-dev dwarves cpio xz-utils file python3 ccache git
      qemu-system-x86 busybox-static sparse clang lld llvm gcc-i686-linux-gnu
      gcc-aarch64-linux-gnu python3-ply python3-dev)
missing=()
for p in "${pkgs[@]}" "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} != 0 ]; then
	echo "deps: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "deps: ok (linux-source-6.12 $(dpkg-query -W -f='${Version}' linux-source-6.12))"
