#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo with the 32-bit (i386) guest kernel: 32-bit paging and frames.
exec sh /tests/demo.sh "$1" /demo/i386
