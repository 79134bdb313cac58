#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Regenerate patches/ from base..HEAD of build/linux.  Unchanged commits give
# byte-identical files.  The cover letter is built from patches/cover-letter.txt
# (first line: subject; then the body), plus shortlog, diffstat and base.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ -z "$(git -C "$tree" status --porcelain)" ] ||
	echo "export: WARNING: build/linux has uncommitted changes; they are not exported" >&2
git -C "$tree" symbolic-ref -q HEAD >/dev/null ||
	{ echo "export: build/linux is on a detached HEAD (is the gate running?); not exporting" >&2; exit 1; }
n=$(git -C "$tree" rev-list --count base..HEAD)
[ "$n" = 0 ] && ls "$top"/patches/0*.patch >/dev/null 2>&1 &&
	{ echo "export: build/linux has no commits on top of base; not deleting patches/" >&2; exit 1; }
rm -f "$top"/patches/[0-9][0-9][0-9][0-9]-*.patch
series_format_patch "$top/patches"
cover=$top/patches/cover-letter.txt
if [ -f "$cover" ]; then
	first=$(git -C "$tree" rev-list --reverse base..HEAD | sed -n 1p)
	{
		echo "From $(printf '0%.0s' {1..40}) Mon Sep 17 00:00:00 2001"
		git -C "$tree" log -1 --format='From: %an <%ae>' "$first"
		echo "Subject: [PATCH 0/$n] $(head -1 "$cover")"
		echo
		tail -n +3 "$cover"
		echo
		git -C "$tree" shortlog base..HEAD
		git -C "$tree" diff --stat=72 base..HEAD
		echo
		echo "base-commit: Debian linux-source-6.12 $(cat "$top/build/linux-source.version" 2>/dev/null)"
	} > "$top/patches/0000-cover-letter.patch"
fi
echo "export: $n patch(es) in patches/"
