//! Batched matrix products for training's attention (`q · kᵀ` and `weights · v`, one product per
//! sequence and head), as one candle op: the batch's products run side by side on all cores,
//! each single-threaded. candle runs them one after another, each asking its matrix library for
//! threads that such small products (256 × 256 × 8 for stories260K) never get, so attention ran
//! on one core. Either operand may be read transposed in place (its strides), which the backward
//! pass uses instead of copying the attention weights.

use candle_core::{CpuStorage, CustomOp2, Error, Layout, Result, Shape, Tensor};

/// `a' · b'` for each batch, where `a'` is `a` or its transpose (`ta`), likewise `b'`.
struct Bmm {
    ta: bool,
    tb: bool,
}

/// One operand: stored as `[batch, rows, cols]` (row-major, contiguous).
#[derive(Clone, Copy)]
struct Operand {
    rows: usize,
    cols: usize,
    transposed: bool,
}

impl Operand {
    /// `(rows, cols)` as the product reads it.
    fn logical(self) -> (usize, usize) {
        if self.transposed {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        }
    }

    /// `(column stride, row stride)` of the logical matrix.
    fn strides(self) -> (isize, isize) {
        if self.transposed {
            (self.cols as isize, 1)
        } else {
            (1, self.cols as isize)
        }
    }
}

/// The batch dimensions and the last two of a contiguous layout.
fn split(layout: &Layout, transposed: bool) -> Result<(Vec<usize>, Operand)> {
    match layout.dims() {
        [batch @ .., rows, cols] if layout.is_contiguous() => Ok((
            batch.to_vec(),
            Operand {
                rows: *rows,
                cols: *cols,
                transposed,
            },
        )),
        dims => Err(Error::Msg(format!(
            "bmm: expected contiguous operands of at least two dimensions, got {dims:?}"
        ))),
    }
}

impl CustomOp2 for Bmm {
    fn name(&self) -> &'static str {
        "bmm"
    }

    fn cpu_fwd(
        &self,
        a_storage: &CpuStorage,
        a_layout: &Layout,
        b_storage: &CpuStorage,
        b_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (batch, a) = split(a_layout, self.ta)?;
        let (b_batch, b) = split(b_layout, self.tb)?;
        let ((m, k), (k2, n)) = (a.logical(), b.logical());
        if batch != b_batch || k != k2 {
            return Err(Error::Msg(format!(
                "bmm: cannot multiply {:?} by {:?}",
                a_layout.dims(),
                b_layout.dims()
            )));
        }
        let (start_a, end_a) = (
            a_layout.start_offset(),
            a_layout.start_offset() + a_layout.shape().elem_count(),
        );
        let (start_b, end_b) = (
            b_layout.start_offset(),
            b_layout.start_offset() + b_layout.shape().elem_count(),
        );
        let lhs = &a_storage.as_slice::<f32>()?[start_a..end_a];
        let rhs = &b_storage.as_slice::<f32>()?[start_b..end_b];
        let count: usize = batch.iter().product();
        let mut out = vec![0.0f32; count * m * n];
        if m * n > 0 {
            let one = |i: usize, dst: &mut [f32]| {
                product(
                    dst,
                    (m, n, k),
                    &lhs[i * m * k..(i + 1) * m * k],
                    a,
                    &rhs[i * k * n..(i + 1) * k * n],
                    b,
                );
            };
            // One product to a thread at a time: each is thousands of multiply-adds.
            crate::fused::for_rows(&mut out, m * n, 1, one);
        }
        let mut dims = batch;
        dims.extend([m, n]);
        Ok((CpuStorage::F32(out), Shape::from(dims)))
    }

    fn bwd(
        &self,
        a: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        // C = A'·B' gives dA' = G·B'ᵀ and dB' = A'ᵀ·G; a transposed operand's gradient is the
        // transpose of its logical one: dA = (G·B'ᵀ)ᵀ = B'·Gᵀ, dB = (A'ᵀ·G)ᵀ = Gᵀ·A'.
        let g = grad.contiguous()?;
        let grad_a = if self.ta {
            bmm(b, &g, self.tb, true)?
        } else {
            bmm(&g, b, false, !self.tb)?
        };
        let grad_b = if self.tb {
            bmm(&g, a, true, self.ta)?
        } else {
            bmm(a, &g, !self.ta, false)?
        };
        Ok((Some(grad_a), Some(grad_b)))
    }
}

/// `dst = a' · b'` for one batch; every slice holds exactly its matrix.
fn product(
    dst: &mut [f32],
    (m, n, k): (usize, usize, usize),
    lhs: &[f32],
    a: Operand,
    rhs: &[f32],
    b: Operand,
) {
    assert!(dst.len() == m * n && lhs.len() == m * k && rhs.len() == k * n);
    let (lhs_cs, lhs_rs) = a.strides();
    let (rhs_cs, rhs_rs) = b.strides();
    #[allow(unsafe_code)]
    // SAFETY: the assertion above makes every index the strides reach lie within its slice
    // (an m × k, k × n or m × n matrix, row-major or transposed), `dst` is borrowed mutably and
    // so aliases neither input, and `read_dst = false` never reads its old contents.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            false,
            lhs.as_ptr(),
            lhs_cs,
            lhs_rs,
            rhs.as_ptr(),
            rhs_cs,
            rhs_rs,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// `a' · b'` over the leading (batch) dimensions of `a` and `b`, where `a'` is `a` transposed
/// when `ta` (its last two dimensions swapped), likewise `b'`.
pub fn bmm(a: &Tensor, b: &Tensor, ta: bool, tb: bool) -> Result<Tensor> {
    a.contiguous()?.apply_op2(&b.contiguous()?, Bmm { ta, tb })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::fused::tests::max_diff;
    use candle_core::{Device, Var};

    /// Every transposition, forward and backward, against candle's own matmul.
    #[test]
    fn products_and_gradients_match_candles_matmul() {
        let dev = Device::Cpu;
        let (m, k, n) = (5, 3, 4);
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let a_shape = if ta { (2, 3, k, m) } else { (2, 3, m, k) };
            let b_shape = if tb { (2, 3, n, k) } else { (2, 3, k, n) };
            let a = Var::from_tensor(&Tensor::randn(0f32, 1.0, a_shape, &dev).unwrap()).unwrap();
            let b = Var::from_tensor(&Tensor::randn(0f32, 1.0, b_shape, &dev).unwrap()).unwrap();
            let weights = Tensor::randn(0f32, 1.0, (2, 3, m, n), &dev).unwrap();
            let logical = |x: &Var, t: bool| {
                let x = x.as_tensor();
                if t { x.t().unwrap() } else { x.clone() }
            };
            let plain = logical(&a, ta).matmul(&logical(&b, tb)).unwrap();
            let ours = bmm(a.as_tensor(), b.as_tensor(), ta, tb).unwrap();
            assert_eq!(ours.dims(), &[2, 3, m, n]);
            assert!(max_diff(&ours, &plain) < 1e-5, "{ta} {tb}");
            let grads = |c: &Tensor| {
                let g = (c * &weights)
                    .unwrap()
                    .sum_all()
                    .unwrap()
                    .backward()
                    .unwrap();
                (
                    g.get(a.as_tensor()).unwrap().clone(),
                    g.get(b.as_tensor()).unwrap().clone(),
                )
            };
            let ((ga, gb), (pa, pb)) = (grads(&ours), grads(&plain));
            assert!(max_diff(&ga, &pa) < 1e-5, "grad a, {ta} {tb}");
            assert!(max_diff(&gb, &pb) < 1e-5, "grad b, {ta} {tb}");
        }
    }

    #[test]
    fn mismatched_shapes_are_errors() {
        let dev = Device::Cpu;
        let a = Tensor::zeros((2, 3, 4), candle_core::DType::F32, &dev).unwrap();
        let b = Tensor::zeros((2, 5, 4), candle_core::DType::F32, &dev).unwrap();
        assert!(bmm(&a, &b, false, false).is_err());
        assert!(bmm(&a, &b, false, true).is_ok());
        let other_batch = Tensor::zeros((3, 4, 4), candle_core::DType::F32, &dev).unwrap();
        assert!(bmm(&a, &other_batch, false, false).is_err());
    }
}
