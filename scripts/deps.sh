#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian 12 packages the workbench needs (only what is missing).
# Every command a stage runs comes from a package named here: 'make fresh'
# (and CI) run the stages in a minimal Debian root, where a package left out
# of this list fails the stage that needs it.
# usage: deps.sh [extra package...]
set -euo pipefail
# The series is against this version of Debian's kernel source.
src=6.12.117-1~deb12u1
pkgs=(
	# the kernel tree and its builds
	linux-source-6.12=$src make build-essential bc flex bison perl libelf-dev libssl-dev
	dwarves cpio xz-utils file git ccache
	# the gate: sparse, clang, the i386 and arm64 cross compilers
	sparse clang lld llvm gcc-i686-linux-gnu gcc-aarch64-linux-gnu
	# the KVM selftests ('make headers' copies with rsync)
	rsync
	# the 32-bit guest's /init: a static i386 program needs the i386 libc
	libc6-dev-i386-cross
	# the arm64 KVM host VM and its static selftests
	qemu-system-arm libc6-dev-arm64-cross
	# perf: its libraries, and python for its scripts and the host checks
	pkgconf libdw-dev libtraceevent-dev python3 python3-dev python3-ply
	# gdb, for the core of a perf that crashed in the test VM (check_demo.py)
	gdb
	# the test VM and the guests inside it
	qemu-system-x86 busybox-static
	# the VMX VM: Bochs (its terminal display, as the one display that
	# pulls in no GUI toolkit; the VM runs headless on its VNC display),
	# its BIOSes, and its boot CD (grub-mkrescue)
	bochs bochs-term bochsbios vgabios grub-common grub-pc-bin xorriso mtools
	# perf's flame graph template (package.json) from the npm registry
	npm ca-certificates
)
missing=()
for p in "${pkgs[@]}" "$@"; do
	want=${p#*=}
	[ "$want" = "$p" ] && want=
	st=$(dpkg-query -W -f='${Status} ${Version}' "${p%%=*}" 2>/dev/null || true)
	case "$st" in "install ok installed ${want:-}"*) continue ;; esac
	# A machine with another vendor's Node.js (e.g. NodeSource's, which
	# conflicts with Debian's npm) already has the npm command.
	[ "$p" = npm ] && command -v npm >/dev/null && continue
	missing+=("$p")
done
# The arm64 VMs' busybox comes from Debian's arm64 archive
# (scripts/mkinitramfs.sh --arm64 downloads it).
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	dpkg --add-architecture arm64
	need_update=1
fi
if [ ${#missing[@]} != 0 ] || [ -n "${need_update:-}" ]; then
	apt-get update -qq
	if [ ${#missing[@]} != 0 ]; then
		echo "deps: installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
fi
have=$(dpkg-query -W -f='${Version}' linux-source-6.12)
[ "$have" = "$src" ] || { echo "deps: linux-source-6.12 is $have, the series needs $src" >&2; exit 1; }
echo "deps: ok (linux-source-6.12 $(dpkg-query -W -f='${Version}' linux-source-6.12))"
