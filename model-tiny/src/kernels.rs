//! The f32 kernels of the inference path, written so that LLVM vectorises them (SSE2/AVX natively,
//! SIMD128 in the browser) without `unsafe`.

const LANES: usize = 16;

/// Dot product of two equally long vectors with 16 independent accumulators.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (ca, ra) = a[..n].as_chunks::<LANES>();
    let (cb, rb) = b[..n].as_chunks::<LANES>();
    let mut acc = [0.0f32; LANES];
    for (x, y) in ca.iter().zip(cb) {
        for k in 0..LANES {
            acc[k] += x[k] * y[k];
        }
    }
    let mut tail = 0.0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    let mut width = LANES / 2;
    while width > 0 {
        for k in 0..width {
            acc[k] += acc[k + width];
        }
        width /= 2;
    }
    acc[0] + tail
}

/// `out = W x` for a row-major `W` of shape `[out.len(), x.len()]`.
#[inline]
pub fn matvec(out: &mut [f32], w: &[f32], x: &[f32]) {
    let n = x.len();
    if n == 0 {
        out.fill(0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(w.chunks_exact(n)) {
        *o = dot(row, x);
    }
}

/// run.c's RMSNorm: `out = weight * x / sqrt(mean(x^2) + 1e-5)`.
#[inline]
pub fn rmsnorm(out: &mut [f32], x: &[f32], weight: &[f32]) {
    let ss = dot(x, x) / x.len() as f32 + crate::config::NORM_EPS;
    let inv = 1.0 / ss.sqrt();
    for ((o, xi), w) in out.iter_mut().zip(x).zip(weight) {
        *o = w * (inv * xi);
    }
}

/// `x += y`, elementwise.
#[inline]
pub fn add_assign(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// `x += a * y`, elementwise.
#[inline]
pub fn axpy(x: &mut [f32], a: f32, y: &[f32]) {
    for (xi, yi) in x.iter_mut().zip(y) {
        *xi += a * yi;
    }
}
