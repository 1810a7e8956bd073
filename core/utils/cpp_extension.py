"""``ember.utils.cpp_extension``: C/C++ kernels compiled with the system compiler, bound to Python.

ember has no C++ tensor library, so a kernel sees a tensor through ember's own small header,
``<ember/extension.h>`` (:func:`include_paths`): a strided view (data pointer, dtype, sizes, strides, device)
with typed accessors and an error channel.  :func:`load_inline` and :func:`load` compile the sources, with a
generated binding, into a shared library kept in a cache directory; each function named in ``functions`` is
then a Python function taking Tensors (for ``ember_view *`` parameters) and numbers.  Registered with
:mod:`ember.library`, a compiled function is a full op (autograd, fake kernel, tracing): see
``examples/custom_op_cpp.py``.

Why ctypes and a generated binding rather than pybind11: pybind11 would bind C++ types, and ember has none to
bind (a kernel sees a plain C struct); it would tie each library to one Python's ABI and add seconds of
template compilation to every build.  The binding generated here is a few C lines per function (an
``extern "C"`` wrapper that turns a C++ exception into an error message, and a table of the signatures), the
library loads with :mod:`ctypes` under any Python, and converting an argument is a small Python function.

>>> from ember.utils.cpp_extension import load_inline
>>> src = '''
... int scale(const ember_view *x, ember_view *out, double k) {
...     EMBER_CHECK(x->dtype == EMBER_FLOAT32, "scale: expected float32, got %s", ember_dtype_name(x->dtype));
...     for (int64_t i = 0; i < ember_numel(x); ++i) *EMBER_AT(float, out, i) = k * *EMBER_AT(float, x, i);
...     return 0;
... }'''
>>> ext = load_inline("doc_scale", src, functions=["scale"])
>>> import ember
>>> out = ember.empty(3)
>>> ext.scale(ember.arange(3.0), out, 2.0)
>>> out
tensor([0., 2., 4.])
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types

import ember

__all__ = ["load_inline", "load", "include_paths", "CppExtension", "CUDAExtension", "load_extension",
           "get_default_build_root", "DTYPE_CODES"]  # and BuildExtension, made when a setup.py asks for it

_HEADER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
DTYPE_CODES = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3, "int8": 4, "int16": 5, "int32": 6,
               "int64": 7, "uint8": 8, "bool": 9, "complex64": 10, "complex128": 11}
_DEVICE_CODES = {"cpu": 0, "cuda": 1}
_SCALARS = {"double": ctypes.c_double, "float": ctypes.c_float, "int": ctypes.c_int, "int64_t": ctypes.c_int64,
            "long": ctypes.c_long, "int32_t": ctypes.c_int32, "bool": ctypes.c_bool, "long long": ctypes.c_longlong}
_LOADED: dict = {}  # library path -> module


class _View(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("sizes", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("device_type", ctypes.c_int32), ("device_index", ctypes.c_int32)]


def include_paths(cuda: bool = False) -> list:
    """The directories holding ``<ember/extension.h>`` (pass to the compiler with ``-I``)."""
    return [_HEADER_DIR]


def get_default_build_root() -> str:
    """Where built libraries are kept: ``$EMBER_EXTENSIONS_DIR``, else ``~/.cache/ember_extensions``."""
    return os.environ.get("EMBER_EXTENSIONS_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                  "ember_extensions")


# --------------------------------------------------------------------------- signatures and the binding
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_DEF = re.compile(r"(?:^|[;}\s])(?:extern\s+\"C\"\s+)?(int|void)\s+(\w+)\s*\(([^()]*)\)\s*\{")


def _param(text, fn):
    text = " ".join(text.replace("*", " * ").split())
    if "ember_view" in text:
        if "*" not in text:
            raise ValueError(f"{fn}: parameter {text!r} takes an ember_view by value; pass a pointer "
                             f"(ember_view *x)")
        return ["tensor", text.split()[-1], text.startswith("const")]
    words = text.split()
    ctype = " ".join(w for w in words[:-1] if w != "const")
    if ctype not in _SCALARS:
        raise ValueError(f"{fn}: parameter {text!r} has a type the binding cannot pass; use ember_view * for "
                         f"tensors or one of {', '.join(_SCALARS)}")
    return [ctype, words[-1], True]


def signatures(source: str, functions=None) -> dict:
    """``{name: (return type, [[kind, name, const], ...])}`` of the functions defined in C/C++ ``source``
    (those named in ``functions``, else every ``int``/``void`` function taking an ``ember_view *``)."""
    found = {}
    for ret, name, params in _DEF.findall(_COMMENTS.sub(" ", source)):
        if name in ("if", "for", "while", "switch") or name.startswith("ember_"):
            continue
        parts = [p.strip() for p in params.split(",") if p.strip() and p.strip() != "void"]
        found[name] = (ret, parts)
    wanted = list(functions) if functions is not None else [n for n, (_, ps) in found.items()
                                                             if any("ember_view" in p for p in ps)]
    missing = [n for n in wanted if n not in found]
    if missing:
        raise ValueError(f"functions {missing} are not defined in the sources (a bound function returns int or "
                         f"void and is defined at top level)")
    return {n: (found[n][0], [_param(p, n) for p in found[n][1]]) for n in wanted}


def _binding(sigs: dict, declare: bool) -> str:
    """C++ source of the binding: an ``extern "C"`` wrapper per function and the signature table."""
    lines = ["#include <ember/extension.h>", "#include <exception>"]
    for name, (ret, params) in sigs.items():
        decl = ", ".join(("const ember_view *" if c else "ember_view *") + p if k == "tensor" else f"{k} {p}"
                         for k, p, c in params)
        args = ", ".join(p for _, p, _ in params)
        if declare:
            lines.append(f"{ret} {name}({decl});")
        call = f"return {name}({args});" if ret == "int" else f"{name}({args}); return 0;"
        lines.append(f'extern "C" int ember_ext_{name}({decl}) {{\n'
                     f"    try {{ {call} }}\n"
                     f'    catch (const std::exception &e) {{ ember_set_error("%s", e.what()); return -1; }}\n'
                     f'    catch (...) {{ ember_set_error("an unknown C++ exception"); return -1; }}\n}}')
    table = json.dumps({n: p for n, (_, p) in sigs.items()}).replace("\\", "\\\\").replace('"', '\\"')
    lines.append(f'extern "C" const char *ember_ext_signatures(void) {{ return "{table}"; }}')
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- building
def _compiler(cxx: bool) -> str:
    env = os.environ.get("CXX" if cxx else "CC")
    for cand in ([env] if env else []) + (["c++", "g++", "clang++"] if cxx else ["cc", "gcc", "clang"]):
        if cand and shutil.which(cand.split()[0]):
            return cand
    raise RuntimeError(f"ember.utils.cpp_extension: no {'C++' if cxx else 'C'} compiler found (looked for "
                       f"${'CXX' if cxx else 'CC'} and {'c++, g++, clang++' if cxx else 'cc, gcc, clang'}); install "
                       f"one (apt-get install g++)")


def _run_compiler(cmd: list, cwd: str, verbose: bool) -> str:
    if verbose:
        print(" ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise subprocess.CalledProcessError(r.returncode, cmd, r.stdout, r.stderr)
    return r.stdout + r.stderr


def _build(name, sources: dict, cflags, ldflags, include_dirs, build_dir, verbose) -> str:
    """Compile ``sources`` (``{file name: text}``) into ``<build_dir>/<name>.so``: in a temporary directory whose
    finished library is renamed into place (atomic: the cache never holds a half-built library, and concurrent
    builds of one extension each land a whole one); returns the library's path."""
    lib = os.path.join(build_dir, f"{name}.so")
    if os.path.exists(lib):
        if verbose:
            print(f"ember.utils.cpp_extension: {name}: using the cached build in {build_dir}", file=sys.stderr)
        return lib
    os.makedirs(build_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".build-", dir=build_dir)
    try:
        objects = []
        for fname, text in sources.items():
            with open(os.path.join(tmp, fname), "w") as f:
                f.write(text)
            cxx = not fname.endswith(".c")
            cmd = [*_compiler(cxx).split(), "-c", "-fPIC", "-O2", *(["-std=c++17"] if cxx else []),
                   *(f"-I{d}" for d in [*include_paths(), *include_dirs]), *cflags, fname, "-o", fname + ".o"]
            _run_compiler(cmd, tmp, verbose)
            objects.append(fname + ".o")
        _run_compiler([*_compiler(True).split(), "-shared", *objects, "-o", f"{name}.so", *ldflags], tmp, verbose)
        os.replace(os.path.join(tmp, f"{name}.so"), lib)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"Error building extension '{name}': {' '.join(exc.cmd)} exited with {exc.returncode}:\n"
                           f"{exc.stdout}{exc.stderr}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.rmdir(build_dir)  # only when empty: a build that failed leaves no directory behind
    return lib


def _key(*parts) -> str:
    """The cache key of a build: the header, the compilers named by $CXX/$CC, the sources and the flags."""
    h = hashlib.sha256()
    h.update(f"{os.environ.get('CXX', '')}\0{os.environ.get('CC', '')}".encode())
    with open(os.path.join(_HEADER_DIR, "ember", "extension.h"), "rb") as f:
        h.update(f.read())
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- calling
def _view(t, fn, param, keep):
    if not isinstance(t, ember.Tensor):
        raise TypeError(f"{fn}(): argument '{param}' must be Tensor, not {type(t).__name__}")
    if t.device.type != "cpu":
        raise RuntimeError(f"{fn}(): argument '{param}' is on {t.device}; a C/C++ function takes CPU tensors "
                           f"(CUDA kernels go in cuda_sources)")
    arr = t.detach().numpy()
    sizes = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(arr.ndim, 1))(*(s // arr.itemsize for s in arr.strides))
    keep.append((arr, sizes, strides))
    return ctypes.pointer(_View(arr.ctypes.data, DTYPE_CODES[t.dtype.name], arr.ndim, sizes, strides,
                                _DEVICE_CODES["cpu"], 0))


def _bind(lib, module: str, name: str, params: list):
    cfn = getattr(lib, f"ember_ext_{name}")
    cfn.restype = ctypes.c_int
    cfn.argtypes = [ctypes.POINTER(_View) if k == "tensor" else _SCALARS[k] for k, _, _ in params]
    error = ctypes.c_char.in_dll(lib, "ember_error_message")
    qual = f"{module}.{name}"

    def call(*args):
        if len(args) != len(params):
            raise TypeError(f"{qual}() takes {len(params)} argument(s) ({', '.join(p for _, p, _ in params)}), "
                            f"got {len(args)}")
        keep, cargs, written = [], [], []
        for a, (kind, pname, const) in zip(args, params):
            if kind == "tensor":
                cargs.append(_view(a, qual, pname, keep))
                if not const:
                    written.append(a)
            elif isinstance(a, ember.Tensor) or not isinstance(a, (int, float, bool)):
                raise TypeError(f"{qual}(): argument '{pname}' must be a number ({kind}), not {type(a).__name__}")
            else:
                cargs.append(a)
        status = cfn(*cargs)
        for t in written:
            t._bump()
        if status != 0:
            msg = ctypes.string_at(ctypes.addressof(error)).decode(errors="replace") or f"returned {status}"
            raise RuntimeError(f"{qual}: {msg}")

    call.__name__ = call.__qualname__ = name
    sig = ", ".join(("const Tensor " if c else "Tensor ") + p if k == "tensor" else f"{k} {p}" for k, p, c in params)
    call.__doc__ = f"{name}({sig}): compiled C/C++ (writes the non-const Tensors)."
    return call


def load_extension(path: str, name: str | None = None, docs: dict | None = None):
    """Bind the library at ``path`` (built by this module, :class:`BuildExtension` included) as a module."""
    mod = _LOADED.get(path)
    if mod is not None:
        return mod
    lib = ctypes.CDLL(path)
    name = name or os.path.basename(path).split(".")[0]
    mod = types.ModuleType(name, f"C/C++ extension {name} ({path})")
    mod.__file__ = path
    for fn, params in json.loads(_table(lib)).items():
        f = _bind(lib, name, fn, params)
        if docs and docs.get(fn):
            f.__doc__ = docs[fn]
        setattr(mod, fn, f)
    _LOADED[path] = mod
    return mod


def _table(lib) -> str:
    get = lib.ember_ext_signatures
    get.restype = ctypes.c_char_p
    return get().decode()


def _functions(functions):
    if functions is None:
        return None, {}
    if isinstance(functions, str):
        return [functions], {}
    if isinstance(functions, dict):
        return list(functions), dict(functions)
    return list(functions), {}


def _cuda(name, cuda_sources, functions, extra_cuda_cflags, mod):
    """Bind the ``__global__`` kernels of ``cuda_sources`` named in ``functions`` through CuPy's RawModule."""
    try:
        import cupy
    except ImportError:
        raise RuntimeError(f"Error building extension '{name}': cuda_sources compile through CuPy (NVRTC), which "
                           f"is not installed (pip install 'ember[cuda]')") from None
    raw = cupy.RawModule(code="\n".join(cuda_sources), options=tuple(extra_cuda_cflags or ()))
    for fn in functions or ():
        if hasattr(mod, fn):
            continue
        kernel = raw.get_function(fn)

        def launch(*args, grid, block, shared_mem=0, _k=kernel):
            arrays = [a._data if isinstance(a, ember.Tensor) else a for a in args]
            _k(tuple(grid), tuple(block), arrays, shared_mem=shared_mem, stream=cupy.cuda.get_current_stream())

        launch.__name__ = fn
        setattr(mod, fn, launch)


def load_inline(name: str, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None, build_directory=None,
                verbose: bool = False, with_cuda=None, is_python_module: bool = True, **unused):
    """Compile C++ ``cpp_sources`` (a string or list of strings, ``<ember/extension.h>`` included for them) and
    return a module whose functions are those named in ``functions`` (a list, or a dict of docstrings).

    The library is cached under :func:`get_default_build_root` by a hash of the sources and flags: a second
    call with the same ones loads it without compiling.  A failed build raises RuntimeError with the compiler's
    output and leaves nothing in the cache.  ``cuda_sources`` (``__global__`` kernels) compile through CuPy;
    their functions are called as ``fn(*args, grid=..., block=...)``.  See the module's example.
    """
    if not name.isidentifier():
        raise ValueError(f"load_inline: name must be a Python identifier, got {name!r}")
    cpp = [cpp_sources] if isinstance(cpp_sources, str) else list(cpp_sources)
    cuda = [cuda_sources] if isinstance(cuda_sources, str) else list(cuda_sources or ())
    wanted, docs = _functions(functions)
    text = "#include <ember/extension.h>\n" + "\n".join(cpp)
    cpp_wanted = wanted
    if cuda and wanted is not None:
        defined = signatures(text, None)
        cpp_wanted = [f for f in wanted if f in defined or not re.search(rf"__global__\s+void\s+{f}\b",
                                                                          "\n".join(cuda))]
    sigs = signatures(text, cpp_wanted)
    source = text + "\n" + _binding(sigs, declare=False)
    flags = list(extra_cflags or ())
    build_dir = build_directory or os.path.join(get_default_build_root(),
                                                f"{name}_{_key(source, flags, extra_ldflags, extra_include_paths)}")
    lib = _build(name, {"main.cpp": source}, flags, list(extra_ldflags or ()), list(extra_include_paths or ()),
                 build_dir, verbose)
    mod = load_extension(lib, name, docs)
    if cuda:
        _cuda(name, cuda, wanted, extra_cuda_cflags, mod)
    return mod


def load(name: str, sources, extra_cflags=None, extra_cuda_cflags=None, extra_ldflags=None,
         extra_include_paths=None, build_directory=None, verbose: bool = False, functions=None, **unused):
    """Compile the C/C++ files ``sources`` and bind their functions (``functions``, default every function taking
    an ``ember_view *``); cached as :func:`load_inline`.  ``.cu`` files compile through CuPy."""
    paths = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    texts = {}
    for p in paths:
        with open(p) as f:
            texts[os.fspath(p)] = f.read()
    cuda = [t for p, t in texts.items() if p.endswith(".cu")]
    host = {p: t for p, t in texts.items() if not p.endswith(".cu")}
    wanted, docs = _functions(functions)
    sigs = {}
    for t in host.values():
        sigs.update(signatures(t, [f for f in wanted if f in signatures(t, None)] if wanted is not None else None))
    files = {f"src{i}_{os.path.basename(p)}": t for i, (p, t) in enumerate(host.items())}
    c_only = all(p.endswith(".c") for p in host)
    binding = _binding(sigs, declare=True)
    if c_only:  # C functions: declared with C linkage in the C++ binding
        binding = binding.replace("\nint ", '\nextern "C" int ').replace("\nvoid ", '\nextern "C" void ')
    files["binding.cpp"] = binding
    flags = list(extra_cflags or ())
    build_dir = build_directory or os.path.join(get_default_build_root(),
                                                f"{name}_{_key(files, flags, extra_ldflags, extra_include_paths)}")
    lib = _build(name, files, flags, list(extra_ldflags or ()), list(extra_include_paths or ()), build_dir, verbose)
    mod = load_extension(lib, name, docs)
    if cuda:
        _cuda(name, cuda, wanted, extra_cuda_cflags, mod)
    return mod


# --------------------------------------------------------------------------- setup.py
def CppExtension(name: str, sources, *args, **kwargs):  # noqa: N802 - PyTorch's name
    """A setuptools ``Extension`` for C/C++ ``sources`` using ``<ember/extension.h>``; build it with
    :class:`BuildExtension` and load it with :func:`load_extension`."""
    from setuptools import Extension

    kwargs["include_dirs"] = list(kwargs.get("include_dirs", ())) + include_paths()
    kwargs.setdefault("language", "c++")
    return Extension(name, list(sources), *args, **kwargs)


def CUDAExtension(name: str, sources, *args, **kwargs):  # noqa: N802 - PyTorch's name
    """CUDA sources are compiled at run time through CuPy (:func:`load` with ``.cu`` files); a setup.py cannot
    build them ahead of time."""
    raise RuntimeError("CUDAExtension: ember compiles CUDA sources at run time through CuPy; use "
                       "ember.utils.cpp_extension.load(name, sources=[...'.cu'])")


def _build_ext():
    from setuptools.command.build_ext import build_ext

    class BuildExtension(build_ext):
        """setuptools' ``build_ext`` that adds the generated binding to each extension (its functions: every
        function taking an ``ember_view *``) and builds a plain shared library (no Python module init)."""

        def build_extension(self, ext):
            sigs = {}
            for src in ext.sources:
                with open(src) as f:
                    sigs.update(signatures(f.read()))
            os.makedirs(self.build_temp, exist_ok=True)
            binding = os.path.join(self.build_temp, f"{ext.name.split('.')[-1]}_ember_binding.cpp")
            text = _binding(sigs, declare=True)
            if all(s.endswith(".c") for s in ext.sources):
                text = text.replace("\nint ", '\nextern "C" int ').replace("\nvoid ", '\nextern "C" void ')
            with open(binding, "w") as f:
                f.write(text)
            ext.sources = [*ext.sources, binding]
            super().build_extension(ext)

        def get_export_symbols(self, ext):
            return []

        @classmethod
        def with_options(cls, **options):
            return cls

    return BuildExtension


def __getattr__(name):
    if name == "BuildExtension":  # setuptools is imported only by a setup.py that asks for it
        cls = _build_ext()
        globals()["BuildExtension"] = cls
        return cls
    raise AttributeError(f"module 'ember.utils.cpp_extension' has no attribute {name!r}")
