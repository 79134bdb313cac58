#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build a fresh kernel work tree at build/linux from Debian's linux-source-6.12,
# commit it as 'base' and apply patches/*.patch with git am.
# With --if-needed, keep an existing tree that holds exactly the series in
# patches/, and refuse to throw away a tree that holds other work.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tarball=/usr/src/linux-source-6.12.tar.xz

if [ "${1:-}" = --if-needed ] && [ -d "$tree/.git" ]; then
	if [ -n "$(git -C "$tree" status --porcelain)" ]; then
		echo "tree: build/linux has uncommitted changes: commit them and 'make export'," \
		     "or 'make tree' to start over" >&2
		exit 1
	fi
	tmp=$(mktemp -d)
	series_format_patch "$tmp"
	if diff -q <(cat "$tmp"/*.patch 2>/dev/null) \
		   <(cat $(ls "$top"/patches/[0-9]*.patch 2>/dev/null | grep -v /0000-) /dev/null) >/dev/null; then
		rm -rf "$tmp"
		echo "tree: build/linux holds the series in patches/ ($(git -C "$tree" rev-list --count base..HEAD) patches)"
		exit 0
	fi
	rm -rf "$tmp"
	echo "tree: build/linux (base..HEAD) differs from patches/: 'make export' to keep" \
	     "the tree's commits, or 'make tree' to rebuild it from patches/" >&2
	exit 1
fi

[ -f "$tarball" ] || { echo "tree: $tarball missing (apt-get install linux-source-6.12)" >&2; exit 1; }
version=$(dpkg-query -W -f='${Version}' linux-source-6.12)
rm -rf "$tree" "$top/build/linux-source-6.12"
mkdir -p "$top/build"
tar -C "$top/build" -xf "$tarball"
mv "$top/build/linux-source-6.12" "$tree"
cd "$tree"
# Debian's tarball ends its .gitignore with a block that ignores every
# top-level entry; drop it or git sees nothing.
sed -i '/^# Debian packaging: ignore everything/,$d' .gitignore
sed -i -e :a -e '/^\n*$/{$d;N;ba' -e '}' -e '$ { /^#$/d }' .gitignore
git init -q -b base-branch
git config user.name "Perf KVM Developers"
git config user.email "perf-kvm@lists.invalid"
git config core.abbrev 12
git add -A
GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" \
	git -c commit.gpgsign=false commit -q -m "Debian linux-source-6.12 $version"
git tag base
git checkout -q -b work
echo "tree: base is Debian linux-source-6.12 $version ($(make -s kernelversion))"
echo "$version" > "$top/build/linux-source.version"

shopt -s nullglob
n=0
for p in "$top"/patches/[0-9][0-9][0-9][0-9]-*.patch; do
	case "$(basename "$p")" in 0000-*) continue ;; esac
	if ! git am -q --keep-cr --committer-date-is-author-date "$p" >/dev/null 2>&1; then
		git am --abort >/dev/null 2>&1 || true
		echo "tree: FAILED to apply $(basename "$p")" >&2
		exit 1
	fi
	n=$((n + 1))
done
echo "tree: applied $n patch(es) from patches/"
