"""A fused op in C++ with its backward, registered with ember.library and gradchecked.

``silu(x) = x * sigmoid(x)`` in one pass over the data, and its derivative
``s * (1 + x * (1 - s))`` in another, compiled by ``ember.utils.cpp_extension.load_inline`` against
ember's ``<ember/extension.h>``.  Both kernels are templates over float and double (float64 is what gradcheck
needs) and refuse any other dtype with a message.  ``ember.library`` makes them one op,
``ember.ops.cppdemo.silu``, with a fake kernel (so the meta device and tracing know its output) and an
autograd formula whose backward is itself a custom op.

Run: ``python examples/custom_op_cpp.py``.
"""
import ember
from ember import Tensor
from ember.utils.cpp_extension import load_inline

CPP = r"""
#include <cmath>

template <typename T>
static void silu_kernel(const ember_view *x, ember_view *out) {
    for (int64_t i = 0; i < ember_numel(x); ++i) {
        T v = *EMBER_AT(T, x, i);
        *EMBER_AT(T, out, i) = v / (T(1) + std::exp(-v));
    }
}

template <typename T>
static void silu_grad_kernel(const ember_view *grad, const ember_view *x, ember_view *out) {
    for (int64_t i = 0; i < ember_numel(x); ++i) {
        T v = *EMBER_AT(T, x, i);
        T s = T(1) / (T(1) + std::exp(-v));
        *EMBER_AT(T, out, i) = *EMBER_AT(T, grad, i) * s * (T(1) + v * (T(1) - s));
    }
}

int silu_forward(const ember_view *x, ember_view *out) {
    EMBER_CHECK(ember_same_shape(x, out) && x->dtype == out->dtype, "silu_forward: out must match x");
    switch (x->dtype) {
        case EMBER_FLOAT32: silu_kernel<float>(x, out); return 0;
        case EMBER_FLOAT64: silu_kernel<double>(x, out); return 0;
        default: EMBER_CHECK(false, "silu_forward: expected a float32 or float64 tensor, got %s",
                             ember_dtype_name(x->dtype));
    }
}

int silu_backward(const ember_view *grad, const ember_view *x, ember_view *out) {
    EMBER_CHECK(ember_same_shape(grad, x) && ember_same_shape(x, out), "silu_backward: shapes differ");
    EMBER_CHECK(grad->dtype == x->dtype && x->dtype == out->dtype, "silu_backward: dtypes differ");
    switch (x->dtype) {
        case EMBER_FLOAT32: silu_grad_kernel<float>(grad, x, out); return 0;
        case EMBER_FLOAT64: silu_grad_kernel<double>(grad, x, out); return 0;
        default: EMBER_CHECK(false, "silu_backward: expected float32 or float64, got %s", ember_dtype_name(x->dtype));
    }
}
"""


def build(namespace: str = "cppdemo", verbose: bool = False):
    """Compile the kernels (cached after the first time) and register ``ember.ops.<namespace>.silu``."""
    ext = load_inline("silu_ext", CPP, functions=["silu_forward", "silu_backward"], verbose=verbose)

    @ember.library.custom_op(f"{namespace}::silu", mutates_args=(), device_types="cpu")
    def silu(x: Tensor) -> Tensor:
        out = ember.empty_like(x)
        ext.silu_forward(x, out)
        return out

    @ember.library.custom_op(f"{namespace}::silu_backward", mutates_args=(), device_types="cpu")
    def silu_backward(grad: Tensor, x: Tensor) -> Tensor:
        out = ember.empty_like(x)
        ext.silu_backward(grad.contiguous(), x, out)
        return out

    silu.register_fake(lambda x: ember.empty_like(x))
    silu_backward.register_fake(lambda grad, x: ember.empty_like(x))
    silu.register_autograd(lambda ctx, grad: silu_backward(grad, ctx.saved_tensors[0]),
                           setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    return silu


def main(namespace: str = "cppdemo") -> dict:
    silu = build(namespace)
    x = ember.randn(4, 5, dtype=ember.float64, requires_grad=True)
    y = silu(x)
    reference = ember.nn.functional.silu(x)
    (grad,) = ember.autograd.grad(y.sum(), x)
    (want,) = ember.autograd.grad(reference.sum(), x)
    return {
        "max_error": float((y - reference).abs().max()),
        "grad_error": float((grad - want).abs().max()),
        "gradcheck": ember.autograd.gradcheck(silu, (x,)),
        "opcheck": ember.library.opcheck(silu, (x,)),
        "meta_shape": tuple(silu(ember.empty(7, 3, device="meta")).shape),
    }


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.splitlines()[0] + " It writes only its build cache.").parse_args()
    for key, value in main().items():
        print(f"{key}: {value}")
