#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Pack an initramfs.
#   mkinitramfs.sh <out.cpio.gz>: the test VM (L1 host): static busybox, perf,
#	the KVM selftests, the workbench's guest programs, the in-VM scenarios,
#	with the shared libraries they need;
#   mkinitramfs.sh <out.cpio.gz> --l2 <kernel> <l2.cpio.gz> [<kernel> <l2.cpio.gz>]:
#	the same, plus QEMU and a Linux guest (L2: the kernel build named
#	<kernel>, with its System.map) for the demo, and a 32-bit one (in
#	/demo/i386);
#   mkinitramfs.sh <out.cpio.gz> --guest: the demo's L2 guest (busybox, its
#	workload with /bin/l2-work, also kept as build/l2-work for the host's
#	symbols, and its own perf, build-perf.sh --guest x86_64);
#   mkinitramfs.sh <out.cpio.gz> --guest-i386: the demo's 32-bit L2 guest
#	(its workload as one static i386 program, /bin/l2-work built for i386,
#	also kept as build/l2-work-i386, and its own perf, build-perf.sh
#	--guest i386);
#   mkinitramfs.sh <out.cpio.gz> --arm64 [--l2 <kernel> <l2.cpio.gz>]: the
#	arm64 test VM (an arm64 KVM host): Debian's static busybox for arm64,
#	the aarch64/ KVM selftests, guest_spin, guest_hostile and guest_bench
#	(build-selftests.sh arm64), and a static perf (build-perf.sh --guest
#	arm64), with the same /init; with --l2, also Debian's QEMU for arm64
#	with the shared libraries it needs, an arm64 Linux guest in /demo
#	and Debian's own arm64 cloud kernel with the same initramfs in
#	/demo/debian;
#   mkinitramfs.sh <out.cpio.gz> --guest-arm64: the arm64 demo's L2 guest
#	(busybox, the same workload, /bin/l2-work built for arm64, also kept
#	as build/l2-work-arm64, and its own perf).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
out=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
pack() { (cd "$root" && find . | sort | cpio -o -H newc --quiet --reproducible | gzip -1) > "$out"
	 echo "initramfs: $out ($(du -h "$out" | cut -f1))"; }

# arm64_busybox <file>: Debian's busybox-static for arm64, unpacked: it
# cannot be installed next to the machine's own (dpkg --add-architecture
# arm64 in deps.sh).
arm64_busybox() {
	local deb log
	mkdir -p "$top/build/debs"
	deb=$(find "$top/build/debs" -maxdepth 1 -name 'busybox-static_*_arm64.deb' | sort | tail -1)
	if [ -z "$deb" ]; then
		# As root, apt warns that _apt cannot write here: not an error.
		log=$(cd "$top/build/debs" && apt-get download -qq busybox-static:arm64 2>&1) ||
			{ printf '%s\n' "$log" >&2; echo "initramfs: apt-get download busybox-static:arm64 FAILED" >&2; exit 1; }
		printf '%s\n' "$log" | grep -v '^W: Download is performed unsandboxed' >&2 || true
		deb=$(find "$top/build/debs" -maxdepth 1 -name 'busybox-static_*_arm64.deb' | sort | tail -1)
	fi
	dpkg-deb --fsys-tarfile "$deb" | tar -xO ./bin/busybox > "$1"
	chmod +x "$1"
}

# arm64_debs <name> <package>: Debian's arm64 <package> and its dependencies,
# downloaded once into build/debs/<name>/ and unpacked into build/<name>/
# (QEMU's are about 100 packages).
arm64_debs() {
	local d=$top/build/debs/$1 x=$top/build/$1 f
	[ -e "$x/.done" ] && return
	# Into fresh directories, moved into place when complete: an
	# interrupted download or unpacking is not taken for a cache.
	rm -rf "$d" "$d.new" "$x" "$x.new"
	mkdir -p "$d.new" "$x.new"
	apt_download "$d.new" $(apt-cache depends --recurse --no-recommends \
		--no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances \
		"$2:arm64" | grep -E '^[a-z0-9].*:arm64$' | sort -u) ||
		{ echo "initramfs: apt-get download of $2:arm64 FAILED" >&2; exit 1; }
	for f in "$d.new"/*.deb; do dpkg-deb -x "$f" "$x.new"; done
	touch "$x.new/.done"
	mv "$d.new" "$d"
	mv "$x.new" "$x"
}

# arm64_program <root> <name> <program>: <program> (a path) from
# build/<name>/ (arm64_debs) in <root>, with its dynamic loader and only
# the shared libraries in the closure of its DT_NEEDED entries.
arm64_program() {
	local x=$top/build/$2 f so lib todo=()
	declare -A seen=()
	mkdir -p "$1/$(dirname "$3")" "$1/lib/aarch64-linux-gnu"
	cp "$x/$3" "$1/$3"
	# The loader itself, not its link in /lib, whose target may be absolute.
	cp "$x/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" "$1/lib/"
	todo=("$x/$3")
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		for so in $("${arch_user_cross}readelf" -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			[ -z "${seen[$so]:-}" ] || continue
			seen[$so]=1
			lib=$(find "$x/lib/aarch64-linux-gnu" "$x/usr/lib/aarch64-linux-gnu" -maxdepth 1 -name "$so" 2>/dev/null | head -1)
			[ -n "$lib" ] || { echo "initramfs: $so, which $3 needs, is in none of its packages" >&2; exit 1; }
			cp -L "$lib" "$1/lib/aarch64-linux-gnu/$so"
			todo+=("$(readlink -f "$lib")")
		done
	done
}

# apt_download <dir> <package>...: apt-get download into <dir>; once more
# after apt-get update if it fails (the archive drops superseded kernel
# packages, which stale package lists still name).
apt_download() {
	local d=$1 log
	shift
	log=$(cd "$d" && apt-get download -qq "$@" 2>&1) ||
		{ apt-get update -qq >/dev/null 2>&1; log=$(cd "$d" && apt-get download -qq "$@" 2>&1); } ||
		{ printf '%s\n' "$log" >&2; return 1; }
	printf '%s\n' "$log" | grep -v '^W: Download is performed unsandboxed' >&2 || true
}

# arm64_debian <dir> <initramfs>: Debian 12's own arm64 cloud kernel, unmodified (the
# kernel package linux-image-cloud-arm64:arm64 depends on, downloaded once
# into build/debs/debian-arm64/), as <dir>/Image, with a command line with
# KASLR on, which asks /init for the kernel's symbols (tests/demo/l2-init):
# the package's System.map is a placeholder, the real one is in its -dbg
# package.  Its initramfs is the arm64 guest's, <initramfs>, and a second
# archive with the package's virtio block and console drivers, modules in
# this kernel, in load order (virtio_ring, virtio, virtio_mmio, virtio_blk,
# virtio_console: their depends=; named 1- to 5-, in the order of /init's
# glob), for the disk /init writes the symbols and its own recording to,
# and the console that ends that recording; and Debian's perf for arm64
# (linux-perf, its libraries), for that recording.  The kernel is also kept as
# build/debian-arm64/Image, for the host's checks (the fidelity's model of
# where its interrupts are off is read from its code).
arm64_debian() {
	local d=$top/build/debs/debian-arm64 pkg deb
	pkg=$(apt-cache depends linux-image-cloud-arm64:arm64 |
		sed -n 's/^  Depends: \(linux-image-[^:]*\):arm64$/\1/p' | head -1 || true)
	[ -n "$pkg" ] || { echo "initramfs: no kernel package behind linux-image-cloud-arm64:arm64" >&2; exit 1; }
	deb=
	[ -d "$d" ] && deb=$(find "$d" -maxdepth 1 -name "${pkg}_*_arm64.deb" | sort | tail -1)
	if [ -z "$deb" ]; then
		rm -rf "$d" "$d.new"
		mkdir -p "$d.new"
		apt_download "$d.new" "$pkg:arm64" || true
		deb=$(find "$d.new" -maxdepth 1 -name "${pkg}_*_arm64.deb" | sort | tail -1)
		[ -n "$deb" ] || { echo "initramfs: apt-get download $pkg:arm64 FAILED" >&2; exit 1; }
		mv "$d.new" "$d"
		deb=$d/$(basename "$deb")
	fi
	local x=$1/x kd=./lib/modules/${pkg#linux-image-}/kernel/drivers m i=1
	mkdir -p "$x/lib/modules/wb"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$x" "./boot/vmlinuz-${pkg#linux-image-}" \
		"$kd/virtio/virtio_ring.ko" "$kd/virtio/virtio.ko" "$kd/virtio/virtio_mmio.ko" \
		"$kd/block/virtio_blk.ko" "$kd/char/virtio_console.ko"
	mv "$x/boot/vmlinuz-${pkg#linux-image-}" "$1/Image"
	mkdir -p "$top/build/debian-arm64"
	cp "$1/Image" "$top/build/debian-arm64/Image"
	for m in virtio/virtio_ring virtio/virtio virtio/virtio_mmio block/virtio_blk \
		char/virtio_console; do
		mv "$x/$kd/$m.ko" "$x/lib/modules/wb/$i-${m#*/}.ko"
		i=$((i + 1))
	done
	rm -rf "$x/boot" "${x:?}/lib/modules/${pkg#linux-image-}"
	# Debian's own perf for arm64 (linux-perf), for the guest to record
	# itself with (/init prefers /usr/bin/perf to the workbench's /bin/perf).
	arm64_debs debian-perf-arm64 linux-perf
	arm64_program "$x" debian-perf-arm64 usr/bin/perf
	{ cat "$2"
	  (cd "$x" && find . | sort | cpio -o -H newc --quiet --reproducible | gzip -1); } > "$1/initramfs.cpio.gz"
	rm -rf "$x"
	echo "$pkg $(dpkg-deb -f "$deb" Version)" > "$1/version"
	echo "console=ttyAMA0 panic=-1 quiet wb.kallsyms" > "$1/cmdline"
}

if [ "${2:-}" = --guest-arm64 ]; then
	mkdir -p "$root"/{bin,dev,proc,sys,tmp}
	arch_load arm64
	arm64_busybox "$root/bin/busybox"
	cp "$top/tests/demo/l2-init" "$root/init"
	"$arch_user_cc" -O2 -static -fno-omit-frame-pointer -Wall -Wextra -Werror \
		-o "$top/build/l2-work-arm64" "$top/tests/demo/l2-work.c"
	cp "$top/build/l2-work-arm64" "$root/bin/l2-work"
	"${arch_user_cross}strip" -o "$root/bin/perf" "$top/build/perf-arm64/perf"
	chmod +x "$root/init"
	pack
	exit 0
fi
if [ "${2:-}" = --guest ]; then
	mkdir -p "$root"/{bin,dev,proc,sys,tmp}
	cp /bin/busybox "$root/bin/busybox"
	cp "$top/tests/demo/l2-init" "$root/init"
	gcc -O2 -static -fno-omit-frame-pointer -Wall -Wextra -Werror \
		-o "$top/build/l2-work" "$top/tests/demo/l2-work.c"
	cp "$top/build/l2-work" "$root/bin/l2-work"
	strip -o "$root/bin/perf" "$top/build/perf-x86_64/perf"
	chmod +x "$root/init"
	pack
	exit 0
fi
if [ "${2:-}" = --guest-i386 ]; then
	mkdir -p "$root"/{bin,dev,proc,sys,tmp}
	arch_load i386
	"$arch_user_cc" -O2 -static -fno-omit-frame-pointer -Wall -Wextra -Werror \
		-o "$root/init" "$top/tests/demo/l2-init-i386.c"
	"$arch_user_cc" -O2 -static -fno-omit-frame-pointer -Wall -Wextra -Werror \
		-o "$top/build/l2-work-i386" "$top/tests/demo/l2-work.c"
	mkdir -p "$root/bin"
	cp "$top/build/l2-work-i386" "$root/bin/l2-work"
	"${arch_user_cross}strip" -o "$root/bin/perf" "$top/build/perf-i386/perf"
	pack
	exit 0
fi

if [ "${2:-}" = --arm64 ]; then
	mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,out,tests,selftests,wb}
	arch_load arm64
	arm64_busybox "$root/bin/busybox"
	cp "$top/tests/vm/init" "$root/init"
	cp "$top/tests/vm/selftests.sh" "$top/tests/vm/baseline.sh" "$top/tests/vm/hostile.sh" \
		"$top/tests/vm/bench.sh" "$top/tests/vm/demo.sh" "$top/tests/vm/demo-arm64.sh" \
		"$top/tests/vm/demo-arm64-debian.sh" \
		"$top/tests/vm/l2.sh" \
		"$top/tests/selftests.list" "$root/tests/"
	cp "$top/build/selftests-arm64/wb/guest_spin" "$top/build/selftests-arm64/wb/guest_hostile" \
		"$top/build/selftests-arm64/wb/guest_bench" "$root/wb/"
	"${arch_user_cross}strip" -o "$root/bin/perf" "$top/build/perf-arm64/perf"
	(cd "$top/build/selftests-arm64" && selftests_of arm64 |
		while read -r t; do mkdir -p "$root/selftests/$(dirname "$t")"; cp "$t" "$root/selftests/$t"; done)
	if [ "${3:-}" = --l2 ]; then
		mkdir -p "$root/demo"
		cp "$(image_of "$4")" "$root/demo/Image"
		cp "$5" "$root/demo/initramfs.cpio.gz"
		cp "$(sysmap_of "$4")" "$root/demo/System.map"
		arm64_debian "$root/demo/debian" "$5"
		arm64_debs qemu-arm64 qemu-system-arm
		arm64_program "$root" qemu-arm64 usr/bin/qemu-system-aarch64
	fi
	chmod +x "$root/init" "$root"/tests/*.sh
	pack
	exit 0
fi

mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,out,tests,wb,selftests,lib,lib64,usr/lib,etc}
cp /bin/busybox "$root/bin/busybox"
cp "$top/tests/vm/init" "$root/init"
cp "$top"/tests/vm/*.sh "$top/tests/selftests.list" "$root/tests/"
cp "$top/build/perf/perf" "$root/bin/perf"
find "$top/build/selftests/wb" -type f -perm -u+x -exec cp {} "$root/wb/" \;
(cd "$top/build/selftests" && selftests_of x86 |
	while read -r t; do mkdir -p "$root/selftests/$(dirname "$t")"; cp "$t" "$root/selftests/$t"; done)
if [ "${2:-}" = --l2 ]; then
	mkdir -p "$root/demo" "$root/usr/bin" "$root/usr/share" "$root/usr/lib/x86_64-linux-gnu"
	cp "$(image_of "$3")" "$root/demo/$(basename "$(image_of "$3")")"
	cp "$4" "$root/demo/initramfs.cpio.gz"
	cp "$(sysmap_of "$3")" "$root/demo/System.map"
	if [ $# -ge 6 ]; then
		mkdir -p "$root/demo/i386"
		cp "$(image_of "$5")" "$root/demo/i386/$(basename "$(image_of "$5")")"
		cp "$6" "$root/demo/i386/initramfs.cpio.gz"
		cp "$(sysmap_of "$5")" "$root/demo/i386/System.map"
	fi
	cp /usr/bin/qemu-system-x86_64 "$root/usr/bin/"
	cp -rL /usr/share/qemu /usr/share/seabios "$root/usr/share/"
	cp -r /usr/lib/x86_64-linux-gnu/qemu "$root/usr/lib/x86_64-linux-gnu/"
fi
# Shared libraries of every dynamic binary, at their own paths.
find "$root" -type f -perm -u+x -exec sh -c 'file -b "$1" | grep -q "dynamically linked"' _ {} \; -print |
	xargs -r ldd 2>/dev/null | grep -o '/[^ ]*\.so[^ ]*' | sort -u |
	while read -r lib; do mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; done
chmod +x "$root/init" "$root"/tests/*.sh
pack
