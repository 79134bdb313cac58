#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo with the arm64 guest kernel, in the arm64 KVM host.
exec "$(dirname "$0")/check_demo.sh" "$1" "$2" guest-arm64 arm64
