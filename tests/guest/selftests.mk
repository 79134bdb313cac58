# SPDX-License-Identifier: GPL-2.0
# Appended to tools/testing/selftests/kvm/Makefile with 'make -f Makefile -f',
# so that the workbench's guest programs build with the KVM selftests
# library and its exact flags.  Frame pointers everywhere, leaf included.
WB_DIR := $(dir $(lastword $(MAKEFILE_LIST)))
WB_PROGS := $(patsubst $(WB_DIR)%.c,$(OUTPUT)/wb/%,$(wildcard $(WB_DIR)*.c))

$(OUTPUT)/wb/%: $(WB_DIR)%.c $(LIBKVM_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		$(CPPFLAGS) $(LDFLAGS) $< $(LIBKVM_OBJS) $(LDLIBS) -o $@

wb-progs: $(WB_PROGS)
