# gpumem — one non-recursive Makefile.
#
# Targets: all (default), check, check-servers, demo, sanitize, bench, fuzz, install, clean,
#          gpu-check, gpu-bench, spank (the Slurm plugin, when slurm/spank.h
#          is found), install-spank.
# Variables: CUDA_HOME (toolkit with cuda.h), BUILD (output dir), V=1 (show
#            commands), PREFIX/DESTDIR (install), MODE/GROUP (demo),
#            SLURM_INCLUDE (directory holding slurm/spank.h, default
#            /usr/include), SPANKDIR (where install-spank puts the plugin).
#            SYSCONFDIR (the admin policy is SYSCONFDIR/gpumem/policy;
#            default /etc; fixed in the library, never read from the env).
#
# Conventions (so adding a file needs no edit here):
#   policy/*.c                    -> libgmcore.a and the shim
#   shim/<layer>/*.c              -> libgpumem.so; the pure modules (SHIM_PURE:
#                                    shim/base, shim/telemetry, shim/group,
#                                    shim/record and two record stores) also
#                                    go into libgmcore.a
#   tools/lib/*.c                 -> libgmcore.a (shared by the tools)
#   tools/cli/*.c                 -> gpumem
#   tools/top/*.c                 -> gpumem-top (ncurses)
#   tools/sim/*.c                 -> sim/libcuda.so.1
#   tools/simnvml/*.c             -> sim/libnvidia-ml.so.1 (with tools/sim/simmachine.c)
#   tools/trainsim/*.c            -> gpumem-trainsim
#   tools/replay/*.c              -> gpumem-replay (run by gpumem replay)
#   tools/spank/jobspec.c         -> libgmcore.a (the plugin's decisions)
#   tools/spank/spank_gpumem.c    -> spank_gpumem.so (make spank)
#   tools/exporter/*.c            -> gpumem-exporter (with libmicrohttpd;
#                                    skipped, with one line, without it)
#   tests/unit/test_*.c           Check suites linked with libgmcore.a
#   tests/sim/test_*.c            Check suites linked with the simulated driver
#   tests/progs/*.c               helper programs (direct_*.c link the
#                                 simulated libcuda; the rest use dlopen)
#   tests/integ/test_*.c          Check suites that run programs under the shim
#   tests/integ/test_*.sh         shell tests (exit 0 pass, 77 skip)
#   tests/lint/test_*.sh          checks of the source tree itself (layering)
#   tests/servers/test_*.sh       tests against real servers (make check-servers)
#   The layering of shim/, policy/ and tools/ is checked by tests/layers.sh.

CUDA_HOME ?= /usr/local/cuda
BUILD     ?= build
PREFIX    ?= /usr/local
DESTDIR   ?=
SYSCONFDIR ?= /etc

CUDA_H := $(CUDA_HOME)/include/cuda.h
ifeq ($(wildcard $(CUDA_H)),)
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(error gpumem: cuda.h not found at $(CUDA_H); install the CUDA toolkit headers or set CUDA_HOME=/path/to/cuda (the directory holding include/cuda.h))
endif
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

CC       ?= cc
SANFLAGS ?=
OPT      ?= -O2
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE -g $(OPT) $(WARN) -fPIC -fvisibility=hidden \
              -MMD -MP -I. -isystem $(CUDA_HOME)/include $(SANFLAGS) $(EXTRA_CFLAGS)
LDFLAGS_ALL := $(SANFLAGS) $(EXTRA_LDFLAGS)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)
CURSES_LIBS  := $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw)
SYSLIBS      := -ldl -lpthread -lm -lrt
# The preloaded library needs no libm: every process on a node that
# preloads it would otherwise map and relocate libm too.
SHIM_LIBS    := -Wl,--as-needed -ldl -lpthread -lrt
# Shared objects resolve everything at link time, except in sanitizer
# builds, where the executable brings the sanitizer runtime.
NO_UNDEF     := $(if $(SANFLAGS),,-Wl,--no-undefined)

# ---- sources -------------------------------------------------------------
POLICY_SRC := $(wildcard policy/*.c)
SHIM_SRC   := $(wildcard shim/*/*.c)
SHIM_PURE  := $(filter-out shim/base/log.c,$(wildcard shim/base/*.c)) \
              $(wildcard shim/telemetry/*.c shim/group/*.c) \
              $(wildcard shim/admit/arena.c shim/account/track.c) \
              $(wildcard shim/record/*.c)
TOOLLIB_SRC := $(wildcard tools/lib/*.c) $(wildcard tools/spank/jobspec.c)
CORE_SRC   := $(POLICY_SRC) $(SHIM_PURE) $(TOOLLIB_SRC)
GPUMEM_SRC := $(wildcard tools/cli/*.c)
TOP_SRC    := $(wildcard tools/top/*.c)
SIM_SRC    := $(wildcard tools/sim/*.c)
SIMNVML_SRC := $(wildcard tools/simnvml/*.c)
TRAINSIM_SRC := $(wildcard tools/trainsim/*.c)
REPLAY_SRC := $(wildcard tools/replay/*.c)
EXPORTER_SRC := $(wildcard tools/exporter/*.c)
EXPORTS    := shim/intercept/exports.map

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

CORE_OBJ   := $(call obj,$(CORE_SRC))
SHIM_OBJ   := $(call obj,$(SHIM_SRC) $(POLICY_SRC))
LIBCORE    := $(BUILD)/libgmcore.a
SHIM_SO    := $(BUILD)/libgpumem.so
SIM_SO     := $(BUILD)/sim/libcuda.so.1
SIMNVML_SO := $(BUILD)/sim/libnvidia-ml.so.1
GPUMEM_BIN := $(BUILD)/gpumem
TOP_BIN    := $(BUILD)/gpumem-top
TRAINSIM   := $(BUILD)/gpumem-trainsim
REPLAY_BIN := $(BUILD)/gpumem-replay
EXPORTER_BIN := $(BUILD)/gpumem-exporter

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
SIMT_SRC  := $(wildcard tests/sim/test_*.c)
INTEG_SRC := $(wildcard tests/integ/test_*.c)
PROG_SRC  := $(wildcard tests/progs/*.c)
UNIT_BIN  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
SIMT_BIN  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(SIMT_SRC))
INTEG_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(INTEG_SRC))
PROG_BIN  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(PROG_SRC))
SHELL_TESTS := $(wildcard tests/integ/test_*.sh)
LINT_TESTS  := $(wildcard tests/lint/test_*.sh)
SERVER_TESTS := $(wildcard tests/servers/test_*.sh)
BENCH_SRC := $(wildcard tests/bench/*.c)
BENCH_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(BENCH_SRC))

PAGES    := $(BUILD)/share/.pages
PROGRAMS := $(SHIM_SO) $(SIM_SO) $(SIMNVML_SO) $(TRAINSIM) $(REPLAY_BIN) $(GPUMEM_BIN) $(TOP_BIN) $(PAGES)

# The HTTP server of `gpumem exporter` is the one program that links
# libmicrohttpd; without it the rest builds and `gpumem exporter --once`
# and --textfile still work.
HAVE_MHD := $(shell pkg-config --exists libmicrohttpd 2>/dev/null && echo yes)
ifeq ($(HAVE_MHD),yes)
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd)
MHD_LIBS   := $(shell pkg-config --libs libmicrohttpd)
ifneq ($(EXPORTER_SRC),)
PROGRAMS   += $(EXPORTER_BIN)
endif
else ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(info gpumem: skipping gpumem-exporter (libmicrohttpd not found); to build it: sudo apt-get install libmicrohttpd-dev)
endif

.SECONDARY:
.PHONY: all check check-lint check-unit check-sim check-integ check-servers tests demo sanitize bench fuzz \
        install clean gpu-check gpu-bench spank install-spank
all: $(filter-out $(if $(GPUMEM_SRC),,$(GPUMEM_BIN)) $(if $(TOP_SRC),,$(TOP_BIN)) \
        $(if $(SIM_SRC),,$(SIM_SO)) $(if $(SIMNVML_SRC),,$(SIMNVML_SO)) \
        $(if $(TRAINSIM_SRC),,$(TRAINSIM)),$(PROGRAMS))

# ---- prerequisites ---------------------------------------------------------
# One line naming the missing Debian packages (tools/prereq.sh) before
# anything that needs them is compiled, instead of a compiler error.
.PHONY: need-tool-deps need-test-deps
need-tool-deps:
	@sh tools/prereq.sh tools
need-test-deps:
	@sh tools/prereq.sh tests
$(call obj,$(TOP_SRC)) $(TOP_BIN): | need-tool-deps
$(patsubst tests/%.c,$(BUILD)/obj/tests/%.o,$(UNIT_SRC) $(SIMT_SRC) $(INTEG_SRC)) \
    $(UNIT_BIN) $(SIMT_BIN) $(INTEG_BIN): | need-test-deps

# ---- compile ---------------------------------------------------------------
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/obj/tests/%.o: CFLAGS_ALL += $(CHECK_CFLAGS)

# The admin policy file's directory is compiled into one object; a stamp
# holding SYSCONFDIR rebuilds it when the value changes.
SYSCONF_STAMP := $(BUILD)/.sysconfdir
$(SYSCONF_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(SYSCONFDIR)' | cmp -s - $@ 2>/dev/null || echo '$(SYSCONFDIR)' > $@
$(BUILD)/obj/policy/sysconf.o: CFLAGS_ALL += -DGM_SYSCONFDIR='"$(SYSCONFDIR)"'
$(BUILD)/obj/policy/sysconf.o: $(SYSCONF_STAMP)
.PHONY: FORCE
FORCE:

# The test build of the admin policy: the library and gpumem with
# SYSCONFDIR inside the build tree (the tests write the policy file
# there; the build's own directories are root's when the tests run as
# root, else the tests that need a trusted file skip).
ADMINTEST     := $(BUILD)/admintest
ADMINTEST_ETC := $(abspath $(ADMINTEST))/etc
ADMINTEST_BIN := $(ADMINTEST)/libgpumem.so $(ADMINTEST)/gpumem
$(ADMINTEST)/sysconf.o: policy/sysconf.c policy/policy.h
	@mkdir -p $(dir $@) $(ADMINTEST_ETC)/gpumem
	@chmod 0755 $(ADMINTEST) $(ADMINTEST_ETC) $(ADMINTEST_ETC)/gpumem
	$(Q)$(CC) $(CFLAGS_ALL) -DGM_SYSCONFDIR='"$(ADMINTEST_ETC)"' -c $< -o $@
$(ADMINTEST)/libgpumem.so: $(filter-out %/policy/sysconf.o,$(SHIM_OBJ)) $(ADMINTEST)/sysconf.o $(EXPORTS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -o $@ $(filter %.o,$^) -Wl,--version-script=$(EXPORTS) \
	    -Wl,-z,now -Wl,-z,relro $(NO_UNDEF) $(SHIM_LIBS)
$(ADMINTEST)/gpumem: $(call obj,$(GPUMEM_SRC)) $(ADMINTEST)/sysconf.o $(LIBCORE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(LIBCORE) $(SYSLIBS)

$(LIBCORE): $(CORE_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

# The preloaded library: hidden visibility, explicit export map.
$(SHIM_SO): $(SHIM_OBJ) $(EXPORTS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -o $@ $(SHIM_OBJ) -Wl,--version-script=$(EXPORTS) \
	    -Wl,-z,now -Wl,-z,relro $(NO_UNDEF) $(SHIM_LIBS)

$(SIM_SO): $(call obj,$(SIM_SRC)) $(LIBCORE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -shared -o $@ $(filter %.o,$^) $(LIBCORE) -Wl,-soname,libcuda.so.1 \
	    -Wl,-Bsymbolic $(NO_UNDEF) $(SYSLIBS)
	$(Q)ln -sf libcuda.so.1 $(BUILD)/sim/libcuda.so

# The simulated NVML shares the machine (devices, UUIDs, boards) with it.
$(SIMNVML_SO): $(call obj,$(SIMNVML_SRC) tools/sim/simmachine.c) $(LIBCORE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -shared -o $@ $(filter %.o,$^) $(LIBCORE) -Wl,-soname,libnvidia-ml.so.1 \
	    -Wl,-Bsymbolic $(NO_UNDEF) $(SYSLIBS)
	$(Q)ln -sf libnvidia-ml.so.1 $(BUILD)/sim/libnvidia-ml.so

$(TRAINSIM): $(call obj,$(TRAINSIM_SRC)) $(LIBCORE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(LIBCORE) $(SYSLIBS)

# The replayer (tools/replay): loads the driver it is given at run time.
$(REPLAY_BIN): $(call obj,$(REPLAY_SRC)) $(LIBCORE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(LIBCORE) $(SYSLIBS)
$(call obj,$(EXPORTER_SRC)): CFLAGS_ALL += $(MHD_CFLAGS)
$(EXPORTER_BIN): $(call obj,$(EXPORTER_SRC)) $(BUILD)/obj/tools/cli/cmd_exporter.o $(LIBCORE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(LIBCORE) $(MHD_LIBS) $(SYSLIBS)

$(GPUMEM_BIN): $(call obj,$(GPUMEM_SRC)) $(LIBCORE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(LIBCORE) $(SYSLIBS)

$(TOP_BIN): $(call obj,$(TOP_SRC)) $(LIBCORE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(LIBCORE) $(CURSES_LIBS) $(SYSLIBS)

# Manual pages and bash completion, made from the programs' own help and
# docs/env.md (tools/cli/mkpages.sh).
$(PAGES): $(GPUMEM_BIN) $(TOP_BIN) docs/env.md tools/cli/mkpages.sh
	@$(if $(Q),echo "  PAGES   $(BUILD)/share")
	$(Q)rm -rf $(BUILD)/share && sh tools/cli/mkpages.sh $(BUILD) $(BUILD)/share && touch $@

# ---- the Slurm plugin --------------------------------------------------------
# Built only where Slurm's plugin header is installed (Debian: libslurm-dev);
# it links libgmcore.a (the library's own parsers), never the shim. Only the
# glue is compiled with default visibility: Slurm looks up plugin_name and
# the slurm_spank_* functions; everything from libgmcore.a stays hidden.
SLURM_INCLUDE ?=
SPANK_H   := $(wildcard $(if $(SLURM_INCLUDE),$(SLURM_INCLUDE),/usr/include)/slurm/spank.h)
SPANK_SRC := $(wildcard tools/spank/spank_gpumem.c)
SPANK_SO  := $(BUILD)/spank_gpumem.so
SPANKDIR  ?= $(PREFIX)/lib/slurm

$(call obj,$(SPANK_SRC)): CFLAGS_ALL += -fvisibility=default \
    $(if $(SLURM_INCLUDE),-isystem $(SLURM_INCLUDE))

$(SPANK_SO): $(call obj,$(SPANK_SRC)) $(LIBCORE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -shared -o $@ $(filter %.o,$^) $(LIBCORE) $(SYSLIBS)

ifeq ($(SPANK_H),)
spank:
	@echo "spank: skipped: slurm/spank.h not found (apt-get install libslurm-dev, or set SLURM_INCLUDE=DIR)"
install-spank: spank
else
spank: $(SPANK_SO)
install-spank: $(SPANK_SO)
	install -d $(DESTDIR)$(SPANKDIR)
	install -m 0755 $(SPANK_SO) $(DESTDIR)$(SPANKDIR)/spank_gpumem.so
endif

# ---- tests -----------------------------------------------------------------
$(BUILD)/tests/unit/%: $(BUILD)/obj/tests/unit/%.o $(LIBCORE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $< $(LIBCORE) $(CHECK_LIBS) $(SYSLIBS)

$(BUILD)/tests/sim/%: $(BUILD)/obj/tests/sim/%.o $(LIBCORE) $(SIM_SO) $(SIMNVML_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $< $(LIBCORE) -L$(BUILD)/sim -l:libcuda.so.1 \
	    -Wl,-rpath,'$$ORIGIN/../../sim' $(CHECK_LIBS) $(SYSLIBS)

$(BUILD)/tests/integ/%: $(BUILD)/obj/tests/integ/%.o $(LIBCORE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $< $(LIBCORE) $(CHECK_LIBS) $(SYSLIBS)

# Helper programs are built without sanitizers: they run under the shim.
$(BUILD)/tests/progs/direct_%: tests/progs/direct_%.c $(SIM_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(filter-out $(SANFLAGS),$(CFLAGS_ALL)) -o $@ $< -L$(BUILD)/sim -l:libcuda.so.1 $(SYSLIBS)

$(BUILD)/tests/progs/direct_nvml%: tests/progs/direct_nvml%.c tests/progs/nvmlview.c $(SIM_SO) $(SIMNVML_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(filter-out $(SANFLAGS),$(CFLAGS_ALL)) -o $@ $< -L$(BUILD)/sim -l:libcuda.so.1 \
	    -l:libnvidia-ml.so.1 $(SYSLIBS)

# dlsym(RTLD_NEXT) probe: a program linked against two libraries that
# define the same function.
$(BUILD)/tests/progs/libgmprobe_%.so: tests/progs/probe/probe_%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(filter-out $(SANFLAGS),$(CFLAGS_ALL)) -shared -o $@ $< -ldl

$(BUILD)/tests/progs/rtldnext: tests/progs/rtldnext.c $(BUILD)/tests/progs/libgmprobe_a.so \
                               $(BUILD)/tests/progs/libgmprobe_b.so
	$(Q)$(CC) $(filter-out $(SANFLAGS),$(CFLAGS_ALL)) -o $@ $< -L$(BUILD)/tests/progs \
	    -Wl,--no-as-needed -l:libgmprobe_a.so -l:libgmprobe_b.so -Wl,-rpath,'$$ORIGIN' -ldl

# A library that uses CUDA from its constructor, and its program.
$(BUILD)/tests/progs/ctorcuda: tests/progs/ctorcuda.c $(BUILD)/tests/progs/libgmprobe_ctor.so
	$(Q)$(CC) $(filter-out $(SANFLAGS),$(CFLAGS_ALL)) -o $@ $< -L$(BUILD)/tests/progs \
	    -Wl,--no-as-needed -l:libgmprobe_ctor.so -Wl,-rpath,'$$ORIGIN' -ldl

$(BUILD)/tests/progs/%: tests/progs/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(filter-out $(SANFLAGS),$(CFLAGS_ALL)) -o $@ $< $(SYSLIBS)

$(BUILD)/tests/bench/%: $(BUILD)/obj/tests/bench/%.o $(LIBCORE)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $< $(LIBCORE) $(SYSLIBS)

# libFuzzer targets (clang): tests/fuzz/fuzz_*.c define LLVMFuzzerTestOneInput.
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_TIME ?= 60
fuzz:
	$(Q)for f in $(FUZZ_SRC); do \
	    b=$(BUILD)/fuzz/$$(basename $$f .c); mkdir -p $(BUILD)/fuzz; \
	    clang -std=c11 -D_GNU_SOURCE -g -O1 -I. -isystem $(CUDA_HOME)/include \
	        -fsanitize=fuzzer,address,undefined $$f $(CORE_SRC) -o $$b -lpthread -lm -lrt -ldl && \
	    $$b -max_total_time=$(FUZZ_TIME) || exit 1; done

# The benchmarks are built (not run) with the tests, so that they keep
# building with the code they measure.
tests: all $(UNIT_BIN) $(SIMT_BIN) $(INTEG_BIN) $(PROG_BIN) $(ADMINTEST_BIN) $(BENCH_BIN)

# Runs every suite; prints each suite's result and one closing line
# "N passed, N failed". Exit status non-zero when anything failed.
check: tests
	$(Q)BUILD=$(BUILD) sh tests/run-tests.sh $(LINT_TESTS) $(UNIT_BIN) $(SIMT_BIN) $(INTEG_BIN) $(SHELL_TESTS)

check-lint:
	$(Q)BUILD=$(BUILD) sh tests/run-tests.sh $(LINT_TESTS)

check-unit: $(UNIT_BIN)
	$(Q)BUILD=$(BUILD) sh tests/run-tests.sh $(UNIT_BIN)

check-sim: $(SIMT_BIN)
	$(Q)BUILD=$(BUILD) sh tests/run-tests.sh $(SIMT_BIN)

check-integ: all $(INTEG_BIN) $(PROG_BIN) $(ADMINTEST_BIN)
	$(Q)BUILD=$(BUILD) sh tests/run-tests.sh $(INTEG_BIN) $(SHELL_TESTS)

# Tests against real servers started on loopback (each test starts its
# own and stops it by pid, also on failure); not part of make check.
check-servers: all $(PROG_BIN) spank
	$(Q)BUILD=$(BUILD) sh tests/run-tests.sh $(SERVER_TESTS)

# ASan+UBSan over the unit and simulated-driver suites and the tools; TSan
# over the same suites (the concurrency cases are in them). The preloaded
# .so is not sanitized inside foreign programs.
sanitize:
	$(Q)$(MAKE) --no-print-directory BUILD=build/asan \
	    SANFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	    OPT=-O1 check-unit check-sim
	$(Q)$(MAKE) --no-print-directory BUILD=build/tsan SANFLAGS="-fsanitize=thread" \
	    OPT=-O1 check-unit check-sim

bench: all $(BENCH_BIN) $(PROG_BIN)
	$(Q)BUILD=$(BUILD) sh tests/bench/run.sh

DEMO_ARGS ?=
demo: all
	$(Q)BUILD=$(BUILD) MODE=$(MODE) GROUP=$(GROUP) sh tools/demo.sh $(DEMO_ARGS)

# Without a GPU the suite prints SKIP and exits 77; for make that is
# success (the script itself keeps 77 for callers that count skips).
gpu-check: all
	$(Q)BUILD=$(BUILD) CUDA_HOME=$(CUDA_HOME) sh tests/gpu/run.sh check; \
	    rc=$$?; [ $$rc -eq 77 ] && exit 0; exit $$rc

gpu-bench: all
	$(Q)BUILD=$(BUILD) CUDA_HOME=$(CUDA_HOME) sh tests/gpu/run.sh bench; \
	    rc=$$?; [ $$rc -eq 77 ] && exit 0; exit $$rc

install: all $(if $(SPANK_H),install-spank)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin \
	    $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0755 $(SHIM_SO) $(DESTDIR)$(PREFIX)/lib/libgpumem.so
	install -m 0755 $(GPUMEM_BIN) $(DESTDIR)$(PREFIX)/bin/gpumem
	install -m 0755 $(TOP_BIN) $(DESTDIR)$(PREFIX)/bin/gpumem-top
	install -d $(DESTDIR)$(PREFIX)/lib/gpumem/sim
	install -m 0755 $(REPLAY_BIN) $(DESTDIR)$(PREFIX)/lib/gpumem/gpumem-replay
	install -m 0755 $(SIM_SO) $(DESTDIR)$(PREFIX)/lib/gpumem/sim/libcuda.so.1
	$(if $(filter $(EXPORTER_BIN),$(PROGRAMS)),install -m 0755 $(EXPORTER_BIN) $(DESTDIR)$(PREFIX)/bin/gpumem-exporter)
	install -m 0644 $(BUILD)/share/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 $(BUILD)/share/man7/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	install -m 0644 $(BUILD)/share/bash-completion/gpumem \
	    $(BUILD)/share/bash-completion/gpumem-top \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
