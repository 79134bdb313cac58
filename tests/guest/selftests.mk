# SPDX-License-Identifier: GPL-2.0
# Appended to tools/testing/selftests/kvm/Makefile with 'make -f Makefile -f',
# so that the workbench's guest programs build with the KVM selftests
# library and its exact flags.  Frame pointers everywhere, leaf included.
#
# A program is one file, tests/guest/<name>.c, or a directory of files,
# tests/guest/<dir>/*.c, built as guest_<dir> (tests/guest/hostile/ is
# guest_hostile).  All programs but those in WB_NOLIB also link the
# workbench's library, tests/guest/lib/*.c.  A directory's files for one
# architecture only are in its subdirectory named as the selftests name it
# (x86_64/, aarch64/).
WB_DIR := $(dir $(lastword $(MAKEFILE_LIST)))
WB_LIB := $(wildcard $(WB_DIR)lib/*.c)
WB_HDRS := $(wildcard $(WB_DIR)lib/*.h $(WB_DIR)*/*.h)
WB_DIRS := $(filter-out lib,$(notdir $(patsubst %/,%,$(wildcard $(WB_DIR)*/))))
WB_MULTI := $(patsubst %,guest_%,$(WB_DIRS))
WB_ONE := $(filter-out $(WB_MULTI),$(patsubst $(WB_DIR)%.c,%,$(wildcard $(WB_DIR)*.c)))
WB_NOLIB := guest_spin
WB_PROGS := $(patsubst %,$(OUTPUT)/wb/%,$(WB_ONE) $(WB_MULTI))

$(foreach p,$(WB_ONE),$(eval $(OUTPUT)/wb/$(p): $(WB_DIR)$(p).c))
$(foreach d,$(WB_DIRS),$(eval $(OUTPUT)/wb/guest_$(d): \
	$(wildcard $(WB_DIR)$(d)/*.c $(WB_DIR)$(d)/$(ARCH_DIR)/*.c)))
$(foreach p,$(filter-out $(WB_NOLIB),$(WB_ONE) $(WB_MULTI)),\
	$(eval $(OUTPUT)/wb/$(p): $(WB_LIB) $(WB_HDRS)))

# On arm64, return addresses signed as in a distribution kernel (guest_spin
# turns pointer authentication on in its guest).
WB_CFLAGS_aarch64 := -mbranch-protection=pac-ret+leaf

$(WB_PROGS): $(LIBKVM_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer $(WB_CFLAGS_$(ARCH_DIR)) \
		-I$(WB_DIR)lib $(CPPFLAGS) $(LDFLAGS) $(filter %.c,$^) \
		$(LIBKVM_OBJS) $(LDLIBS) -o $@

wb-progs: $(WB_PROGS)
