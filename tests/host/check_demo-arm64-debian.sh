#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo with Debian 12's own arm64 cloud kernel, judged with the kallsyms
# it handed over and its Image (no build of it here: build/debian-arm64/).
exec "$(dirname "$0")/check_demo.sh" "$1" "$2" debian-arm64 arm64 demo-arm64-debian
