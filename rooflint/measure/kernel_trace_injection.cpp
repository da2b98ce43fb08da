// Pass 1 of `rooflint profile` for a program that is not PyTorch's: every kernel's start,
// end, grid and block from CUPTI's activity records, at the program's own speed.
//
// Built by measure/kernel_trace.py with the toolkit's nvcc, against the toolkit's CUPTI;
// loaded into the program by the CUDA driver (CUDA_INJECTION64_PATH), which calls
// InitializeInjection as the program initialises CUDA. Each process writes its own file,
// ROOFLINT_KERNEL_TRACE/kernels.PID.tsv, read by formats/kernel_records.py:
//   rooflint-kernel-trace  1  PID                         first, so a loaded library shows
//   K  start_ns  end_ns  device  stream  gx gy gz  bx by bz  correlation  name   a launch
//   D  device  SMs  memory_bytes  cc_major  cc_minor  name                  a device used
//   L  records CUPTI dropped                                     last, so a finished run shows
//   E  why CUPTI recorded nothing
// KERNEL_RECORD (a -D of the build) names the kernel record of this toolkit's CUPTI: the
// layout its library writes.
#include <cupti.h>
#include <cuda.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <set>
#include <string>

namespace {

constexpr size_t BUFFER_BYTES = 8 << 20;
std::FILE* out = nullptr;
std::mutex writing;
std::set<unsigned> devices_used;
size_t dropped = 0;

std::string demangled(const char* name) {
  int status = 0;
  char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string text = status == 0 && readable ? readable : name;
  std::free(readable);
  return text;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, BUFFER_BYTES));
  *size = *buffer ? BUFFER_BYTES : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer,
                               size_t, size_t valid) {
  std::lock_guard<std::mutex> hold(writing);
  CUpti_Activity* record = nullptr;
  while (out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    auto* k = reinterpret_cast<const KERNEL_RECORD*>(record);
    devices_used.insert(k->deviceId);
    std::fprintf(out, "K\t%llu\t%llu\t%u\t%u\t%d\t%d\t%d\t%d\t%d\t%d\t%u\t%s\n",
                 (unsigned long long)k->start, (unsigned long long)k->end, k->deviceId,
                 k->streamId, k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
                 k->correlationId, demangled(k->name ? k->name : "?").c_str());
  }
  size_t lost = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &lost) == CUPTI_SUCCESS) {
    dropped += lost;
  }
  std::free(buffer);
}

// The devices' attributes, from the driver the program already loaded (an atexit handler
// may not link it anew).
void write_devices() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!driver) return;
  auto get = reinterpret_cast<CUresult (*)(CUdevice*, int)>(dlsym(driver, "cuDeviceGet"));
  auto name = reinterpret_cast<CUresult (*)(char*, int, CUdevice)>(
      dlsym(driver, "cuDeviceGetName"));
  auto attribute = reinterpret_cast<CUresult (*)(int*, CUdevice_attribute, CUdevice)>(
      dlsym(driver, "cuDeviceGetAttribute"));
  auto memory = reinterpret_cast<CUresult (*)(size_t*, CUdevice)>(
      dlsym(driver, "cuDeviceTotalMem_v2"));
  if (get && name && attribute && memory) {
    for (unsigned ordinal : devices_used) {
      CUdevice device;
      char text[256] = "";
      int sms = 0, major = 0, minor = 0;
      size_t bytes = 0;
      if (get(&device, static_cast<int>(ordinal)) != CUDA_SUCCESS) continue;
      name(text, sizeof text, device);
      attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
      attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
      attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
      memory(&bytes, device);
      std::fprintf(out, "D\t%u\t%d\t%zu\t%d\t%d\t%s\n", ordinal, sms, bytes, major, minor,
                   text);
    }
  }
  dlclose(driver);
}

void finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> hold(writing);
  write_devices();
  std::fprintf(out, "L\t%zu\n", dropped);
  std::fclose(out);
  out = nullptr;
}

}  // namespace

extern "C" int InitializeInjection(void) {
  const char* folder = std::getenv("ROOFLINT_KERNEL_TRACE");
  if (!folder || out) return 1;
  std::string path = std::string(folder) + "/kernels." + std::to_string(getpid()) + ".tsv";
  out = std::fopen(path.c_str(), "w");
  if (!out) return 1;
  // the process, its rank as its launcher set it (torchrun's RANK, Open MPI's, MPICH's and
  // PMIx's, Slurm's: formats/ranks.py's RANK_VARIABLES), and the host: ranks profiled on
  // several machines merge by these
  const char* rank = nullptr;
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                           "SLURM_PROCID"}) {
    if ((rank = std::getenv(name))) break;
  }
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::fprintf(out, "rooflint-kernel-trace\t1\t%d\t%s\t%s\n", static_cast<int>(getpid()),
               rank && *rank ? rank : "-", host);
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(out, "E\tCUPTI refused the kernel activity\n");
    std::fclose(out);
    out = nullptr;
    return 1;
  }
  std::atexit(finish);
  return 1;
}
