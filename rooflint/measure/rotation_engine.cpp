// The rotation engine: Nsight Compute's counters without its replays, for a program that
// repeats a step (measure/rotation.py builds it; the bootstrap drives it, by ctypes, from
// the program's optimizer steps). CUPTI's range profiler runs in user replay, and each pass
// of the counter configuration is taken on the next step, so no kernel is replayed and no
// memory saved or restored (what Nsight Compute pays for each profiled launch:
// docs/history.md, issue 50). Before each measured launch (a CUPTI driver-API callback) a
// kernel reading twice the L2's size is launched on its stream, so that each starts from an
// L2 holding none of its data, as under ncu --cache-control all. Each launch's name and
// shape are recorded per pass, so that a pass that launched other kernels is refused
// (formats/rotation_records.py reads what this writes).
//
// Two ways to range: with no kernels chosen, automatic ranges, every kernel launched while
// the profiler runs a range of its own (the flushes' too); with kernels chosen (each a
// regular expression on its mangled name, as Nsight Compute is asked, and its grid and
// block), a user range pushed around the first launch of each in a pass alone (its flush
// before it, outside), named by the launch's place in the pass, counted from 0: a range
// costs about 1.5-1.9 ms a pass whatever it holds, so ranging only the launches pass 2
// reads is what makes it cheap. A
// user range's gpu__time_duration is the range's (its push and pop add 7-20 us: H200,
// 2026-11-30), so the chosen launches of the first pass are timed by CUPTI's activity
// records of their kernels (after their flushes, as ranged), and that time is written for
// them.
//
// rl_begin(metrics, max_ranges, flush, chosen) -> passes (chosen: a line a kernel,
// "pattern<TAB>gx,gy,gz<TAB>bx,by,bz", or empty); rl_start(); rl_stop() -> 1 once all
// passes are submitted; rl_finish(path) -> ranges: path gets the SM's limits, the L2's size
// and the clocks, then a line a range (index, name, counters); path.launches a line a
// launch of each pass (pass, demangled name, grid, block, dynamic shared bytes). Each
// kernel's registers and shared memory come from pass 1's trace: cuFuncGetAttribute on the
// launch's function inside the callback answers CUDA_ERROR_INVALID_HANDLE for PyTorch's
// kernels (H200, 2026-11-30).
#include <cuda.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_profiler_host.h>
#include <cupti.h>
#include <cupti_activity.h>
#include <cxxabi.h>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <mutex>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

static CUpti_RangeProfiler_Object* g_object = nullptr;
static CUpti_Profiler_Host_Object* g_host = nullptr;
static std::vector<uint8_t> g_config, g_counters;
static std::vector<std::string> g_names;
static std::vector<const char*> g_cnames;
static char g_error[1024];

#define CHECK(call) do { CUptiResult r_ = (call); if (r_ != CUPTI_SUCCESS) { \
    const char* s_ = ""; cuptiGetResultString(r_, &s_); \
    snprintf(g_error, sizeof g_error, "%s: %s", #call, s_); return -1; } } while (0)

// The L2 flush: a kernel that reads a buffer of twice the L2's size before each of the
// program's launches, so that each starts as under Nsight Compute's --cache-control all
// (its reads from DRAM, the dirty lines of the kernels before it written back in the
// flush's own range, not in its).
static const char* FLUSH_PTX = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry rl_flush(.param .u64 buf, .param .u64 n, .param .u64 sink)
{
  .reg .pred p<3>;
  .reg .b32 r<12>;
  .reg .b64 rd<10>;
  ld.param.u64 rd1, [buf];
  ld.param.u64 rd2, [n];
  ld.param.u64 rd3, [sink];
  cvta.to.global.u64 rd1, rd1;
  cvta.to.global.u64 rd3, rd3;
  mov.u32 r1, %ctaid.x;
  mov.u32 r2, %ntid.x;
  mov.u32 r3, %tid.x;
  mad.lo.u32 r4, r1, r2, r3;
  cvt.u64.u32 rd4, r4;
  mov.u32 r5, %nctaid.x;
  mul.lo.u32 r6, r5, r2;
  cvt.u64.u32 rd5, r6;
  mov.u32 r7, 0;
LOOP:
  setp.ge.u64 p1, rd4, rd2;
  @p1 bra DONE;
  shl.b64 rd6, rd4, 4;
  add.u64 rd7, rd1, rd6;
  ld.global.v4.u32 {r8, r9, r10, r11}, [rd7];
  xor.b32 r7, r7, r8;
  xor.b32 r7, r7, r9;
  xor.b32 r7, r7, r10;
  xor.b32 r7, r7, r11;
  add.u64 rd4, rd4, rd5;
  bra LOOP;
DONE:
  setp.ne.u32 p2, r7, 0x9e3779b9;
  @p2 bra END;
  st.global.u32 [rd3], r7;
END:
  ret;
}
)";
// The launch callbacks' parameters, as the driver API's signatures lay them out
// (generated_cuda_meta.h's, which will not compile against CUDA 13's cuda.h alone).
struct LaunchParams { CUfunction f; unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                      blockDimZ, sharedMemBytes; CUstream hStream; void** kernelParams; void** extra; };
struct LaunchExParams { const CUlaunchConfig* config; CUfunction f; void** kernelParams; void** extra; };
static CUfunction g_flush = nullptr;
static CUdeviceptr g_flush_buf = 0, g_sink = 0;
static size_t g_flush_n = 0;
static int g_flush_blocks = 0;
static bool g_flushing = false;       // set by rl_begin(flush=1)
static thread_local bool t_inside = false;
static CUpti_SubscriberHandle g_sub = nullptr;
struct Launch { std::string name; unsigned gx, gy, gz, bx, by, bz, shared; };
static std::vector<std::vector<Launch>> g_passes(1);
static std::mutex g_passes_lock;      // autograd's thread launches the backward's kernels
struct Chosen { std::regex pattern; unsigned grid[3], block[3]; };
static std::vector<Chosen> g_chosen;  // empty: every launch
static std::vector<bool> g_ranged;    // which of g_chosen this pass has ranged
static std::map<std::string, std::vector<size_t>> g_named;   // mangled name -> g_chosen it matches
static thread_local bool t_pushed = false;
static thread_local uint32_t t_runtime = 0;    // the runtime API launch a driver launch is inside
static bool g_timing = false;         // the first pass's chosen launches are being timed
static std::mutex g_time_lock;
struct Timed { size_t place; unsigned grid[3], block[3]; uint64_t start = 0, ns = 0; };
static std::map<uint32_t, Timed> g_launches_timed;   // by the launch's correlation id

static std::string demangled(const char* name) {
    int status = 0;
    char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string text = status == 0 && readable ? readable : name;
    std::free(readable);
    return text;
}

static std::string mangled_name(const char* symbol, CUfunction f) {
    const char* n = symbol;
    if (!n && cuFuncGetName(&n, f) != CUDA_SUCCESS) n = nullptr;
    return n ? n : "?";
}

// Whether a launch is measured: every one without kernels chosen, else the first of a
// chosen kernel this pass. Under g_passes_lock.
static bool chosen(const std::string& mangled, const unsigned grid[3], const unsigned block[3]) {
    if (g_chosen.empty()) return true;
    auto named = g_named.find(mangled);
    if (named == g_named.end()) {
        std::vector<size_t> matching;
        for (size_t i = 0; i < g_chosen.size(); ++i)
            if (std::regex_search(mangled, g_chosen[i].pattern)) matching.push_back(i);
        named = g_named.emplace(mangled, matching).first;
    }
    for (size_t i : named->second) {
        const Chosen& c = g_chosen[i];
        if (!g_ranged[i] && std::equal(grid, grid + 3, c.grid) && std::equal(block, block + 3, c.block)) {
            g_ranged[i] = true;
            return true;
        }
    }
    return false;
}

// Records a launch: its place in its pass, and whether it is measured.
static std::pair<size_t, bool> record(const char* symbol, CUfunction f, const unsigned grid[3],
                                      const unsigned block[3], unsigned shared) {
    std::string mangled = mangled_name(symbol, f);
    std::lock_guard<std::mutex> held(g_passes_lock);
    g_passes.back().push_back({demangled(mangled.c_str()), grid[0], grid[1], grid[2], block[0],
                               block[1], block[2], shared});
    return {g_passes.back().size() - 1, chosen(mangled, grid, block)};
}

static void flush_on(CUstream stream) {
    void* args[] = {&g_flush_buf, &g_flush_n, &g_sink};
    cuLaunchKernel(g_flush, g_flush_blocks, 1, 1, 256, 1, 1, 0, stream, args, nullptr);
}

// A measured launch: flushed before, then (where kernels are chosen) ranged, and timed in
// the first pass.
static void measure(std::pair<size_t, bool> launch, const unsigned grid[3], const unsigned block[3],
                    CUstream stream, uint32_t correlation) {
    auto [place, measured] = launch;
    if (!measured) return;
    if (g_flushing) flush_on(stream);
    if (g_chosen.empty()) return;                       // automatic ranges
    if (g_timing) {      // the kernel's record carries the runtime call's id, or the driver's
        std::lock_guard<std::mutex> held(g_time_lock);
        for (uint32_t id : {correlation, t_runtime}) {
            if (!id) continue;
            Timed& timed = g_launches_timed[id];
            timed.place = place;
            std::copy(grid, grid + 3, timed.grid);
            std::copy(block, block + 3, timed.block);
        }
    }
    char name[32];
    snprintf(name, sizeof name, "%zu", place);
    CUpti_RangeProfiler_PushRange_Params push{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
    push.pRangeProfilerObject = g_object;
    push.pRangeName = name;
    t_pushed = cuptiRangeProfilerPushRange(&push) == CUPTI_SUCCESS;
}

static void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                               const void* data) {
    auto* info = static_cast<const CUpti_CallbackData*>(data);
    if (t_inside) return;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        t_runtime = info->callbackSite == CUPTI_API_ENTER ? info->correlationId : 0;
        return;
    }
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    if (info->callbackSite == CUPTI_API_EXIT) {
        if (t_pushed) {
            CUpti_RangeProfiler_PopRange_Params pop{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
            pop.pRangeProfilerObject = g_object;
            cuptiRangeProfilerPopRange(&pop);
            t_pushed = false;
        }
        return;
    }
    t_inside = true;
    if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
        auto* p = static_cast<const LaunchParams*>(info->functionParams);
        const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
        const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
        measure(record(info->symbolName, p->f, grid, block, p->sharedMemBytes), grid, block,
                p->hStream, info->correlationId);
    } else if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
        auto* p = static_cast<const LaunchExParams*>(info->functionParams);
        const CUlaunchConfig* c = p->config;
        const unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};
        const unsigned block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
        measure(record(info->symbolName, p->f, grid, block, c->sharedMemBytes), grid, block,
                c->hStream, info->correlationId);
    }
    t_inside = false;
}

static int set_up_flush(CUdevice dev) {
    CUmodule module;
    if (cuModuleLoadData(&module, FLUSH_PTX) != CUDA_SUCCESS ||
        cuModuleGetFunction(&g_flush, module, "rl_flush") != CUDA_SUCCESS) {
        snprintf(g_error, sizeof g_error, "flush kernel did not load"); return -1; }
    int l2 = 0, sms = 0;
    cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    size_t bytes = 2 * (size_t)l2;
    g_flush_n = bytes / 16;
    g_flush_blocks = sms * 4;
    if (cuMemAlloc(&g_flush_buf, bytes) != CUDA_SUCCESS || cuMemAlloc(&g_sink, 4) != CUDA_SUCCESS) {
        snprintf(g_error, sizeof g_error, "flush buffer not allocated"); return -1; }
    cuMemsetD8(g_flush_buf, 0, bytes);
    cuCtxSynchronize();
    return 0;
}

static int subscribe() {
    CHECK(cuptiSubscribe(&g_sub, (CUpti_CallbackFunc)on_launch, nullptr));
    CUpti_CallbackId ids[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};
    for (auto id : ids) CHECK(cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, id));
    CUpti_CallbackId runtime[] = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060};
    for (auto id : runtime) CHECK(cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API, id));
    return 0;
}

static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* most) {
    *size = 8 << 20;
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
    *most = 0;
}

static void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* record = nullptr;
    std::lock_guard<std::mutex> held(g_time_lock);
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
        auto* kernel = reinterpret_cast<CUpti_ActivityKernel10*>(record);
        auto timed = g_launches_timed.find(kernel->correlationId);
        if (timed == g_launches_timed.end()) continue;
        // the flush launched in the launch's callback shares its correlation id: the
        // launch's kernel is the one at its shape that ran last
        Timed& t = timed->second;
        const unsigned grid[3] = {(unsigned)kernel->gridX, (unsigned)kernel->gridY, (unsigned)kernel->gridZ};
        const unsigned block[3] = {(unsigned)kernel->blockX, (unsigned)kernel->blockY, (unsigned)kernel->blockZ};
        if (std::equal(grid, grid + 3, t.grid) && std::equal(block, block + 3, t.block) &&
            kernel->start >= t.start) {
            t.start = kernel->start;
            t.ns = kernel->end - kernel->start;
        }
    }
    std::free(buffer);
}

extern "C" const char* rl_error() { return g_error; }

extern "C" int rl_begin(const char* metrics_csv, int max_ranges, int flush, const char* chosen) {
    std::stringstream in(metrics_csv);
    std::string m;
    while (std::getline(in, m, ',')) if (!m.empty()) g_names.push_back(m);
    for (auto& n : g_names) g_cnames.push_back(n.c_str());
    std::stringstream lines(chosen);
    std::string line;
    while (std::getline(lines, line)) {
        std::stringstream cells(line);
        std::string pattern, grid, block;
        if (!std::getline(cells, pattern, '\t') || !std::getline(cells, grid, '\t') ||
            !std::getline(cells, block, '\t')) continue;
        Chosen c{std::regex(), {0, 0, 0}, {0, 0, 0}};
        try {
            c.pattern = std::regex(pattern);
        } catch (const std::regex_error&) {
            snprintf(g_error, sizeof g_error, "chosen kernel's pattern unreadable: %.60s", pattern.c_str());
            return -1;
        }
        if (sscanf(grid.c_str(), "%u,%u,%u", &c.grid[0], &c.grid[1], &c.grid[2]) != 3 ||
            sscanf(block.c_str(), "%u,%u,%u", &c.block[0], &c.block[1], &c.block[2]) != 3) {
            snprintf(g_error, sizeof g_error, "chosen kernel's shape unreadable: %.60s", line.c_str());
            return -1;
        }
        g_chosen.push_back(c);
    }
    g_ranged.assign(g_chosen.size(), false);
    CUcontext ctx = nullptr;
    if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) { snprintf(g_error, sizeof g_error, "no current context"); return -1; }
    CUdevice dev;
    cuCtxGetDevice(&dev);
    g_flushing = flush != 0;
    if (g_flushing && set_up_flush(dev) < 0) return -1;
    if (subscribe() < 0) return -1;
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CHECK(cuptiProfilerInitialize(&init));
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = (size_t)dev;
    CHECK(cuptiDeviceGetChipName(&chip));
    CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = ctx;
    CHECK(cuptiProfilerGetCounterAvailability(&avail));
    std::vector<uint8_t> image(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = image.data();
    CHECK(cuptiProfilerGetCounterAvailability(&avail));
    CUpti_Profiler_Host_Initialize_Params hi{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = chip.pChipName;
    hi.pCounterAvailabilityImage = image.data();
    CHECK(cuptiProfilerHostInitialize(&hi));
    g_host = hi.pHostObject;
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = g_host;
    add.ppMetricNames = g_cnames.data();
    add.numMetrics = g_cnames.size();
    CHECK(cuptiProfilerHostConfigAddMetrics(&add));
    CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = g_host;
    CHECK(cuptiProfilerHostGetConfigImageSize(&size));
    g_config.resize(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params get{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    get.pHostObject = g_host;
    get.configImageSize = g_config.size();
    get.pConfigImage = g_config.data();
    CHECK(cuptiProfilerHostGetConfigImage(&get));
    CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    passes.configImageSize = g_config.size();
    passes.pConfigImage = g_config.data();
    CHECK(cuptiProfilerHostGetNumOfPasses(&passes));
    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    enable.ctx = ctx;
    CHECK(cuptiRangeProfilerEnable(&enable));
    g_object = enable.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params cds{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    cds.pRangeProfilerObject = g_object;
    cds.pMetricNames = g_cnames.data();
    cds.numMetrics = g_cnames.size();
    cds.maxNumOfRanges = max_ranges;
    cds.maxNumRangeTreeNodes = max_ranges;
    CHECK(cuptiRangeProfilerGetCounterDataSize(&cds));
    g_counters.assign(cds.counterDataSize, 0);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci{CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pRangeProfilerObject = g_object;
    ci.counterDataSize = g_counters.size();
    ci.pCounterData = g_counters.data();
    CHECK(cuptiRangeProfilerCounterDataImageInitialize(&ci));
    CUpti_RangeProfiler_SetConfig_Params sc{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = g_object;
    sc.configSize = g_config.size();
    sc.pConfig = g_config.data();
    sc.counterDataImageSize = g_counters.size();
    sc.pCounterDataImage = g_counters.data();
    sc.range = g_chosen.empty() ? CUPTI_AutoRange : CUPTI_UserRange;
    sc.replayMode = CUPTI_UserReplay;
    sc.maxRangesPerPass = max_ranges;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    CHECK(cuptiRangeProfilerSetConfig(&sc));
    if (!g_chosen.empty()) {
        CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
        CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        g_timing = true;
    }
    return (int)passes.numOfPasses;
}

extern "C" int rl_start() {
    CUpti_RangeProfiler_Start_Params p{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = g_object;
    CHECK(cuptiRangeProfilerStart(&p));
    return 0;
}

// 1 once every pass has been submitted, 0 while passes remain, -1 on error.
extern "C" int rl_stop() {
    CUpti_RangeProfiler_Stop_Params p{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = g_object;
    CHECK(cuptiRangeProfilerStop(&p));
    if (g_timing) {
        g_timing = false;
        CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    }
    std::lock_guard<std::mutex> held(g_passes_lock);
    g_passes.emplace_back();
    g_ranged.assign(g_chosen.size(), false);
    return p.isAllPassSubmitted ? 1 : 0;
}

// Each chosen place's duration in ns, from the first pass's records (none where unchosen).
static std::map<size_t, double> timed_places() {
    std::map<size_t, double> found;
    if (g_chosen.empty()) return found;
    cuptiActivityFlushAll(1);
    std::lock_guard<std::mutex> held(g_time_lock);
    for (auto& [correlation, timed] : g_launches_timed)
        if (timed.ns) found[timed.place] = (double)timed.ns;
    return found;
}

// Decodes, writes one line a range (index, name, then each metric's value) to path.
extern "C" int rl_finish(const char* path) {
    CUpti_RangeProfiler_DecodeData_Params d{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    d.pRangeProfilerObject = g_object;
    CHECK(cuptiRangeProfilerDecodeData(&d));
    CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = g_counters.data();
    info.counterDataImageSize = g_counters.size();
    CHECK(cuptiRangeProfilerGetCounterDataInfo(&info));
    std::map<size_t, double> timed = timed_places();
    size_t duration = g_names.size();
    for (size_t i = 0; i < g_names.size(); ++i)
        if (g_names[i] == "gpu__time_duration.sum") duration = i;
    FILE* out = fopen(path, "w");
    if (!out) { snprintf(g_error, sizeof g_error, "cannot write %s", path); return -1; }
    CUdevice dev;
    cuCtxGetDevice(&dev);
    int sm[9] = {0};
    const CUdevice_attribute attributes[9] = {
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
        CU_DEVICE_ATTRIBUTE_CLOCK_RATE,                 // kHz, as Nsight Compute prints it
        CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE};
    for (int i = 0; i < 9; ++i) cuDeviceGetAttribute(&sm[i], attributes[i], dev);
    fprintf(out, "# sm registers=%d threads=%d blocks=%d shared=%d reserved=%d sms=%d l2=%d "
            "clock=%d memclock=%d\n", sm[0], sm[1], sm[2], sm[3], sm[4], sm[5], sm[6], sm[7], sm[8]);
    fprintf(out, "# dropped %zu\nrange\tname", d.numOfRangeDropped);
    for (auto& n : g_names) fprintf(out, "\t%s", n.c_str());
    fprintf(out, "\n");
    std::vector<double> values(g_names.size());
    for (size_t i = 0; i < info.numTotalRanges; ++i) {
        CUpti_Profiler_Host_GetRangeName_Params rn{CUpti_Profiler_Host_GetRangeName_Params_STRUCT_SIZE};
        rn.pCounterDataImage = g_counters.data();
        rn.counterDataImageSize = g_counters.size();
        rn.rangeIndex = i;
        rn.delimiter = "/";
        CHECK(cuptiProfilerHostGetRangeName(&rn));
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
        ev.pHostObject = g_host;
        ev.pCounterDataImage = g_counters.data();
        ev.counterDataImageSize = g_counters.size();
        ev.rangeIndex = i;
        ev.ppMetricNames = g_cnames.data();
        ev.numMetrics = g_cnames.size();
        ev.pMetricValues = values.data();
        CHECK(cuptiProfilerHostEvaluateToGpuValues(&ev));
        const char* name = rn.pRangeName ? rn.pRangeName : "";
        if (!g_chosen.empty() && duration < values.size()) {   // the kernel's, not the range's
            auto found = timed.find(std::strtoul(name, nullptr, 10));
            values[duration] = found == timed.end() ? NAN : found->second;
        }
        fprintf(out, "%zu\t%s", i, name);
        for (double v : values) fprintf(out, "\t%.6g", v);
        fprintf(out, "\n");
    }
    fclose(out);
    std::string launches = std::string(path) + ".launches";
    FILE* l = fopen(launches.c_str(), "w");
    for (size_t p = 0; p < g_passes.size(); ++p)
        for (auto& x : g_passes[p])
            fprintf(l, "%zu\t%s\t%u,%u,%u\t%u,%u,%u\t%u\n", p, x.name.c_str(), x.gx, x.gy,
                    x.gz, x.bx, x.by, x.bz, x.shared);
    fclose(l);
    cuptiUnsubscribe(g_sub);
    CUpti_RangeProfiler_Disable_Params dis{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    dis.pRangeProfilerObject = g_object;
    CHECK(cuptiRangeProfilerDisable(&dis));
    CUpti_Profiler_Host_Deinitialize_Params hd{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    hd.pHostObject = g_host;
    CHECK(cuptiProfilerHostDeinitialize(&hd));
    return (int)info.numTotalRanges;
}
