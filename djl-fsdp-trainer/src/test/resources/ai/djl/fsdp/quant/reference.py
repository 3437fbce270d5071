"""Computes the expected bytes of BitsandbytesExactnessTest: bitsandbytes' 4-bit quantization
(quantize_4bit / dequantize_4bit, with and without compress_statistics) written here from a
reading of its CUDA kernels, in NumPy float32, independently of the Java code under test:

  - a block's scale is its largest magnitude; values are multiplied by the scale's float32
    reciprocal and coded by the kernels' decision trees, written out as the kernels nest them,
    with their threshold constants (a value equal to a threshold takes the lower code);
  - two codes a byte, the earlier value in the high nibble; an odd count pads a zero;
  - double quantization: the scales less their mean, coded in 8 bits over the signed dynamic map
    (create_dynamic_map, run with torch as bitsandbytes runs it, under libtorch's portable kernels)
    in blocks of 256 by the kernel's binary search; decoding adds the mean back.

The mean is taken in float64 and rounded to float32 (torch's float32 mean, printed beside it,
can differ in the last bit). The script also checks that the code tables bitsandbytes stores as
quant_map (get_4bit_type: the literal values divided by their largest) equal the kernels' lookup
tables, and writes the latter.

Cases: nf4 and fp4, plain and nested. Each input holds normal values with a partial last block
(an odd count), an all-zero block, and a block of exact ties: scale 1, every threshold, the float
just above and just below it, and their negatives; the nested inputs span 259 blocks (two nested
blocks, the second partial). A last case, all scales equal, codes NaNs (0 times the infinite
reciprocal) in the nested step.

Writes bnb-4bit-reference.json beside itself (float32 and bytes as base64, little-endian).
Run once with any PyTorch (1.13 from Debian's python3-torch gave the committed bytes):
    /usr/bin/python3 reference.py
"""

import base64
import json
import os

os.environ["ATEN_CPU_CAPABILITY"] = "default"

import numpy as np  # noqa: E402
import torch  # noqa: E402

F = np.float32

NF4_LUT = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
           -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
           0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
           0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]
FP4_LUT = [0.0, 0.005208333333, 0.66666667, 1.0, 0.33333333, 0.5, 0.16666667, 0.25]
NF4_THRESHOLDS = [0.03979014977812767, 0.3893125355243683, 0.6427869200706482, 0.8614784181118011,
                  0.5016634166240692, 0.2035212516784668, 0.2920137718319893, 0.1202552504837513,
                  -0.33967943489551544, -0.13791173323988914, -0.045525018125772476,
                  -0.23460740596055984, -0.6106329262256622, -0.4599952697753906,
                  -0.8480964004993439]
FP4_THRESHOLDS = [0.29166667, 0.583333, 0.8333333, 0.4166667, 0.0859375, 0.20833333, 0.00260417]


def nf4_code(x):
    t = [F(v) for v in NF4_THRESHOLDS]
    if x > t[0]:
        if x > t[1]:
            if x > t[2]:
                return 0b1111 if x > t[3] else 0b1110
            return 0b1101 if x > t[4] else 0b1100
        if x > t[5]:
            return 0b1011 if x > t[6] else 0b1010
        return 0b1001 if x > t[7] else 0b1000
    if x > t[8]:
        if x > t[9]:
            return 0b0111 if x > t[10] else 0b0110
        return 0b0101 if x > t[11] else 0b0100
    if x > t[12]:
        return 0b0011 if x > t[13] else 0b0010
    return 0b0001 if x > t[14] else 0b0000


def fp4_code(x):
    t = [F(v) for v in FP4_THRESHOLDS]
    sign = 0b1000 if x < 0 else 0
    x = np.abs(x)
    if x > t[0]:
        if x > t[1]:
            return (0b0011 if x > t[2] else 0b0010) + sign
        return (0b101 if x > t[3] else 0b100) + sign
    if x > t[4]:
        return (0b0111 if x > t[5] else 0b0110) + sign
    return (0b0001 if x > t[6] else 0b0000) + sign


def nf4_value(nibble):
    return F(NF4_LUT[nibble])


def fp4_value(nibble):
    sign = F(1.0) - F(2 * ((nibble & 0b1000) >> 3))
    return F(FP4_LUT[nibble & 0b111]) * sign


CODES = {"nf4": (nf4_code, nf4_value), "fp4": (fp4_code, fp4_value)}


def quantize_4bit(values, quant_type, blocksize=64):
    code, _ = CODES[quant_type]
    n = len(values)
    padded = np.zeros(n + (n % 2), dtype=F)
    padded[:n] = values
    packed = np.zeros(len(padded) // 2, dtype=np.uint8)
    absmax = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for start in range(0, n, blocksize):
            block = values[start:start + blocksize]
            scale = F(np.max(np.abs(block)))
            absmax.append(scale)
            reciprocal = F(1.0) / scale
            for i in range(start, min(start + blocksize, n), 2):
                high = code(padded[i] * reciprocal)
                low = code(padded[i + 1] * reciprocal)
                packed[i // 2] = (high << 4) | low
    return packed, np.array(absmax, dtype=F)


def dequantize_4bit(packed, absmax, n, quant_type, blocksize=64):
    _, value = CODES[quant_type]
    out = np.zeros(n, dtype=F)
    for i in range(n):
        nibble = (packed[i // 2] >> 4) if i % 2 == 0 else (packed[i // 2] & 0xF)
        out[i] = value(int(nibble)) * absmax[i // blocksize]
    return out


def dynamic_map():
    """bitsandbytes' create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8)."""
    data = []
    for i in range(7):
        boundaries = torch.linspace(0.1, 1, 2 ** i + 1, dtype=torch.float32)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-6 + i)) * means).tolist()
        data += (-(10 ** (-6 + i)) * means).tolist()
    data.append(0)
    data.append(1.0)
    data.sort()
    return np.array(torch.tensor(data, dtype=torch.float32).numpy(), dtype=F)


def code_8bit(code, x):
    """The kernel's dQuantize<0>: a binary search from the middle, then the nearer neighbour."""
    pivot, upper_pivot, lower_pivot = 127, 255, 0
    lower, upper = F(-1.0), F(1.0)
    val = code[pivot]
    i = 64
    while i > 0:
        if x > val:
            lower_pivot, lower = pivot, val
            pivot += i
        else:
            upper_pivot, upper = pivot, val
            pivot -= i
        val = code[pivot]
        i >>= 1
    if upper_pivot == 255:
        upper = code[upper_pivot]
    if lower_pivot == 0:
        lower = code[lower_pivot]
    if x > val:
        return upper_pivot if x > (upper + val) * F(0.5) else pivot
    return lower_pivot if x < (lower + val) * F(0.5) else pivot


def quantize_blockwise(values, code, blocksize=256):
    codes = np.zeros(len(values), dtype=np.uint8)
    absmax = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for start in range(0, len(values), blocksize):
            block = values[start:start + blocksize]
            scale = F(np.max(np.abs(block)))
            absmax.append(scale)
            reciprocal = F(1.0) / scale
            for i in range(start, start + len(block)):
                codes[i] = code_8bit(code, values[i] * reciprocal)
    return codes, np.array(absmax, dtype=F)


def dequantize_blockwise(codes, absmax, code, blocksize=256):
    return np.array([code[c] * absmax[i // blocksize] for i, c in enumerate(codes)], dtype=F)


def ties(quant_type):
    """Scale 1: every threshold, the floats just above and below it (FP4's mirrored, with -0.0
    and a tiny negative, which keep the sign bit)."""
    block = [F(1.0)]
    for t in NF4_THRESHOLDS if quant_type == "nf4" else FP4_THRESHOLDS:
        t = F(t)
        for v in (t, np.nextafter(t, F(2)), np.nextafter(t, F(-2))):
            block += [v] if quant_type == "nf4" else [v, -v]
    if quant_type == "fp4":
        block += [F(-0.0), F(-1e-9)]
    assert len(block) <= 64
    return np.array(block + [F(0)] * (64 - len(block)), dtype=F)


def case_input(rng, quant_type, blocks):
    """Ties at scale 1 and at scale 2 (a reciprocal of 0.5 keeps them exact), a block of zeros,
    then normal values (with outliers) ending in a partial block of odd length."""
    normal = rng.standard_normal(64 * (blocks - 3) - 27).astype(F) * F(0.02)
    normal[rng.integers(0, len(normal), 8)] *= F(30)
    tied = ties(quant_type)
    return np.concatenate([tied, tied * F(2), np.zeros(64, dtype=F), normal]).astype(F)


def b64(array):
    return base64.b64encode(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()).decode()


def case(name, quant_type, values, nested):
    packed, absmax = quantize_4bit(values, quant_type)
    result = {"name": name, "quant_type": quant_type, "blocksize": 64, "nested": nested,
              "input": b64(values), "packed": b64(packed)}
    if nested:
        offset = F(np.mean(absmax.astype(np.float64)))
        torch_offset = torch.from_numpy(absmax).mean().item()
        print(f"{name}: offset {offset!r}, torch's mean {F(torch_offset)!r}")
        with np.errstate(invalid="ignore"):
            centred = (absmax - offset).astype(F)
        code = dynamic_map()
        codes, nested_absmax = quantize_blockwise(centred, code)
        absmax = (dequantize_blockwise(codes, nested_absmax, code) + offset).astype(F)
        result.update({"absmax": b64(codes), "nested_absmax": b64(nested_absmax),
                       "nested_offset": b64(np.array([offset], dtype=F))})
    else:
        result["absmax"] = b64(absmax)
    result["dequantized"] = b64(dequantize_4bit(packed, absmax, len(values), quant_type))
    return result


def check_quant_maps():
    """get_4bit_type's tables, as bitsandbytes stores quant_map, against the kernels' LUTs: equal
    values (fp4's stored nibble 8 is +0.0, its Python list writing -0 as an integer; the kernel
    decodes it as -0.0). Returns the kernels' tables, by nibble."""
    nf4 = torch.tensor(NF4_LUT)
    nf4 = (nf4 / nf4.abs().max()).numpy()
    fp4 = torch.tensor([0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0,
                        -0, -0.0625, -8.0, -12.0, -4.0, -6.0, -2.0, -3.0])
    fp4 = (fp4 / fp4.abs().max()).numpy()
    kernel_nf4 = np.array([nf4_value(i) for i in range(16)], dtype=F)
    kernel_fp4 = np.array([fp4_value(i) for i in range(16)], dtype=F)
    assert (nf4 == kernel_nf4).all() and (fp4 == kernel_fp4).all(), "quant_map"
    return {"nf4": b64(kernel_nf4), "fp4": b64(kernel_fp4)}


def main():
    rng = np.random.default_rng(47)
    cases = []
    for quant_type in ("nf4", "fp4"):
        cases.append(case(quant_type, quant_type, case_input(rng, quant_type, 8), False))
        cases.append(case(quant_type + "-nested", quant_type, case_input(rng, quant_type, 259), True))
    equal_scales = np.tile(np.array([F(0.5), F(-0.25)] * 32, dtype=F), 5)
    cases.append(case("nf4-nested-equal-scales", "nf4", equal_scales, True))
    out = {"dynamic_map": b64(dynamic_map()), "decode": check_quant_maps(), "cases": cases}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bnb-4bit-reference.json")
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print("wrote", path)


if __name__ == "__main__":
    main()
