# SPDX-License-Identifier: GPL-2.0
# perf kvm guest callchains: the workbench.  Each target calls one script.
.PHONY: demo demo-arm64 test fresh bench bench-arm64 gate tree export kernel perf selftests clean

demo:		## profile a real Linux guest from the host: call stacks, flame graph
	scripts/demo.sh
demo-arm64:	## the same on an arm64 KVM host with an arm64 guest (PMU cycles)
	scripts/demo.sh arm64
test:		## everything: gate, build, boot, KUnit, selftests, scenarios, checks
	scripts/test.sh
fresh:		## make test, then make demo, in a fresh Debian 12 root (what CI runs)
	scripts/fresh.sh
bench:		## guest unwind cost, on a kernel without debug options
	scripts/bench.sh
bench-arm64:	## the same on the arm64 KVM host, with the PMU's cycles
	scripts/bench.sh arm64
gate:		## the build robot's checks on the series (needs 'make tree')
	scripts/gate.sh
tree:		## fresh build/linux from Debian's linux-source-6.12 + patches/
	scripts/tree.sh
export:		## patches/ from base..HEAD of build/linux
	scripts/export.sh
kernel:		## the test VM kernel (host config + KASAN)
	scripts/build-kernel.sh x86_64 test configs/host.config configs/kasan.config configs/trace.config
perf:
	scripts/build-perf.sh
selftests:
	scripts/build-selftests.sh
clean:
	rm -rf build out
