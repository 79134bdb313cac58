#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo with the 32-bit (i386) guest kernel.
exec "$(dirname "$0")/check_demo.sh" "$1" "$2" guest-i386 i386
