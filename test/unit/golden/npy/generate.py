"""Regenerates the .npy fixtures the runtime unit and CLI tests read.

Run with numpy and ml_dtypes installed:  python3 generate.py
Every array's values are a simple formula of the flat index so the C++ tests
can check them without a copy of the data.
"""
import os

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, array):
    np.save(os.path.join(HERE, name), array)


def ramp(shape, dtype, scale=1, offset=0):
    """Element k (flat, C order) is k * scale + offset."""
    count = int(np.prod(shape, dtype=np.int64))
    return (np.arange(count) * scale + offset).reshape(shape).astype(dtype)


save("f64_2x3.npy", ramp((2, 3), np.float64, 0.25, -1))
save("f32_5x7.npy", ramp((5, 7), np.float32, 0.5, -3))
save("f16_4.npy", ramp((4,), np.float16, 1.5, 0))
save("bf16_2x3.npy", ramp((2, 3), ml_dtypes.bfloat16, 1.5, -2))
save("i64_3.npy", ramp((3,), np.int64, -(2**40), 7))
save("i32_2x2x2.npy", ramp((2, 2, 2), np.int32, 3, -5))
save("i16_3.npy", ramp((3,), np.int16, -1000, 0))
save("i8_4.npy", ramp((4,), np.int8, -50, 100))
save("u8_5.npy", ramp((5,), np.uint8, 60, 0))
save("bool_2x2.npy", np.array([[True, False], [False, True]]))
save("f32_scalar.npy", np.float32(2.5))
save("i32_0x3.npy", np.zeros((0, 3), np.int32))

with open(os.path.join(HERE, "f32_3x2_v2.npy"), "wb") as f:
    np.lib.format.write_array(f, ramp((3, 2), np.float32, 1, 1), version=(2, 0))

# Inputs the reader must reject.
save("f32_2x3_fortran.npy", np.asfortranarray(ramp((2, 3), np.float32)))
save("i32_3_bigendian.npy", ramp((3,), ">i4"))
