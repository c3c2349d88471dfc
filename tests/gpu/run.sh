#!/bin/sh
# tests/gpu/run.sh — the real-GPU suite and benchmarks (docs/testing.md).
#
#   sh tests/gpu/run.sh check   build the cases with nvcc, run each C case
#                               without and with the shim, then the framework
#                               cases (PyTorch, JAX, CuPy, NCCL, gpumem ps)
#   sh tests/gpu/run.sh bench   alloc+free pair latency (driver alone, shim
#                               pass-through, with a limit, static arena),
#                               cuMemGetInfo cost, a PyTorch training step
#   sh tests/gpu/run.sh build   build the programs only (needs nvcc, no GPU)
#
# Environment: BUILD (holds libgpumem.so and gpumem; programs go to
# $BUILD/gpu), CUDA_HOME (/usr/local/cuda), PYTHON (python3), OUT_DIR (bench
# results, default $BUILD/gpu/results), GPU_CASE_TIMEOUT (60 s per C case),
# GPU_PY_TIMEOUT (120 s per Python case), GPU_BUDGET (seconds for the whole
# mode: later cases are skipped past it; 300 check, 180 bench: the two
# together fit a device session of about 8 minutes).
#
# Output: one line per case, "PASS|FAIL|SKIP name: detail", a failing case's
# log indented below it, and "N passed, N failed, N skipped". Exit 0 when
# nothing failed, 1 when something did, 77 (one line saying why) without a
# GPU or without nvcc. Every case has its own timeout; logs are kept in
# $BUILD/gpu/log.
set -u

mode=${1:-check}
case $mode in
check | bench | build) ;;
*)
    echo "usage: sh tests/gpu/run.sh check|bench|build" >&2
    exit 2
    ;;
esac

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-python3}
NVCC=$CUDA_HOME/bin/nvcc
here=$(cd "$(dirname "$0")" && pwd)
case_timeout=${GPU_CASE_TIMEOUT:-60}
py_timeout=${GPU_PY_TIMEOUT:-120}
if [ "$mode" = bench ]; then budget=${GPU_BUDGET:-180}; else budget=${GPU_BUDGET:-300}; fi

# Limits: C cases run under 2 GiB, Python cases under 4 GiB.
c_limit=2G
c_bytes=2147483648
py_limit=4G
py_bytes=4294967296

# Nothing of the caller's shim settings leaks into a run.
unset LD_PRELOAD PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
for v in $(env | sed -n 's/^\(GPUMEM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

# ---- gates -----------------------------------------------------------------
if [ "$mode" != build ]; then
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "SKIP gpu: no GPU (nvidia-smi not found)"
        exit 77
    fi
    if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')" -eq 0 ]; then
        echo "SKIP gpu: no GPU (nvidia-smi -L lists none)"
        exit 77
    fi
fi
if [ ! -x "$NVCC" ]; then
    echo "SKIP gpu: no nvcc at $NVCC (set CUDA_HOME)"
    exit 77
fi

mkdir -p "$BUILD/gpu/log" || exit 1
BUILD=$(cd "$BUILD" && pwd)
gdir=$BUILD/gpu
SO=$BUILD/libgpumem.so
OUT_DIR=${OUT_DIR:-$gdir/results}
if [ "$mode" != build ] && [ ! -f "$SO" ]; then
    echo "FAIL gpu: $SO not found (build it first: make BUILD=$BUILD)"
    exit 1
fi

passed=0
failed=0
skipped=0
start_s=$(date +%s)

# ---- helpers ---------------------------------------------------------------
# limited SECONDS CMD...: run CMD, killed after SECONDS (exit 124/137).
limited() {
    secs=$1
    shift
    if command -v timeout >/dev/null 2>&1; then
        timeout -k 5 "$secs" "$@"
    else
        "$@"
    fi
}

elapsed() { echo $(($(date +%s) - start_s)); }

log_of() { echo "$gdir/log/$(echo "$1" | tr -c 'A-Za-z0-9_.-' '_').log"; }

# The detail of a case's closing line ("PASS name: detail" -> "detail").
detail_of() {
    grep -E '^(PASS|FAIL|SKIP) ' "$1" | tail -n 1 | sed -E 's/^(PASS|FAIL|SKIP) [^ ]*: //'
}

# A failing case's log without its passing checks (the whole log stays in
# $BUILD/gpu/log).
show_log() { grep -v '^  ok  ' "$1" | sed 's/^/    /' | tail -n "${2:-40}"; }

# run_case NAME SECONDS CMD...: run, print the result line, count it.
run_case() {
    name=$1
    secs=$2
    shift 2
    if [ "$(elapsed)" -ge "$budget" ]; then
        skipped=$((skipped + 1))
        echo "SKIP $name: the time budget of ${budget}s is spent"
        return 0
    fi
    log=$(log_of "$name")
    t0=$(date +%s)
    limited "$secs" "$@" >"$log" 2>&1
    rc=$?
    dt=$(($(date +%s) - t0))
    line=$(detail_of "$log")
    case $rc in
    0)
        passed=$((passed + 1))
        echo "PASS $name: ${line:-exit 0} (${dt}s)"
        ;;
    77)
        skipped=$((skipped + 1))
        echo "SKIP $name: ${line:-$(tail -n 1 "$log")}"
        ;;
    124 | 137)
        failed=$((failed + 1))
        echo "FAIL $name: timed out after ${secs}s"
        show_log "$log" 20
        ;;
    *)
        failed=$((failed + 1))
        echo "FAIL $name: ${line:-exit $rc}"
        show_log "$log" 60
        ;;
    esac
    return 0
}

# run_py NAME ALLOC_CONF SCRIPT ARGS...: a framework case, first without the
# shim (if that fails the environment is at fault: SKIP with its log), then
# under the shim with the Python limit.
run_py() {
    name=$1
    conf=$2
    script=$here/$3
    shift 3
    if [ "$(elapsed)" -ge "$budget" ]; then
        skipped=$((skipped + 1))
        echo "SKIP $name: the time budget of ${budget}s is spent"
        return 0
    fi
    if [ -n "$conf" ]; then
        set -- env PYTORCH_CUDA_ALLOC_CONF="$conf" "$PYTHON" "$script" "$@"
    else
        set -- env "$PYTHON" "$script" "$@"
    fi
    log=$(log_of "$name-noshim")
    limited "$py_timeout" "$@" >"$log" 2>&1
    rc=$?
    if [ "$rc" -eq 77 ]; then
        skipped=$((skipped + 1))
        echo "SKIP $name: $(detail_of "$log")"
        return 0
    fi
    if [ "$rc" -ne 0 ]; then
        skipped=$((skipped + 1))
        echo "SKIP $name: fails without the shim too (exit $rc), not a gpumem result"
        show_log "$log" 30
        return 0
    fi
    run_case "$name" "$py_timeout" env LD_PRELOAD="$SO" GPUMEM_LIMIT="$py_limit" \
        "$@" --expect-limit "$py_bytes"
}

# The machine, for the record (docs/benchmarks.md wants it with the results).
machine() {
    echo "machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total \
        --format=csv,noheader 2>/dev/null | head -n 1)"
    echo "cuda: $("$NVCC" --version | grep -i release | sed 's/.*release/release/')"
    echo "kernel: $(uname -sr), cpus: $(nproc 2>/dev/null || echo '?')"
    "$PYTHON" - <<'EOF' 2>/dev/null || echo "python: not found"
import importlib.metadata as m, platform
names = ("torch", "jax", "jaxlib", "cupy-cuda13x", "cupy-cuda12x", "nvidia-nccl-cu13")
have = []
for n in names:
    try:
        have.append(f"{n} {m.version(n)}")
    except Exception:
        pass
print("python: " + ", ".join([platform.python_version()] + have))
EOF
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
}

# ---- build -----------------------------------------------------------------
# The cases have no device code (the runtime and driver do all the work), so
# no -arch is needed: they run on any GPU the installed driver supports.
# build_one NAME SOURCE FLAGS...: in the background; up-to-date ones are kept.
build_one() {
    bin=$gdir/$1
    src=$here/$2
    shift 2
    if [ -x "$bin" ] && [ -z "$(find "$here" \( -name '*.cu' -o -name '*.h' \) \
        -newer "$bin")" ]; then
        echo 0 >"$bin.rc"
        return 0
    fi
    (
        "$NVCC" -O2 -std=c++17 -Xcompiler -Wall,-Wextra "$@" -o "$bin" "$src" \
            >"$bin.build.log" 2>&1
        echo $? >"$bin.rc"
    ) &
}

C_CASES="rt_malloc_shared rt_malloc_static rt_entry rt_async rt_managed rt_pitch rt_3d
rt_array rt_threads drv_direct drv_dlopen drv_vmm drv_contexts"

build_all() {
    drv="-L$CUDA_HOME/lib64/stubs"
    build_one rt_malloc_shared rt_malloc.cu -cudart shared \
        -Xlinker -rpath -Xlinker "$CUDA_HOME/lib64"
    build_one rt_malloc_static rt_malloc.cu
    build_one rt_entry rt_entry.cu
    build_one rt_async rt_async.cu
    build_one rt_managed rt_managed.cu
    build_one rt_pitch rt_pitch.cu
    build_one rt_3d rt_3d.cu
    build_one rt_array rt_array.cu
    build_one rt_threads rt_threads.cu -Xcompiler -pthread
    build_one drv_direct drv_direct.cu "$drv" -lcuda
    build_one drv_dlopen drv_dlopen.cu -ldl
    build_one drv_vmm drv_vmm.cu "$drv" -lcuda
    build_one drv_contexts drv_contexts.cu "$drv" -lcuda
    build_one bench_alloc bench_alloc.cu "$drv" -lcuda
    wait
    bad=0
    for b in $C_CASES bench_alloc; do
        if [ "$(cat "$gdir/$b.rc" 2>/dev/null)" != 0 ]; then
            bad=$((bad + 1))
            echo "FAIL build $b: nvcc failed"
            show_log "$gdir/$b.build.log" 30
        fi
    done
    echo "built $(echo "$C_CASES bench_alloc" | wc -w) programs into $gdir ($bad failed, $(elapsed)s)"
    return "$bad"
}

# ---- check -----------------------------------------------------------------
c_cases() {
    for b in $C_CASES; do
        if [ "$(cat "$gdir/$b.rc" 2>/dev/null)" != 0 ]; then
            failed=$((failed + 2))
            echo "FAIL $b: not built"
            continue
        fi
        run_case "$b" "$case_timeout" "$gdir/$b"
        run_case "$b+shim" "$case_timeout" env LD_PRELOAD="$SO" GPUMEM_LIMIT="$c_limit" \
            "$gdir/$b" --expect-limit "$c_bytes"
    done
}

# The JSON exit report of a run that filled its limit exactly (drv_direct's
# edge check): peak = limit. report_check.py runs it under the shim.
report_case() {
    run_case "exit_report" "$case_timeout" "$PYTHON" "$here/report_check.py" \
        --so "$SO" --limit "$c_limit" --bytes "$c_bytes" --report "$gdir/log/report.json" \
        -- "$gdir/drv_direct" --expect-limit "$c_bytes"
}

py_cases() {
    if ! limited 60 "$PYTHON" -c 'import sys' >/dev/null 2>&1; then
        skipped=$((skipped + 1))
        echo "SKIP python: $PYTHON not found"
        return 0
    fi
    # This round's cases first (they have not run on hardware yet), then
    # the ones of the first round.
    run_py "torch_nvml" "" torch_check.py nvml --gpumem "$BUILD/gpumem"
    run_py "torch_leak" "" torch_check.py leak --gpumem "$BUILD/gpumem"
    run_py "torch_steady" "" torch_check.py steady --gpumem "$BUILD/gpumem"
    run_py "torch_exporter" "" torch_check.py exporter --gpumem "$BUILD/gpumem"
    run_py "torch_visible" "" torch_check.py visible
    for conf in "" expandable_segments:True backend:cudaMallocAsync; do
        run_py "plan_replay${conf:+[$conf]}" "" plan_check.py replay --conf "$conf" \
            --gpumem "$BUILD/gpumem"
    done
    run_py "plan_fit" "" plan_check.py fit --gpumem "$BUILD/gpumem"
    run_py "torch_oom" "" torch_check.py oom
    run_py "torch_oom[expandable_segments]" "expandable_segments:True" torch_check.py oom
    run_py "torch_oom[cudaMallocAsync]" "backend:cudaMallocAsync" torch_check.py oom
    run_py "torch_nccl" "" torch_check.py nccl
    if "$BUILD/gpumem" help ps >/dev/null 2>&1 || "$BUILD/gpumem" ps --help >/dev/null 2>&1
    then
        run_py "gpumem_ps" "" torch_check.py ps --gpumem "$BUILD/gpumem"
        run_py "gpumem_ps[cudaMallocAsync]" "backend:cudaMallocAsync" \
            torch_check.py ps --gpumem "$BUILD/gpumem"
    else
        skipped=$((skipped + 1))
        echo "SKIP gpumem_ps: $BUILD/gpumem has no ps command yet ('gpumem help ps' fails)"
    fi
    run_py "jax_prealloc" "" jax_check.py prealloc
    run_py "cupy_oom" "" cupy_check.py oom
}

# ---- bench -----------------------------------------------------------------
# bench_run VARIANT REPEAT: one process of bench_alloc under that variant,
# its CSV lines prefixed with variant and repeat.
bench_run() {
    v=$1
    r=$2
    log=$gdir/log/bench_$v.log
    case $v in
    driver) set -- "$gdir/bench_alloc" ;;
    passthru) set -- env LD_PRELOAD="$SO" "$gdir/bench_alloc" ;;
    limit) set -- env LD_PRELOAD="$SO" GPUMEM_LIMIT=16G "$gdir/bench_alloc" ;;
    static) set -- env LD_PRELOAD="$SO" GPUMEM_MODE=static GPUMEM_LIMIT=8G \
        "$gdir/bench_alloc" --static ;;
    async_driver) set -- "$gdir/bench_alloc" --async ;;
    async_telemetry) set -- env LD_PRELOAD="$SO" GPUMEM_LIMIT=16G \
        "$gdir/bench_alloc" --async ;;
    async_limits) set -- env LD_PRELOAD="$SO" GPUMEM_LIMIT=16G GPUMEM_TELEMETRY=0 \
        "$gdir/bench_alloc" --async ;;
    esac
    limited 60 "$@" >"$log" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
        grep -E '^(pair|apair|getinfo),' "$log" | sed "s/^/$v,$r,/" >>"$OUT_DIR/alloc_raw.csv"
    fi
    return "$rc"
}

# bench_summary KIND "VARIANTS" "SIZES" GETINFO OUT: median per (kind,
# size, variant) of the raw CSV, the first variant the baseline; a table
# on stdout and OUT (CSV). GETINFO 1 adds the cuMemGetInfo row.
bench_summary() {
    awk -F, -v kind0="$1" -v vlist="$2" -v slist="$3" -v gi="$4" -v out="$5" '
    function med(k,    n, a, i, j, t) {
        if (!(k in vals)) return ""
        n = split(vals[k], a, " ")
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
                t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
            }
        cnt[k] = n
        return n % 2 ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function human(b) {
        if (b >= 1073741824) return b / 1073741824 " GiB"
        if (b >= 1048576) return b / 1048576 " MiB"
        if (b >= 1024) return b / 1024 " KiB"
        return b " B"
    }
    { k = $3 "," $4 "," $1; vals[k] = (k in vals) ? vals[k] " " $6 : $6 }
    END {
        nv = split(vlist, V, " ")
        ns = split(slist, S, " ")
        print "kind,size,variant,median_ns,runs" > out
        printf "%-13s", "size"
        for (j = 1; j <= nv; j++) printf " %21s", V[j]
        printf "\n"
        for (i = 1; i <= ns + gi; i++) {
            if (i <= ns) { kind = kind0; size = S[i]; label = human(S[i]) }
            else { kind = "getinfo"; size = 0; label = "cuMemGetInfo" }
            base = med(kind "," size "," V[1])
            printf "%-13s", label
            for (j = 1; j <= nv; j++) {
                k = kind "," size "," V[j]
                m = med(k)
                if (m == "") cell = "n/a"
                else if (j == 1 || base == "" || base == 0) cell = sprintf("%.2f us", m / 1000)
                else cell = sprintf("%.2f us %+6.1f%%", m / 1000, (m - base) * 100 / base)
                printf " %21s", cell
                if (m != "") print kind "," size "," V[j] "," m "," cnt[k] > out
            }
            printf "\n"
        }
    }' "$OUT_DIR/alloc_raw.csv"
}

# Median step time per label CONF/VARIANT (driver, shim), each shim one
# against the driver of its configuration.
torch_summary() {
    awk -F, '
    { v[$1] = ($1 in v) ? v[$1] " " $3 : $3; res[$1] = $6 }
    END {
        for (l in v) {
            n = split(v[l], a, " ")
            for (i = 2; i <= n; i++)
                for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
                    t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
                }
            m[l] = n % 2 ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
            runs[l] = n
        }
        for (l in m) {
            split(l, p, "/")
            base = p[1] "/driver"
            d = (p[2] != "driver" && (base in m)) ? \
                sprintf(" (%+.2f%% vs driver)", (m[l] - m[base]) * 100 / m[base]) : ""
            printf "torch step  %-24s median of %d runs: %.3f ms%s, max reserved %.0f MiB\n", \
                l, runs[l], m[l], d, res[l] / 1048576
        }
    }' "$OUT_DIR/torch_raw.csv" | sort
}

bench() {
    mkdir -p "$OUT_DIR" || exit 1
    machine | tee "$OUT_DIR/machine.txt"
    if [ "$(cat "$gdir/bench_alloc.rc" 2>/dev/null)" != 0 ]; then
        echo "FAIL bench: bench_alloc not built"
        exit 1
    fi
    rm -f "$OUT_DIR/alloc_raw.csv" "$OUT_DIR/torch_raw.csv"
    static_ok=1
    rounds=7
    echo "alloc+free pairs: $rounds rounds of driver/passthru/limit/static and"
    echo "async driver/telemetry/limits-only, interleaved"
    r=1
    while [ "$r" -le "$rounds" ]; do
        if [ "$(elapsed)" -ge "$budget" ]; then
            echo "note: time budget spent after $((r - 1)) rounds"
            break
        fi
        for v in driver passthru limit static async_driver async_telemetry async_limits; do
            [ "$v" = static ] && [ "$static_ok" -eq 0 ] && continue
            if ! bench_run "$v" "$r"; then
                if [ "$v" = static ]; then
                    static_ok=0
                    echo "static: n/a ($(tail -n 1 "$gdir/log/bench_static.log"))"
                else
                    failed=$((failed + 1))
                    echo "FAIL bench $v (round $r):"
                    show_log "$gdir/log/bench_$v.log" 20
                fi
            fi
        done
        r=$((r + 1))
    done
    if [ -s "$OUT_DIR/alloc_raw.csv" ]; then
        echo "alloc+free pair and cuMemGetInfo, median per process run (+/- vs driver alone):"
        bench_summary pair "driver passthru limit static" \
            "256 65536 2097152 67108864 1073741824" 1 "$OUT_DIR/alloc_summary.csv"
        echo "cuMemAllocAsync+cuMemFreeAsync pair on a warm pool (+/- vs driver alone; target under 5%):"
        bench_summary apair "async_driver async_telemetry async_limits" \
            "256 65536 2097152 67108864" 0 "$OUT_DIR/async_summary.csv"
        passed=$((passed + 1))
    fi

    if ! limited 120 "$PYTHON" -c 'import torch; assert torch.cuda.is_available()' \
        >/dev/null 2>&1; then
        skipped=$((skipped + 1))
        echo "SKIP torch step: torch does not import or sees no GPU"
    else
        echo "torch training step: 2 rounds of driver/shim (limit 16G), interleaved, for the"
        echo "default allocator, backend:cudaMallocAsync (target under 1%) and caching off (under 3%)"
        r=1
        while [ "$r" -le 2 ] && [ "$(elapsed)" -lt "$budget" ]; do
            for conf in default async nocache; do
                case $conf in
                default) cenv= ;;
                async) cenv=PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync ;;
                nocache) cenv=PYTORCH_NO_CUDA_MEMORY_CACHING=1 ;;
                esac
                for v in driver shim; do
                    log=$gdir/log/torch_step_${conf}_$v.log
                    if [ "$v" = driver ]; then set -- env $cenv "$PYTHON"; else
                        set -- env $cenv LD_PRELOAD="$SO" GPUMEM_LIMIT=16G "$PYTHON"
                    fi
                    if ! limited "$py_timeout" "$@" "$here/torch_bench.py" \
                        --out "$OUT_DIR/torch_raw.csv" --label "$conf/$v" --repeat "$r" \
                        >"$log" 2>&1; then
                        failed=$((failed + 1))
                        echo "FAIL torch step $conf/$v (round $r):"
                        show_log "$log" 20
                    fi
                done
            done
            r=$((r + 1))
        done
        if [ -s "$OUT_DIR/torch_raw.csv" ]; then
            torch_summary
            passed=$((passed + 1))
        fi
    fi
    echo "raw numbers: $OUT_DIR (alloc_raw.csv, alloc_summary.csv, async_summary.csv, torch_raw.csv, machine.txt)"
}

# ---- main ------------------------------------------------------------------
build_all
built=$?
if [ "$mode" = build ]; then
    [ "$built" -eq 0 ]
    exit
fi
failed=$((failed + built))
if [ "$mode" = check ]; then
    machine
    c_cases
    report_case
    py_cases
else
    bench
fi
echo "$passed passed, $failed failed, $skipped skipped ($(elapsed)s)"
[ "$failed" -eq 0 ]
