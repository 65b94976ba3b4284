//! The f32 kernels of the inference path, written so that LLVM vectorises them (SSE2/AVX natively,
//! SIMD128 in the browser) without `unsafe`. The two exceptions, x86_64 only, are the prefetch
//! hint and the call into the AVX matrix-vector product after the CPU has been checked for AVX.

use wide::f32x4;

const LANES: usize = 8;

/// Dot product of two equally long vectors: four independent 4-lane accumulators, so that long
/// rows keep several loads in flight and short ones (a head of 8) still use vector operations.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (v, tail) = dot_parts(a, b);
    v.reduce_add() + tail
}

/// [`dot`] before its last step: the four lanes still to be added (in order) and the scalar tail.
#[inline(always)]
fn dot_parts(a: &[f32], b: &[f32]) -> (f32x4, f32) {
    let (ga, ra) = a.as_chunks::<16>();
    let (gb, rb) = b.as_chunks::<16>();
    let mut acc = [f32x4::ZERO; 4];
    for (xa, xb) in ga.iter().zip(gb) {
        let (ca, cb) = (xa.as_chunks::<4>().0, xb.as_chunks::<4>().0);
        for j in 0..4 {
            acc[j] += f32x4::new(ca[j]) * f32x4::new(cb[j]);
        }
    }
    dot_rest(acc, ra, rb)
}

/// The end of every version of the dot product, so that they all give the same bits: once each
/// whole group of 16 floats is in `acc` (lane `l` of a group in `acc[l / 4]`), the last (< 16)
/// floats four at a time into `acc[0..]`, the accumulators added in a fixed order, and the last
/// (< 4) floats one at a time into the scalar tail.
#[inline(always)]
fn dot_rest(mut acc: [f32x4; 4], a: &[f32], b: &[f32]) -> (f32x4, f32) {
    let (ca, ra) = a.as_chunks::<4>();
    let (cb, rb) = b.as_chunks::<4>();
    for (j, (xa, xb)) in ca.iter().zip(cb).enumerate() {
        acc[j] += f32x4::new(*xa) * f32x4::new(*xb);
    }
    let mut tail = 0.0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    ((acc[0] + acc[2]) + (acc[1] + acc[3]), tail)
}

/// Matrices at least this large (in floats, 256 KiB) do not stay in the core's caches between
/// tokens, so [`matvec`] streams them with software prefetches where they help
/// ([`prefetch_helps`]).
const STREAMED: usize = 1 << 16;

/// How far ahead of the row being multiplied the prefetches run, in floats (16 KiB). Measured
/// with `cargo xtask bench model` on the stories15M shape on an Intel CPU: 1 KiB gains less,
/// 16–64 KiB the same.
const PREFETCH_AHEAD: usize = 4096;

/// Whether [`matvec`] issues software prefetches on this CPU: on Intel's, where they were
/// measured to gain about 1.3× on the stories15M shape; not on others. On an AMD EPYC (Zen),
/// `cargo xtask bench model` measured the same hints as a loss, whatever their distance
/// (1–64 KiB) or level (L1, L2, non-temporal): 100M shape 41 tok/s with them, 72 without
/// (run.c: 46); stories15M shape 353 against 492 (run.c: 345); its own prefetchers do better.
#[cfg(target_arch = "x86_64")]
fn prefetch_helps() -> bool {
    static HELPS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HELPS.get_or_init(|| {
        // CPUID leaf 0: the vendor's name in EBX, EDX, ECX.
        let id = std::arch::x86_64::__cpuid(0);
        let vendor: [u32; 3] = [id.ebx, id.edx, id.ecx];
        bytemuck::cast::<[u32; 3], [u8; 12]>(vendor) == *b"GenuineIntel"
    })
}

/// No software prefetch elsewhere (wasm has none; other CPUs rely on their hardware prefetchers).
#[cfg(not(target_arch = "x86_64"))]
fn prefetch_helps() -> bool {
    false
}

/// Floats per cache line.
const LINE: usize = 16;

/// `out = W x` for a row-major `W` of shape `[out.len(), x.len()]`.
///
/// A large `W` comes from memory, once per token, and the hardware prefetchers stop at every
/// 4 KiB boundary; so while a row is multiplied, the cache lines 16 KiB further on (the rest of
/// this matrix, then whatever follows it, which in the model's arena is the next matrix) are
/// requested ahead, on the CPUs where that was measured to help ([`prefetch_helps`]).
#[inline(always)]
pub fn matvec(out: &mut [f32], w: &[f32], x: &[f32]) {
    let n = x.len();
    if n == 0 {
        out.fill(0.0);
        return;
    }
    let streamed = w.len() >= STREAMED && prefetch_helps();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        avx::run_matvec(out, w, x, streamed);
        return;
    }
    matvec_rows(out, w, x, streamed, dot);
}

/// The loop of [`matvec`] with a given dot product (inlined, so each caller gets its own copy
/// compiled for its instruction set).
#[inline(always)]
fn matvec_rows(
    out: &mut [f32],
    w: &[f32],
    x: &[f32],
    streamed: bool,
    dot: impl Fn(&[f32], &[f32]) -> f32,
) {
    let n = x.len();
    for (i, (o, row)) in out.iter_mut().zip(w.chunks_exact(n)).enumerate() {
        if streamed {
            let ahead = w.as_ptr().wrapping_add(i * n + PREFETCH_AHEAD);
            for k in (0..n).step_by(LINE) {
                prefetch(ahead.wrapping_add(k));
            }
        }
        *o = dot(row, x);
    }
}

/// [`matvec`] with 256-bit AVX registers where the CPU has them (checked at run time, since
/// binaries are built for baseline x86_64): two 8-lane accumulators hold exactly the 16 lanes of
/// the portable [`dot`], with the same separate multiply and add (no FMA), so the result is the
/// same bit for bit and only the speed differs.
#[cfg(target_arch = "x86_64")]
mod avx {
    use super::{dot_rest, matvec_rows};
    use std::arch::x86_64::{__m256, _mm256_add_ps, _mm256_mul_ps, _mm256_setzero_ps};
    use wide::f32x4;

    /// Runs [`matvec_avx`]; the caller has checked that the CPU has AVX.
    #[inline(always)]
    pub fn run_matvec(out: &mut [f32], w: &[f32], x: &[f32], streamed: bool) {
        #[allow(unsafe_code)]
        // SAFETY: `matvec_avx` needs AVX, and `matvec` calls this only after
        // `is_x86_feature_detected!("avx")` said the CPU has it.
        unsafe {
            matvec_avx(out, w, x, streamed)
        }
    }

    #[target_feature(enable = "avx")]
    fn matvec_avx(out: &mut [f32], w: &[f32], x: &[f32], streamed: bool) {
        matvec_rows(out, w, x, streamed, |a, b| dot(a, b));
    }

    #[target_feature(enable = "avx")]
    #[inline]
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        let (ga, ra) = a.as_chunks::<16>();
        let (gb, rb) = b.as_chunks::<16>();
        let [mut lo, mut hi] = [_mm256_setzero_ps(); 2];
        for (xa, xb) in ga.iter().zip(gb) {
            let [a0, a1]: [__m256; 2] = bytemuck::cast(*xa);
            let [b0, b1]: [__m256; 2] = bytemuck::cast(*xb);
            lo = _mm256_add_ps(lo, _mm256_mul_ps(a0, b0));
            hi = _mm256_add_ps(hi, _mm256_mul_ps(a1, b1));
        }
        let lanes: [[f32; 4]; 4] = bytemuck::cast([lo, hi]);
        let (v, tail) = dot_rest(lanes.map(f32x4::new), ra, rb);
        v.reduce_add() + tail
    }
}

/// Asks for the cache line holding `p` to be loaded; a hint only: it never faults and reads
/// nothing into the program, so `p` may point anywhere, even past the end of an allocation.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch(p: *const f32) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: PREFETCHT0 is part of SSE, which every x86_64 CPU has; it does not dereference
    // `p` in the language's sense (no load, no fault, any address allowed).
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) }
}

/// No prefetch hint elsewhere (wasm has none; other CPUs rely on their hardware prefetchers).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn prefetch(_: *const f32) {}

/// run.c's RMSNorm: `out = weight * x / sqrt(mean(x^2) + eps)` (run.c's eps is 1e-5).
#[inline(always)]
pub fn rmsnorm(out: &mut [f32], x: &[f32], weight: &[f32], eps: f32) {
    let ss = dot(x, x) / x.len() as f32 + eps;
    let inv = 1.0 / ss.sqrt();
    for ((o, xi), w) in out.iter_mut().zip(x).zip(weight) {
        *o = w * (inv * xi);
    }
}

/// The sum of `x` over 8 lanes.
#[inline(always)]
pub fn sum(x: &[f32]) -> f32 {
    let (chunks, rest) = x.as_chunks::<LANES>();
    let mut acc = [0.0f32; LANES];
    for c in chunks {
        for k in 0..LANES {
            acc[k] += c[k];
        }
    }
    acc.iter().sum::<f32>() + rest.iter().sum::<f32>()
}

/// One attention head: scores of `q` against every cached key (at `off` within each
/// `kv_dim`-wide position), softmax, then the weighted sum of the cached values into `out`.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // The head's slices and its geometry; a struct would only rename them.
pub fn attend(
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    kv_dim: usize,
    off: usize,
    scale: f32,
    att: &mut [f32],
    out: &mut [f32],
) {
    let hs = q.len();
    // The common head sizes get a copy of the loop where the length is a constant, so the dot
    // product unrolls completely (same arithmetic, so the same bits, as the general loop).
    match hs {
        8 => scores::<8>(q, keys, kv_dim, off, att),
        16 => scores::<16>(q, keys, kv_dim, off, att),
        32 => scores::<32>(q, keys, kv_dim, off, att),
        48 => scores::<48>(q, keys, kv_dim, off, att),
        64 => scores::<64>(q, keys, kv_dim, off, att),
        _ => {
            for (a, key) in att.iter_mut().zip(keys.chunks_exact(kv_dim)) {
                *a = dot(q, &key[off..off + hs]);
            }
        }
    }
    // Divided in a loop of its own, so the divisions vectorise.
    for a in att.iter_mut() {
        *a /= scale;
    }
    softmax(att);
    let (out8, rest) = out.as_chunks_mut::<LANES>();
    // Eight output lanes at a time stay in registers across all positions.
    for (c, o) in out8.iter_mut().enumerate() {
        let start = off + c * LANES;
        let mut acc = [0.0f32; LANES];
        for (a, value) in att.iter().zip(values.chunks_exact(kv_dim)) {
            let v = &value[start..start + LANES];
            for k in 0..LANES {
                acc[k] += a * v[k];
            }
        }
        *o = acc;
    }
    if !rest.is_empty() {
        let start = off + out8.len() * LANES;
        rest.fill(0.0);
        for (a, value) in att.iter().zip(values.chunks_exact(kv_dim)) {
            axpy(rest, *a, &value[start..start + rest.len()]);
        }
    }
}

/// The dot product of `q` (of length `N`) with each cached key's head at `off`, into `att`.
#[inline(always)]
fn scores<const N: usize>(q: &[f32], keys: &[f32], kv_dim: usize, off: usize, att: &mut [f32]) {
    let Ok(q) = <&[f32; N]>::try_from(q) else {
        unreachable!("the caller matched the head size")
    };
    for (a, key) in att.iter_mut().zip(keys.chunks_exact(kv_dim)) {
        let k: &[f32; N] = key[off..off + N]
            .try_into()
            .expect("a head lies within kv_dim");
        *a = dot(q, k);
    }
}

/// `x += y`, elementwise.
#[inline(always)]
pub fn add_assign(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// `x += a * y`, elementwise.
#[inline(always)]
pub fn axpy(x: &mut [f32], a: f32, y: &[f32]) {
    for (xi, yi) in x.iter_mut().zip(y) {
        *xi += a * yi;
    }
}

/// `e^x` in f32 without branches, so loops over it vectorise (as gcc's libmvec does for run.c).
/// Cephes' `expf` polynomial: within 2 ulp of the correctly rounded result over the f32 range.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const ROUND: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer.
    let x = x.clamp(-87.336_55, 88.722_83);
    let t = x * LOG2E + ROUND;
    let n = t - ROUND;
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let p = ((((1.987_569_1e-4 * r + 1.398_2e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 0.166_666_65)
        * r
        + 0.5;
    let y = p * r * r + r + 1.0;
    // 2^n built from its exponent bits; n is in -126..=128, split in two to stay finite.
    let ni = t.to_bits() as i32 - ROUND.to_bits() as i32;
    let half = ni >> 1;
    let s1 = f32::from_bits(((half + 127) as u32) << 23);
    let s2 = f32::from_bits(((ni - half + 127) as u32) << 23);
    y * s1 * s2
}

/// The largest element of `x` (negative infinity when empty), over 8 lanes so it vectorises.
#[inline(always)]
pub fn max(x: &[f32]) -> f32 {
    let (chunks, rest) = x.as_chunks::<LANES>();
    let mut acc = [f32::NEG_INFINITY; LANES];
    for c in chunks {
        for k in 0..LANES {
            acc[k] = if c[k] > acc[k] { c[k] } else { acc[k] };
        }
    }
    acc.iter()
        .chain(rest)
        .copied()
        .fold(f32::NEG_INFINITY, f32::max)
}

/// In-place softmax (max subtracted, then divided by the sum) using [`exp`].
#[inline(always)]
pub fn softmax(x: &mut [f32]) {
    let max = max(x);
    // Two loops, so the exponentials vectorise; the sum then runs over 8 lanes.
    for v in x.iter_mut() {
        *v = exp(*v - max);
    }
    let sum = sum(x);
    for v in x.iter_mut() {
        *v /= sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_close_to_std() {
        let mut worst = 0.0f32;
        let mut x = -87.0f32;
        while x < 88.0 {
            let (a, b) = (exp(x), x.exp());
            worst = worst.max(((a - b) / b).abs());
            x += 0.0137;
        }
        assert!(worst < 3e-7, "worst relative error {worst}");
        assert_eq!(exp(-1000.0), (-87.336_55f32).exp().max(exp(-1000.0)));
        assert!(exp(0.0) == 1.0);
    }

    /// The AVX matrix-vector product must give the portable one's bits, for every row length
    /// (whole 16-float groups, 4-float chunks after them, a scalar tail) and with prefetching.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx_matvec_gives_the_same_bits_as_the_portable_one() {
        if !std::arch::is_x86_feature_detected!("avx") {
            eprintln!("no AVX on this CPU: nothing to compare");
            return;
        }
        let mut rng = crate::sampler::XorShift::new(3);
        for n in [1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 48, 64, 70, 172, 288] {
            let rows = 9;
            let w: Vec<f32> = (0..rows * n).map(|_| rng.next_f32() - 0.5).collect();
            let x: Vec<f32> = (0..n).map(|_| rng.next_f32() * 3.0 - 1.0).collect();
            for streamed in [false, true] {
                let mut portable = vec![0.0; rows];
                let mut avx = vec![0.0; rows];
                matvec_rows(&mut portable, &w, &x, streamed, dot);
                avx::run_matvec(&mut avx, &w, &x, streamed);
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&portable), bits(&avx), "row length {n}");
            }
        }
    }
}
