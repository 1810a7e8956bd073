/* ember/extension.h: what a C or C++ kernel compiled by ember.utils.cpp_extension sees of a tensor.
 *
 * ember has no C++ tensor library.  A Tensor argument arrives as a strided view: a pointer to its first
 * element, its dtype, sizes and strides (in elements, as Tensor.stride() gives them) and its device.  The
 * kernel allocates nothing: outputs are tensors the caller made (ember.empty_like(x)) and passes in.
 *
 * A bound function returns int (0: success) or void.  On failure it reports with EMBER_CHECK or
 * ember_set_error; Python raises RuntimeError with that message and the function's name.
 *
 *   int add_forward(const ember_view *a, const ember_view *b, ember_view *out) {
 *       EMBER_CHECK(a->dtype == EMBER_FLOAT32, "add_forward: expected float32, got %s", ember_dtype_name(a->dtype));
 *       EMBER_CHECK(ember_same_shape(a, b) && ember_same_shape(a, out), "add_forward: shapes differ");
 *       for (int64_t i = 0; i < ember_numel(a); ++i)
 *           *EMBER_AT(float, out, i) = *EMBER_AT(float, a, i) + *EMBER_AT(float, b, i);
 *       return 0;
 *   }
 */
#ifndef EMBER_EXTENSION_H
#define EMBER_EXTENSION_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The codes ember passes for Tensor.dtype (ember.utils.cpp_extension.DTYPE_CODES). */
typedef enum {
    EMBER_FLOAT32 = 0, EMBER_FLOAT64 = 1, EMBER_FLOAT16 = 2, EMBER_BFLOAT16 = 3,
    EMBER_INT8 = 4, EMBER_INT16 = 5, EMBER_INT32 = 6, EMBER_INT64 = 7, EMBER_UINT8 = 8, EMBER_BOOL = 9,
    EMBER_COMPLEX64 = 10, EMBER_COMPLEX128 = 11
} ember_dtype;

typedef enum { EMBER_CPU = 0, EMBER_CUDA = 1 } ember_device_type;

/* A tensor as a kernel sees it (sizes and strides hold ndim entries; strides count elements). */
typedef struct {
    void *data;
    int32_t dtype;
    int32_t ndim;
    const int64_t *sizes;
    const int64_t *strides;
    int32_t device_type;
    int32_t device_index;
} ember_view;

/* The last error of this library, read by ember after a call that returned non-zero (one per library). */
__attribute__((weak)) char ember_error_message[1024] = {0};

static inline void ember_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ember_error_message, sizeof ember_error_message, fmt, ap);
    va_end(ap);
}

#define EMBER_CHECK(cond, ...) \
    do { if (!(cond)) { ember_set_error(__VA_ARGS__); return 1; } } while (0)

static inline const char *ember_dtype_name(int32_t d) {
    static const char *names[] = {"float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
                                  "uint8", "bool", "complex64", "complex128"};
    return d >= 0 && d < 12 ? names[d] : "unknown";
}

static inline int64_t ember_numel(const ember_view *v) {
    int64_t n = 1;
    for (int32_t i = 0; i < v->ndim; ++i) n *= v->sizes[i];
    return n;
}

static inline int ember_same_shape(const ember_view *a, const ember_view *b) {
    if (a->ndim != b->ndim) return 0;
    for (int32_t i = 0; i < a->ndim; ++i)
        if (a->sizes[i] != b->sizes[i]) return 0;
    return 1;
}

static inline int ember_is_contiguous(const ember_view *v) {
    int64_t expected = 1;
    for (int32_t i = v->ndim - 1; i >= 0; --i) {
        if (v->sizes[i] != 1 && v->strides[i] != expected) return 0;
        expected *= v->sizes[i];
    }
    return 1;
}

/* The offset, in elements, of the i-th element in row-major order (any strides). */
static inline int64_t ember_offset(const ember_view *v, int64_t i) {
    int64_t off = 0;
    for (int32_t d = v->ndim - 1; d >= 0; --d) {
        off += (i % v->sizes[d]) * v->strides[d];
        i /= v->sizes[d];
    }
    return off;
}

/* Typed access: a pointer to element i (row-major order) of a view holding T. */
#define EMBER_AT(T, v, i) ((T *)(v)->data + ember_offset((v), (i)))

#ifdef __cplusplus
}
#endif
#endif
