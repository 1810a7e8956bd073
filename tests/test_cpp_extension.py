"""ember.utils.cpp_extension: the seeds' extension-ffi example through load_inline, the cache (hits, failed
builds, concurrent builds), load() of C files, a setup.py with BuildExtension, and bad input."""
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
from ember.utils import cpp_extension
from ember.utils.cpp_extension import load, load_inline

pytestmark = pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None,
                                reason="no C++ compiler")

# pytorch/extension-ffi's my_lib, on ember's strided view instead of THFloatTensor (a non-zero return: failure)
FFI = r"""
int my_lib_add_forward(const ember_view *input1, const ember_view *input2, ember_view *output) {
    EMBER_CHECK(ember_same_shape(input1, input2) && ember_same_shape(input1, output),
                "my_lib_add_forward: the inputs and output must have one shape");
    EMBER_CHECK(input1->dtype == EMBER_FLOAT32 && input2->dtype == EMBER_FLOAT32 && output->dtype == EMBER_FLOAT32,
                "my_lib_add_forward: expected float32 tensors, got %s", ember_dtype_name(input1->dtype));
    for (int64_t i = 0; i < ember_numel(input1); ++i)
        *EMBER_AT(float, output, i) = *EMBER_AT(float, input1, i) + *EMBER_AT(float, input2, i);
    return 0;
}

void my_lib_add_backward(const ember_view *grad_output, ember_view *grad_input) {
    for (int64_t i = 0; i < ember_numel(grad_input); ++i)
        *EMBER_AT(float, grad_input, i) = 1.0f;
}
"""


@pytest.fixture
def build_root(tmp_path, monkeypatch):
    root = tmp_path / "extensions"
    monkeypatch.setenv("EMBER_EXTENSIONS_DIR", str(root))
    return root


def _entries(root):
    return sorted(os.listdir(root)) if os.path.exists(root) else []


def test_extension_ffi_example_through_load_inline(build_root):
    ext = load_inline("my_lib", FFI, functions=["my_lib_add_forward", "my_lib_add_backward"])
    a = ember.arange(6.0).reshape(2, 3)
    b = ember.ones(3, 2).t()  # a strided (transposed) input
    out = ember.empty(2, 3)
    version = out._version
    assert ext.my_lib_add_forward(a, b, out) is None
    np.testing.assert_array_equal(out.numpy(), a.numpy() + 1)
    assert out._version > version  # a non-const view was written
    grad_input = ember.zeros(2, 3)
    ext.my_lib_add_backward(ember.ones(2, 3), grad_input)
    assert grad_input.tolist() == [[1.0] * 3] * 2


def test_kernel_errors_name_the_function_and_leave_inputs_alone(build_root):
    ext = load_inline("my_lib", FFI, functions=["my_lib_add_forward"])
    a, out = ember.ones(2, dtype=ember.float64), ember.zeros(2)
    with pytest.raises(RuntimeError, match="my_lib.my_lib_add_forward: my_lib_add_forward: expected float32 tensors, "
                                           "got float64"):
        ext.my_lib_add_forward(a, a, out)
    with pytest.raises(RuntimeError, match="must have one shape"):
        ext.my_lib_add_forward(ember.ones(3), ember.ones(2), out)
    with pytest.raises(TypeError, match="argument 'input2' must be Tensor, not float"):
        ext.my_lib_add_forward(out, 1.0, out)
    with pytest.raises(TypeError, match=r"takes 3 argument\(s\)"):
        ext.my_lib_add_forward(out, out)
    with pytest.raises(RuntimeError, match="is on meta"):
        ext.my_lib_add_forward(ember.empty(2, device="meta"), out, out)
    assert out.tolist() == [0.0, 0.0] and a.tolist() == [1.0, 1.0]


def test_second_load_comes_from_the_cache_without_compiling(build_root, monkeypatch):
    first = load_inline("cached", FFI, functions=["my_lib_add_forward"])
    [entry] = _entries(build_root)

    def no_compiler(*args, **kwargs):
        raise AssertionError("the compiler ran for a cached build")

    monkeypatch.setattr(cpp_extension, "_run_compiler", no_compiler)
    monkeypatch.setattr(cpp_extension, "_LOADED", {})  # as a new process: only the directory remains
    again = load_inline("cached", FFI, functions=["my_lib_add_forward"])
    out = ember.empty(1)
    again.my_lib_add_forward(ember.ones(1), ember.ones(1), out)
    assert out.item() == 2.0 and again is not first and _entries(build_root) == [entry]
    with pytest.raises(AssertionError, match="compiler ran"):  # other flags: another build
        load_inline("cached", FFI, functions=["my_lib_add_forward"], extra_cflags=["-O1"])


def test_a_build_directory_of_ones_own(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()  # as PyTorch users make it before the call
    ext = load_inline("own_dir", FFI, functions=["my_lib_add_forward"], build_directory=str(mine))
    assert os.listdir(mine) == ["own_dir.so"] and ext.__file__ == str(mine / "own_dir.so")


def test_failed_build_shows_the_compiler_output_and_leaves_nothing(build_root):
    broken = "int broken(const ember_view *x) { return undeclared_name + 1; }"
    with pytest.raises(RuntimeError, match=r"(?s)Error building extension 'broken'.*undeclared_name"):
        load_inline("broken", broken, functions=["broken"])
    assert _entries(build_root) == []  # no build directory, no temporary left behind


def test_concurrent_builds_of_one_extension(build_root):
    results, errors = [], []

    def build():
        try:
            results.append(load_inline("raced", FFI, functions=["my_lib_add_forward"]))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 3
    assert len(_entries(build_root)) == 1  # one build kept, every temporary gone


def test_load_compiles_c_files(build_root, tmp_path):
    src = tmp_path / "scale.c"
    src.write_text("#include <ember/extension.h>\n"
                   "int scale(const ember_view *x, ember_view *out, double k, int64_t offset) {\n"
                   "    for (int64_t i = 0; i < ember_numel(x); ++i)\n"
                   "        *EMBER_AT(double, out, i) = k * *EMBER_AT(double, x, i) + offset;\n"
                   "    return 0;\n}\n")
    ext = load("scale_c", sources=[str(src)])
    out = ember.empty(3, dtype=ember.float64)
    ext.scale(ember.arange(3.0, dtype=ember.float64), out, 0.5, 10)
    assert out.tolist() == [10.0, 10.5, 11.0]
    with pytest.raises(TypeError, match="argument 'k' must be a number"):
        ext.scale(out, out, out, 1)


def test_functions_that_are_not_defined_or_not_bindable_are_refused(build_root):
    with pytest.raises(ValueError, match=r"functions \['nope'\] are not defined"):
        load_inline("missing", FFI, functions=["nope"])
    with pytest.raises(ValueError, match="has a type the binding cannot pass"):
        load_inline("unbindable", "int f(const char *s) { return 0; }", functions=["f"])


def test_a_missing_compiler_is_named(build_root, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="no C\\+\\+ compiler found"):
        load_inline("nocompiler", FFI, functions=["my_lib_add_forward"])
    assert _entries(build_root) == []


def test_cuda_sources_without_cupy_say_so(build_root):
    pytest.importorskip("numpy")
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="cuda_sources compile through CuPy"):
            load_inline("cu", FFI, cuda_sources="extern \"C\" __global__ void k(float *x) {}",
                        functions=["my_lib_add_forward", "k"])
    else:
        pytest.skip("CuPy is installed")


def test_compiled_op_through_the_library_is_a_full_op(build_root, tmp_path):
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "custom_op_cpp.py")
    spec = importlib.util.spec_from_file_location("example_custom_op_cpp", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = example.main(namespace="cpptest")
    assert out["max_error"] < 1e-12 and out["grad_error"] < 1e-12 and out["gradcheck"] is True
    assert set(out["opcheck"].values()) == {"SUCCESS"} and out["meta_shape"] == (7, 3)
    silu = ember.ops.cpptest.silu
    x = ember.randn(5)
    traced = ember.jit.trace(lambda t: silu(t) * 2, x)
    assert "ember.ops.cpptest.silu" in traced.graph.ops()
    ember.testing.assert_close(traced(x), ember.nn.functional.silu(x) * 2)
    with pytest.raises(RuntimeError, match="expected a float32 or float64 tensor, got int64"):
        silu(ember.arange(3))


def test_setup_py_with_build_extension(tmp_path):
    (tmp_path / "add.c").write_text("#include <ember/extension.h>\n" + FFI)
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\n"
        "from ember.utils.cpp_extension import BuildExtension, CppExtension\n"
        "setup(name='ffi_add', ext_modules=[CppExtension('ffi_add', ['add.c'])],\n"
        "      cmdclass={'build_ext': BuildExtension})\n")
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    [lib] = [p for p in os.listdir(tmp_path) if p.startswith("ffi_add") and p.endswith(".so")]
    ext = cpp_extension.load_extension(str(tmp_path / lib))
    out = ember.empty(2)
    ext.my_lib_add_forward(ember.ones(2), ember.ones(2), out)
    assert out.tolist() == [2.0, 2.0]
