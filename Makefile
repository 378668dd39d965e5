# pyperf-bpf build.  `make` builds ./pyperf-bpf; `make test` runs every test;
# `make bench` measures the sampler's cost; `make install` puts it on PATH.
CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool
PYTHON ?= /usr/bin/python3
PREFIX ?= /usr/local
BUILD := build
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

CFLAGS ?= -O2 -g
# user/ holds one folder per concept (cmd, session, python, native, profile,
# output, lib); headers are included by name from any of them
USER_DIRS := $(sort $(dir $(wildcard user/*/*.c)))
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror=implicit-function-declaration -Wno-unused-parameter -Ibpf $(patsubst %/,-I%,$(USER_DIRS)) -I$(BUILD)
LDLIBS := -lbpf -ldw -ldebuginfod -lelf -lcapstone -lz -lprotobuf-c -lstdc++ -ldl -lm

BPF_CFLAGS := -O2 -g -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf -Wall -Wno-unused-function

USER_SRCS := $(filter-out user/cmd/main.c,$(wildcard user/*/*.c))
USER_HDRS := $(wildcard user/*/*.h)
USER_OBJS := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRCS)) $(BUILD)/user/output/profile.pb-c.o
# the unit tests run built with AddressSanitizer and UBSan, on their own
# copies of the objects: an overread or undefined behaviour fails them
SAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
SAN_OBJS := $(patsubst $(BUILD)/%,$(BUILD)/san/%,$(USER_OBJS))
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/san/tests/%,$(wildcard tests/unit/test_*.c))
UNIT_TOOLS := $(BUILD)/tests/linetable_check $(BUILD)/tests/debug_offsets_check

.PHONY: all clean test unit e2e bench install deps fuzz fuzz-replay soak
all: pyperf-bpf

$(BUILD)/vmlinux.h:
	@mkdir -p $(BUILD)
	$(BPFTOOL) btf dump file $${PYPERF_VMLINUX_BTF:-/sys/kernel/btf/vmlinux} format c > $@.tmp && mv $@.tmp $@

$(BUILD)/pyperf.bpf.o: bpf/pyperf.bpf.c $(wildcard bpf/*.h) $(BUILD)/vmlinux.h
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/pyperf.skel.h: $(BUILD)/pyperf.bpf.o
	$(BPFTOOL) gen skeleton $< name pyperf_bpf > $@.tmp && mv $@.tmp $@

# pprof's message types, generated from user/output/profile.proto
$(BUILD)/profile.pb-c.c $(BUILD)/profile.pb-c.h: user/output/profile.proto
	@mkdir -p $(BUILD)
	protoc-c --c_out=$(BUILD) -Iuser/output $<

$(BUILD)/user/output/profile.pb-c.o: $(BUILD)/profile.pb-c.c $(BUILD)/profile.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Wno-unused-parameter -c $< -o $@

$(BUILD)/user/%.o: user/%.c $(USER_HDRS) bpf/pyperf.h bpf/unwind_step.h $(BUILD)/pyperf.skel.h $(BUILD)/profile.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

pyperf-bpf: $(BUILD)/user/cmd/main.o $(USER_OBJS)
	$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/san/user/output/profile.pb-c.o: $(BUILD)/profile.pb-c.c $(BUILD)/profile.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_CFLAGS) -Wno-unused-parameter -c $< -o $@

$(BUILD)/san/user/%.o: user/%.c $(USER_HDRS) bpf/pyperf.h bpf/unwind_step.h $(BUILD)/pyperf.skel.h $(BUILD)/profile.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_CFLAGS) -c $< -o $@

# the profiler itself under ASan+UBSan, for the e2e smoke run
# (tests/e2e/test_sanitized.py)
$(BUILD)/san/pyperf-bpf: $(BUILD)/san/user/cmd/main.o $(SAN_OBJS)
	$(CC) $(CFLAGS) $(SAN_CFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/san/tests/%: tests/unit/%.c $(SAN_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_CFLAGS) $^ $(LDLIBS) -lcmocka -o $@

$(BUILD)/tests/linetable_check: tests/unit/linetable_check.c $(BUILD)/user/python/linetable.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@

# Google's pprof, built offline from Debian's Go sources (golang-go,
# golang-github-google-pprof-dev): the tests read our pprof files with it
$(BUILD)/tools/pprof:
	@mkdir -p $(dir $@)
	GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE=$(abspath $(BUILD))/gocache \
		go build -o $@ github.com/google/pprof

$(BUILD)/tests/debug_offsets_check: tests/unit/debug_offsets_check.c $(BUILD)/user/python/py_debug_offsets.o $(BUILD)/user/python/py_offsets_table.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@

unit: $(UNIT_TESTS) $(UNIT_TOOLS) fuzz-replay
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; $$t; done

# Fuzzing: every parser of untrusted input has a libFuzzer target,
# tests/fuzz/fuzz_NAME.c, and a seed corpus, tests/fuzz/corpus/NAME/.
# `make fuzz` builds the targets with clang on their own instrumented copies
# of the objects (build/fuzz/) and runs each for FUZZ_SECONDS on a copy of
# its corpus (build/fuzz/corpus-NAME/: new inputs stay there), then prints
# execs/s, coverage and what it found (build/fuzz/artifacts-NAME/).
# `make unit` replays the committed corpus once through every target, linked
# with the unit tests' ASan+UBSan objects: a crash found once stays fixed.
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_OBJS := $(patsubst $(BUILD)/%,$(BUILD)/fuzz/%,$(USER_OBJS))
FUZZ_BINS := $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_NAMES))
FUZZ_REPLAYS := $(patsubst %,$(BUILD)/san/fuzz/replay_%,$(FUZZ_NAMES))
# objects named only by pattern rules would count as intermediate and be
# deleted after each build
.SECONDARY: $(FUZZ_OBJS) $(FUZZ_BINS) $(SAN_OBJS)

$(BUILD)/fuzz/user/output/profile.pb-c.o: $(BUILD)/profile.pb-c.c $(BUILD)/profile.pb-c.h
	@mkdir -p $(dir $@)
	$(CLANG) $(CFLAGS) $(FUZZ_CFLAGS) -Wno-unused-parameter -c $< -o $@

$(BUILD)/fuzz/user/%.o: user/%.c $(USER_HDRS) bpf/pyperf.h bpf/unwind_step.h $(BUILD)/pyperf.skel.h $(BUILD)/profile.pb-c.h
	@mkdir -p $(dir $@)
	$(CLANG) $(CFLAGS) $(FUZZ_CFLAGS) -c $< -o $@

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(CLANG) $(CFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(filter-out %.h,$^) $(LDLIBS) -o $@

$(BUILD)/san/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(wildcard tests/fuzz/*.h) $(SAN_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_CFLAGS) $(filter-out %.h,$^) $(LDLIBS) -o $@

fuzz-replay: $(FUZZ_REPLAYS)
	@set -e; for n in $(FUZZ_NAMES); do $(BUILD)/san/fuzz/replay_$$n tests/fuzz/corpus/$$n; done

# one target's run; its exit status is kept for the summary, so every
# target runs even when one finds a crash
fuzz-run-%: $(BUILD)/fuzz/fuzz_%
	@rm -rf $(BUILD)/fuzz/artifacts-$*
	@mkdir -p $(BUILD)/fuzz/corpus-$* $(BUILD)/fuzz/artifacts-$*
	@cp tests/fuzz/corpus/$*/* $(BUILD)/fuzz/corpus-$*/
	@echo "== fuzz $* for $(FUZZ_SECONDS) s"
	@$< -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix=$(BUILD)/fuzz/artifacts-$*/ $(BUILD)/fuzz/corpus-$* \
		>$(BUILD)/fuzz/$*.log 2>&1; echo $$? >$(BUILD)/fuzz/$*.rc

fuzz: $(FUZZ_BINS) $(patsubst %,fuzz-run-%,$(FUZZ_NAMES))
	@tests/fuzz/summary.sh $(BUILD)/fuzz $(FUZZ_NAMES)

deps:
	scripts/setup --deps

# deps first, in its own make run, so a fresh machine gets clang and libbpf
# before anything is compiled
test:
	scripts/setup --test-deps
	$(MAKE) pyperf-bpf unit $(BUILD)/tools/pprof $(BUILD)/san/pyperf-bpf
	$(PYTHON) -m pytest -q -ra tests

bench: pyperf-bpf
	scripts/bench

install: pyperf-bpf
	install -D -m 0755 pyperf-bpf $(DESTDIR)$(PREFIX)/bin/pyperf-bpf

clean:
	rm -rf $(BUILD) pyperf-bpf

# the daemon for SOAK_SECONDS (1800) under process churn and a flapping
# receiver: RSS, CPU, fds and BPF map fill every SOAK_REPORT_S (60), their slopes
soak: pyperf-bpf
	scripts/soak
