#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Pack an initramfs.
#   mkinitramfs.sh <out.cpio.gz>: the test VM (L1 host): static busybox, perf,
#	the KVM selftests, the workbench's guest programs, the in-VM scenarios,
#	with the shared libraries they need;
#   mkinitramfs.sh <out.cpio.gz> --l2 <kernel> <l2.cpio.gz> [<kernel> <l2.cpio.gz> [<kernel>]]:
#	the same, plus QEMU and a Linux guest (L2: the kernel build named
#	<kernel>, with its System.map) for the demo, a 32-bit one (in
#	/demo/i386) and, with a seventh argument, the build it names, a
#	guest kernel without frame pointers (in /demo/orc);
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

# debian_debs <name> <package> <arch>: Debian's <package> for <arch> (arm64,
# amd64) and its dependencies, downloaded once into build/debs/<name>/ and
# unpacked into build/<name>/ (QEMU's for arm64 are about 100 packages).
debian_debs() {
	local d=$top/build/debs/$1 x=$top/build/$1 f pat=":$3\$"
	[ -e "$x/.done" ] && return
	# apt names the packages of the machine's own architecture bare.
	[ "$3" = "$(dpkg --print-architecture)" ] && pat='^[^:]*$'
	# Into fresh directories, moved into place when complete: an
	# interrupted download or unpacking is not taken for a cache.
	rm -rf "$d" "$d.new" "$x" "$x.new"
	mkdir -p "$d.new" "$x.new"
	apt_download "$d.new" $(apt-cache depends --recurse --no-recommends \
		--no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances \
		"$2:$3" | grep -E '^[a-z0-9]' | grep -E "$pat" | sort -u) ||
		{ echo "initramfs: apt-get download of $2:$3 FAILED" >&2; exit 1; }
	for f in "$d.new"/*.deb; do dpkg-deb -x "$f" "$x.new"; done
	touch "$x.new/.done"
	mv "$d.new" "$d"
	mv "$x.new" "$x"
}

# debian_program <root> <name> <program> <triplet>: <program> (a path) from
# build/<name>/ (debian_debs) in <root>, with its dynamic loader and only
# the shared libraries in the closure of its DT_NEEDED entries, from
# lib/<triplet>/ and usr/lib/<triplet>/ (aarch64-linux-gnu, x86_64-linux-gnu).
debian_program() {
	local x=$top/build/$2 t=$4 f so lib ld todo=()
	declare -A seen=()
	mkdir -p "$1/$(dirname "$3")" "$1/lib/$t"
	cp "$x/$3" "$1/$3"
	# The loader itself, where the program asks for it, not its link in
	# /lib or /lib64, whose target may be absolute.
	ld=$(readelf -l "$x/$3" | sed -n 's/.*program interpreter: \(.*\)\]$/\1/p')
	mkdir -p "$1$(dirname "$ld")"
	cp "$x/lib/$t/$(basename "$ld")" "$1$ld"
	todo=("$x/$3")
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		for so in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			[ -z "${seen[$so]:-}" ] || continue
			seen[$so]=1
			lib=$(find "$x/lib/$t" "$x/usr/lib/$t" -maxdepth 1 -name "$so" 2>/dev/null | head -1)
			[ -n "$lib" ] || { echo "initramfs: $so, which $3 needs, is in none of its packages" >&2; exit 1; }
			cp -L "$lib" "$1/lib/$t/$so"
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

# debian_guest <dir> <initramfs> <arch> <triplet> <module>...: Debian 12's own
# cloud kernel for <arch> (arm64, amd64), unmodified (the kernel package
# linux-image-cloud-<arch> depends on, downloaded once into
# build/debs/debian-<arch>/), as <dir>/vmlinuz, to boot with KASLR on and a
# command line that asks /init for the kernel's symbols (tests/demo/l2-init):
# the package's System.map is a placeholder, the real one is in its -dbg
# package.  Its initramfs is the workbench's guest's, <initramfs>, and a
# second archive with the package's drivers for the guest's virtio disk
# (and on arm64 its console), modules in this kernel: <module>, paths under
# its drivers/ in load order (their depends=), named 1- to 9- in the order
# of /init's glob; and Debian's own perf (linux-perf, the libraries of
# <triplet> it needs), for the guest's recording of itself (/init prefers
# /usr/bin/perf to the workbench's /bin/perf).  <dir>/version names the
# package.
debian_guest() {
	local dir=$1 init=$2 arch=$3 t=$4 pkg deb
	local d=$top/build/debs/debian-$arch
	pkg=$(apt-cache depends "linux-image-cloud-$arch:$arch" |
		sed -n "s/^  Depends: \(linux-image-[^:]*\)\(:$arch\)\?\$/\1/p" | head -1 || true)
	[ -n "$pkg" ] || { echo "initramfs: no kernel package behind linux-image-cloud-$arch:$arch" >&2; exit 1; }
	deb=
	[ -d "$d" ] && deb=$(find "$d" -maxdepth 1 -name "${pkg}_*_$arch.deb" | sort | tail -1)
	if [ -z "$deb" ]; then
		rm -rf "$d" "$d.new"
		mkdir -p "$d.new"
		apt_download "$d.new" "$pkg:$arch" || true
		deb=$(find "$d.new" -maxdepth 1 -name "${pkg}_*_$arch.deb" | sort | tail -1)
		[ -n "$deb" ] || { echo "initramfs: apt-get download $pkg:$arch FAILED" >&2; exit 1; }
		mv "$d.new" "$d"
		deb=$d/$(basename "$deb")
	fi
	local x=$dir/x kd=./lib/modules/${pkg#linux-image-}/kernel/drivers m i=1
	shift 4
	mkdir -p "$x/lib/modules/wb"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$x" "./boot/vmlinuz-${pkg#linux-image-}" \
		$(for m in "$@"; do echo "$kd/$m.ko"; done)
	mv "$x/boot/vmlinuz-${pkg#linux-image-}" "$dir/vmlinuz"
	for m in "$@"; do
		mv "$x/$kd/$m.ko" "$x/lib/modules/wb/$i-${m#*/}.ko"
		i=$((i + 1))
	done
	rm -rf "$x/boot" "${x:?}/lib/modules/${pkg#linux-image-}"
	debian_debs "debian-perf-$arch" linux-perf "$arch"
	debian_program "$x" "debian-perf-$arch" usr/bin/perf "$t"
	{ cat "$init"
	  (cd "$x" && find . | sort | cpio -o -H newc --quiet --reproducible | gzip -1); } > "$dir/initramfs.cpio.gz"
	rm -rf "$x"
	echo "$pkg $(dpkg-deb -f "$deb" Version)" > "$dir/version"
}

# arm64_debian <dir> <initramfs>: Debian's arm64 cloud kernel (debian_guest)
# as <dir>/Image, with the arm64 guest's initramfs, <initramfs>, its virtio
# block and console drivers (for the disk /init writes the symbols and its
# own recording to, and the console that ends that recording), and its
# command line.  The kernel is also kept as build/debian-arm64/Image, for
# the host's checks (the fidelity's model of where its interrupts are off is
# read from its code).
arm64_debian() {
	debian_guest "$1" "$2" arm64 aarch64-linux-gnu virtio/virtio_ring virtio/virtio \
		virtio/virtio_mmio block/virtio_blk char/virtio_console
	mv "$1/vmlinuz" "$1/Image"
	mkdir -p "$top/build/debian-arm64"
	cp "$1/Image" "$top/build/debian-arm64/Image"
	echo "console=ttyAMA0 panic=-1 quiet wb.kallsyms" > "$1/cmdline"
}

# x86_orc <dir> <kernel> <initramfs>: the x86-64 guest kernel built as most
# distributions build theirs (the build named <kernel>: ORC, no frame
# pointers, KASLR; configs/guest-orc.config) as <dir>/bzImage, with the x86
# guest's initramfs, <initramfs>.  Its command line leaves KASLR on and
# asks /init for the kernel's symbols (tests/demo/l2-init), for the host to
# know where the kernel runs; <dir>/stack asks tests/vm/demo.sh for the
# guest's registers and 16 KiB of stack copies (a task stack's size) with
# every sample, which perf unwinds with the kernel's ORC tables.
x86_orc() {
	mkdir -p "$1"
	cp "$(image_of "$2")" "$1/bzImage"
	cp "$3" "$1/initramfs.cpio.gz"
	echo "console=ttyS0 panic=-1 wb.kallsyms" > "$1/cmdline"
	echo 16384 > "$1/stack"
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
		debian_debs qemu-arm64 qemu-system-arm arm64
		debian_program "$root" qemu-arm64 usr/bin/qemu-system-aarch64 aarch64-linux-gnu
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
		# Its fidelity window, in s (tests/vm/demo.sh; README,
		# "Fidelity"): twice the others'.
		echo 80 > "$root/demo/i386/window"
	fi
	[ $# -ge 7 ] && x86_orc "$root/demo/orc" "$7" "$4"
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
