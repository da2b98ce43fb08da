"""The nvcc path (rooflint.measure.build) without a GPU: a committed cubin for symbol
reading and name matching; real nvcc builds where nvcc is installed."""

import shutil
from pathlib import Path

import pytest

from rooflint.formats import compile_options
from rooflint.measure import build

CUBIN = Path(__file__).parents[1] / "fixtures" / "cubin"
needs_demangler = pytest.mark.skipif(build._demangler() is None, reason="no c++filt")
needs_nvcc = pytest.mark.skipif(build.find_nvcc() is None, reason="no nvcc")


def test_kernel_symbols_are_the_cubins_entries_only():
    symbols = build.kernel_symbols((CUBIN / "kernels.cubin").read_bytes())
    assert sorted(symbols) == ["_Z5plainiPf", "_Z5scaleILj128EEviPKfPf",
                               "_ZN8tutorial12in_namespaceEPf", "c_linkage"]  # no helper()


def test_a_file_that_is_not_a_cubin_is_refused():
    with pytest.raises(build.BuildError, match="not a 64-bit ELF"):
        build.kernel_symbols(b"//  PTX text, not a cubin")


@needs_demangler
@pytest.mark.parametrize("entry, symbol", [
    ("plain", "_Z5plainiPf"),                          # C++ linkage, as written
    ("scale<128>", "_Z5scaleILj128EEviPKfPf"),         # unsigned template argument
    ("scale< 128u >", "_Z5scaleILj128EEviPKfPf"),
    ("c_linkage", "c_linkage"),
    ("tutorial::in_namespace", "_ZN8tutorial12in_namespaceEPf"),
])
def test_entries_are_found_by_the_name_in_the_source(entry, symbol):
    symbols = build.kernel_symbols((CUBIN / "kernels.cubin").read_bytes())
    assert build.match_entries([entry], symbols, CUBIN / "kernels.cu") == {entry: symbol}


@needs_demangler
@pytest.mark.parametrize("entry", ["helper", "scale<64>", "in_namespace", "plian"])
def test_an_entry_not_in_the_cubin_lists_the_kernels_it_has(entry):
    symbols = build.kernel_symbols((CUBIN / "kernels.cubin").read_bytes())
    with pytest.raises(build.BuildError) as error:
        build.match_entries([entry], symbols, CUBIN / "kernels.cu")
    assert str(error.value) == (f"entry '{entry}' is not a kernel in kernels.cu; its kernels: "
                                "c_linkage, plain, scale<128u>, tutorial::in_namespace")


@pytest.mark.parametrize("signature, name", [
    ("void sgemm<32, 4>(int, float const*)", "sgemm<32, 4>"),
    ("plain(int, float*)", "plain"),
    ("void ns::k<(char)65>(float*)", "ns::k<(char)65>"),
])
def test_function_names_drop_return_type_and_parameters(signature, name):
    assert build._function_name(signature) == name


def test_kernels_in_source_reads_the_file_and_its_headers(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "k.cuh").write_text(
        "template <int B> __global__ void __launch_bounds__(256) tiled(float* a) {}\n")
    (tmp_path / "main.cu").write_text('#include "inc/k.cuh"\n'
                                      'extern "C" __global__ void first(int n) {}\n'
                                      "__device__ void not_a_kernel() {}\n")
    assert build.kernels_in_source(tmp_path / "main.cu") == ["first", "tiled"]


def test_included_files_follow_quotes_beside_the_includer_then_include_dirs(tmp_path):
    for name, text in {"src/main.cu": '#include "kernels.cuh"\n#include <cstdio>\n',
                       "src/kernels.cuh": '#include "kernels/a.cuh"\n#include "common.h"\n',
                       "src/kernels/a.cuh": '#include "../kernels.cuh"\n',   # a cycle
                       "include/common.h": "", "unused.cuh": ""}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = build.included_files(tmp_path / "src/main.cu", [tmp_path / "include"])
    assert found == {(tmp_path / p).resolve() for p in
                     ("src/kernels.cuh", "src/kernels/a.cuh", "include/common.h")}


def test_include_dirs_reads_every_spelling():
    options = ["-I/a", "-I", "/b", "--include-path=/c", "--use_fast_math", "-DX=1"]
    assert compile_options.include_dirs(options) == [Path("/a"), Path("/b"), Path("/c")]


def test_no_nvcc_is_one_line_saying_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "find_nvcc", lambda: None)
    (tmp_path / "k.cu").write_text("#include <cstdio>\n")
    with pytest.raises(build.BuildError, match=r"k.cu needs nvcc, which was not found; "
                                               r"install the CUDA toolkit"):
        build.build(tmp_path / "k.cu", ["k"], [], "sm_90", tmp_path / "cache")


@pytest.fixture
def family(tmp_path):
    """Kernels as a tutorial writes them for nvcc: host headers, uint, C++ linkage."""
    shutil.copy(CUBIN / "kernels.cu", tmp_path / "impl.cuh")
    (tmp_path / "wrapper.cu").write_text('#include "impl.cuh"\n')
    return tmp_path


@needs_nvcc
@needs_demangler
def test_nvcc_builds_an_unmodified_source_and_instantiates_template_entries(family):
    cubin = build.build(family / "wrapper.cu", ["plain", "scale<32>", "scale<128>"], [],
                        "sm_90", family / "cache")
    assert cubin.symbols == {"plain": "_Z5plainiPf", "scale<32>": "_Z5scaleILj32EEviPKfPf",
                             "scale<128>": "_Z5scaleILj128EEviPKfPf"}
    assert cubin.compiler.startswith("nvcc ") and cubin.path.parent == family / "cache"


@needs_nvcc
@needs_demangler
def test_the_cache_is_reused_until_an_included_header_changes(family):
    def built():
        return build.build(family / "wrapper.cu", ["plain"], [], "sm_90", family / "cache").path

    first = built()
    stamp = first.stat().st_mtime_ns
    assert built() == first and first.stat().st_mtime_ns == stamp
    (family / "impl.cuh").write_text((family / "impl.cuh").read_text() + "// edited\n")
    assert built() != first and len(list((family / "cache").glob("*.cubin"))) == 2


@needs_nvcc
@pytest.mark.parametrize("entry, error", [
    ("plain", r"^compile error \(nvcc\): impl.cuh\(6\): error: "),
    ("scale<-1>", r"^compile error: a template entry does not instantiate from wrapper.cu: "),
])
def test_nvcc_errors_name_the_users_file_and_line(family, entry, error):
    text = (family / "impl.cuh").read_text()
    if entry == "plain":
        text = text.replace("#include <cstdio>", "#include <cstdio>\nundefined_type x;")
    (family / "impl.cuh").write_text(text)
    with pytest.raises(build.BuildError, match=error):
        build.build(family / "wrapper.cu", [entry], [], "sm_90", family / "cache")
