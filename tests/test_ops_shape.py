"""Shape and movement ops: bad input against PyTorch (the rows of ember.testing.rows_shape, every check, run in
tests/test_kit.py on every backend)."""

from ember.testing.case import bad_input_test


# bad input: (name, call, exception, message pattern); torch must raise the same exception type
def _z(m, d, *shape):
    return m.zeros(*shape, device=d if m.__name__ == "ember" else "cpu")


BAD = [
    ("cat_sizes", lambda m, d: m.cat([_z(m, d, 2, 3), _z(m, d, 3, 3)], 1), RuntimeError,
     r"Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1"),
    ("cat_ndim", lambda m, d: m.cat([_z(m, d, 2, 3), _z(m, d, 3)]), RuntimeError, "same number of dimensions"),
    ("cat_empty", lambda m, d: m.cat([]), ValueError, "non-empty list"),
    ("cat_dim", lambda m, d: m.cat([_z(m, d, 2)], 1), IndexError, r"Dimension out of range"),
    ("stack_sizes", lambda m, d: m.stack([_z(m, d, 2), _z(m, d, 3)]), RuntimeError, "equal size"),
    ("view_strides", lambda m, d: _z(m, d, 2, 3).t().view(6), RuntimeError, r"view size is not compatible"),
    ("view_numel", lambda m, d: _z(m, d, 2, 3).view(4), RuntimeError, r"invalid for input of size 6"),
    ("squeeze_dim", lambda m, d: _z(m, d, 2).squeeze(3), IndexError, "Dimension out of range"),
    ("permute_dup", lambda m, d: _z(m, d, 2, 3).permute(0, 0), RuntimeError, "duplicate dims"),
    ("narrow_end", lambda m, d: _z(m, d, 3).narrow(0, 2, 2), RuntimeError, r"start \(2\) \+ length \(2\) exceeds"),
    ("split_sum", lambda m, d: _z(m, d, 3).split([1, 1]), RuntimeError, "sum exactly to 3"),
    ("chunk_zero", lambda m, d: _z(m, d, 3).chunk(0), RuntimeError, "greater than 0"),
    ("repeat_short", lambda m, d: _z(m, d, 2, 3).repeat(2), RuntimeError, "can not be smaller"),
    ("expand_size", lambda m, d: _z(m, d, 2, 3).expand(3, 3), RuntimeError, "must match the existing size"),
    ("unfold_size", lambda m, d: _z(m, d, 3).unfold(0, 4, 1), RuntimeError, "maximum size for tensor"),
    ("flip_dup", lambda m, d: _z(m, d, 3).flip((0, 0)), RuntimeError, "appears multiple times"),
    ("movedim_dup", lambda m, d: _z(m, d, 2, 3).movedim((0, 0), (1, 0)), RuntimeError, "repeated dim"),
    ("diagonal_same", lambda m, d: _z(m, d, 2, 3).diagonal(0, 1, 1), RuntimeError, "cannot be identical"),
    ("tril_1d", lambda m, d: _z(m, d, 3).tril(), RuntimeError, "at least 2 dimensions"),
    ("meshgrid_2d", lambda m, d: m.meshgrid(_z(m, d, 2, 2), indexing="ij"), RuntimeError, "0D or 1D"),
    ("broadcast_shapes", lambda m, d: m.broadcast_shapes((2,), (3,)), RuntimeError, "[Ss]hape mismatch"),
]

test_bad_input = bad_input_test(BAD)
