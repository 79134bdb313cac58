# SPDX-License-Identifier: GPL-2.0
# perf kvm guest callchains: the workbench.  Each target calls one script.
.PHONY: demo test tree export kernel perf selftests initramfs vm clean

demo:		## profile a guest from the host and show its call stacks
	scripts/demo.sh
test:		## everything: build, boot, KUnit, selftests, scenarios, checks
	scripts/test.sh
tree:		## fresh build/linux from Debian's linux-source-6.12 + patches/
	scripts/tree.sh
export:		## patches/ from base..HEAD of build/linux
	scripts/export.sh
kernel:
	scripts/build-kernel.sh host configs/host.config
perf:
	scripts/build-perf.sh
selftests:
	scripts/build-selftests.sh
initramfs:
	scripts/mkinitramfs.sh build/initramfs.cpio.gz
vm:		## boot the test VM and run the scenarios (after the builds)
	scripts/run-vm.sh build/obj-host/arch/x86/boot/bzImage build/initramfs.cpio.gz \
		build/results 1500 selftests,baseline
clean:
	rm -rf build
