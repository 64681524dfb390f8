/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toolkit_shims.c — the standard C and C++ headers NVRTC lacks, served from memory to a
 * kernel that includes them (kc_toolkit_inputs_for) and part of the toolkit digest.
 *
 * The one idea: each shim maps a standard header onto what the toolkit's libcu++ (cuda/std/…)
 * provides under NVRTC, or onto NVRTC's built-ins; their bytes are in the key, so changing one
 * is a new key.  Callers: toolkit.c and toolkit_direct.c (kc_toolkit_shims), tests
 * (kc_toolkit_shims_set_).  Must not: read a file.
 */
#include "toolkit.h"

#include <stddef.h>

#include "../common/internal.h"

/* ---- the standard headers NVRTC lacks ----
 * Each maps the C or C++ header onto what the toolkit's libcu++ (cuda/std/…) provides under
 * NVRTC, or onto NVRTC's built-ins; their bytes are part of the digest. */

#define STD_ALIAS "namespace std { using namespace cuda::std; }\n"
#define G(n) "#ifndef KCACHE_SHIM_" n "\n#define KCACHE_SHIM_" n "\n"
/* What glibc's <math.h> defines (C99, and the M_ constants of POSIX and GNU), each only where
 * not yet defined (libcu++'s <cuda/std/cmath> defines INFINITY, NAN and FP_* under NVRTC).  NVRTC
 * has no __builtin_huge_val/inff/nanf: the IEEE bit patterns, through __builtin_bit_cast (constant
 * expressions, as glibc's are; what libcu++'s numeric_limits does under NVRTC). */
#define MATH_DEF(n, v) "#ifndef " n "\n#define " n " " v "\n#endif\n"
/* One constant a line, as the table reads. */
// clang-format off
#define MATH_CONSTANTS                                                                                                   \
    MATH_DEF("HUGE_VAL", "(__builtin_bit_cast(double, 0x7ff0000000000000ull))")                                       \
    MATH_DEF("HUGE_VALF", "(__builtin_bit_cast(float, 0x7f800000u))") MATH_DEF("HUGE_VALL", "((long double)HUGE_VAL)")  \
    MATH_DEF("INFINITY", "(__builtin_bit_cast(float, 0x7f800000u))")                                                  \
    MATH_DEF("NAN", "(__builtin_bit_cast(float, 0x7fc00000u))") MATH_DEF("FP_NAN", "0") MATH_DEF("FP_INFINITE", "1")    \
    MATH_DEF("FP_ZERO", "2") MATH_DEF("FP_SUBNORMAL", "3") MATH_DEF("FP_NORMAL", "4")                                  \
    MATH_DEF("FP_ILOGB0", "(-2147483647 - 1)") MATH_DEF("FP_ILOGBNAN", "(-2147483647 - 1)")                           \
    MATH_DEF("MAXFLOAT", "3.40282347e+38F")                                                                          \
    MATH_DEF("M_E", "2.7182818284590452354") MATH_DEF("M_LOG2E", "1.4426950408889634074")                              \
    MATH_DEF("M_LOG10E", "0.43429448190325182765") MATH_DEF("M_LN2", "0.69314718055994530942")                         \
    MATH_DEF("M_LN10", "2.30258509299404568402") MATH_DEF("M_PI", "3.14159265358979323846")                           \
    MATH_DEF("M_PI_2", "1.57079632679489661923") MATH_DEF("M_PI_4", "0.78539816339744830962")                          \
    MATH_DEF("M_1_PI", "0.31830988618379067154") MATH_DEF("M_2_PI", "0.63661977236758134308")                          \
    MATH_DEF("M_2_SQRTPI", "1.12837916709551257390") MATH_DEF("M_SQRT2", "1.41421356237309504880")                     \
    MATH_DEF("M_SQRT1_2", "0.70710678118654752440")                                                                  \
    MATH_DEF("M_Ef", "2.7182818284590452354f") MATH_DEF("M_LOG2Ef", "1.4426950408889634074f")                          \
    MATH_DEF("M_LOG10Ef", "0.43429448190325182765f") MATH_DEF("M_LN2f", "0.69314718055994530942f")                     \
    MATH_DEF("M_LN10f", "2.30258509299404568402f") MATH_DEF("M_PIf", "3.14159265358979323846f")                       \
    MATH_DEF("M_PI_2f", "1.57079632679489661923f") MATH_DEF("M_PI_4f", "0.78539816339744830962f")                      \
    MATH_DEF("M_1_PIf", "0.31830988618379067154f") MATH_DEF("M_2_PIf", "0.63661977236758134308f")                      \
    MATH_DEF("M_2_SQRTPIf", "1.12837916709551257390f") MATH_DEF("M_SQRT2f", "1.41421356237309504880f")                 \
    MATH_DEF("M_SQRT1_2f", "0.70710678118654752440f")
// clang-format on
#define E "#endif\n"

static const kc_header_src shims[] = {
    {"stdint.h",
     G("STDINT_H") "#include <cuda/std/cstdint>\n"
                   "using cuda::std::int8_t; using cuda::std::int16_t; using cuda::std::int32_t; using cuda::std::int64_t;\n"
                   "using cuda::std::uint8_t; using cuda::std::uint16_t; using cuda::std::uint32_t; using cuda::std::uint64_t;\n"
                   "using cuda::std::intptr_t; using cuda::std::uintptr_t; using cuda::std::intmax_t; using cuda::std::uintmax_t;\n"
                   "using cuda::std::int_least8_t; using cuda::std::int_least16_t; using cuda::std::int_least32_t;\n"
                   "using cuda::std::int_least64_t; using cuda::std::uint_least8_t; using cuda::std::uint_least16_t;\n"
                   "using cuda::std::uint_least32_t; using cuda::std::uint_least64_t; using cuda::std::int_fast8_t;\n"
                   "using cuda::std::int_fast16_t; using cuda::std::int_fast32_t; using cuda::std::int_fast64_t;\n"
                   "using cuda::std::uint_fast8_t; using cuda::std::uint_fast16_t; using cuda::std::uint_fast32_t;\n"
                   "using cuda::std::uint_fast64_t;\n" E},
    {"cstdint", G("CSTDINT") "#include <stdint.h>\n" STD_ALIAS E},
    {"stddef.h", G("STDDEF_H") "#include <cuda/std/cstddef>\n"
                               "using cuda::std::size_t; using cuda::std::ptrdiff_t; using cuda::std::nullptr_t;\n"
                               "#ifndef offsetof\n#define offsetof(t, m) __builtin_offsetof(t, m)\n#endif\n" E},
    {"cstddef", G("CSTDDEF") "#include <stddef.h>\n" STD_ALIAS E},
    {"limits.h", G("LIMITS_H") "#include <cuda/std/climits>\n" E},
    {"climits", G("CLIMITS") "#include <cuda/std/climits>\n" E},
    {"float.h",
     G("FLOAT_H") "#define FLT_RADIX 2\n#define FLT_MANT_DIG 24\n#define DBL_MANT_DIG 53\n"
                  "#define FLT_DIG 6\n#define DBL_DIG 15\n#define FLT_MIN_EXP (-125)\n#define DBL_MIN_EXP (-1021)\n"
                  "#define FLT_MAX_EXP 128\n#define DBL_MAX_EXP 1024\n"
                  "#define FLT_MAX 3.40282346638528859812e+38F\n#define DBL_MAX 1.79769313486231570815e+308\n"
                  "#define FLT_MIN 1.17549435082228750797e-38F\n#define DBL_MIN 2.22507385850720138309e-308\n"
                  "#define FLT_EPSILON 1.1920928955078125e-07F\n#define DBL_EPSILON 2.22044604925031308085e-16\n"
                  "#define FLT_TRUE_MIN 1.40129846432481707092e-45F\n#define DBL_TRUE_MIN 4.94065645841246544177e-324\n" E},
    {"cfloat", G("CFLOAT") "#include <float.h>\n" E},
    {"math.h",
     G("MATH_H") "/* CUDA's math functions (sqrtf, expf, …) are built into NVRTC; the constants are glibc's. */\n" MATH_CONSTANTS
         E},
    /* libcu++ defines INFINITY and NAN its own way under NVRTC, unguarded: ours give way to its. */
    {"cmath", G("CMATH") "#undef INFINITY\n#undef NAN\n#include <cuda/std/cmath>\n#include <math.h>\n" STD_ALIAS E},
    {"assert.h",
     "#undef assert\n#ifdef NDEBUG\n#define assert(e) ((void)0)\n#else\n"
     "extern \"C\" __host__ __device__ void __assertfail(const char *, const char *, unsigned, const char *,"
     " unsigned long);\n"
     "#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, 1))\n#endif\n"},
    {"cassert", "#include <assert.h>\n"},
    {"type_traits", G("TYPE_TRAITS") "#include <cuda/std/type_traits>\n" STD_ALIAS E},
    {"limits", G("LIMITS") "#include <cuda/std/limits>\n" STD_ALIAS E},
    {"utility", G("UTILITY") "#include <cuda/std/utility>\n" STD_ALIAS E},
    {"cstdlib", G("CSTDLIB") "#include <cuda/std/cstdlib>\n" STD_ALIAS E},
    {"cstring", G("CSTRING") "#include <cuda/std/cstring>\n" STD_ALIAS E},
    {"array", G("ARRAY") "#include <cuda/std/array>\n" STD_ALIAS E},
    {"tuple", G("TUPLE") "#include <cuda/std/tuple>\n" STD_ALIAS E},
    {"functional", G("FUNCTIONAL") "#include <cuda/std/functional>\n" STD_ALIAS E},
    {"complex", G("COMPLEX") "#include <cuda/std/complex>\n" STD_ALIAS E},
};
#undef G
#undef E
#undef STD_ALIAS
#undef MATH_CONSTANTS
#undef MATH_DEF

static const kc_header_src *shims_now = shims; /* kc_toolkit_shims_set_: another set, for tests */
static size_t nshims_now = KC_ARRAY_LEN(shims);

const kc_header_src *kc_toolkit_shims(size_t *n) {
    *n = nshims_now;
    return shims_now;
}

void kc_toolkit_shims_set_(const kc_header_src *v, size_t n) {
    shims_now = v ? v : shims;
    nshims_now = v ? n : KC_ARRAY_LEN(shims);
}
