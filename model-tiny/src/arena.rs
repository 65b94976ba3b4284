//! One buffer for all of a model's matrices, laid out in the order a token reads them.
//!
//! A token streams every weight once (61 MB for the stories15M shape). With 4 KiB pages that
//! walk misses the TLB every 4 KiB and the hardware prefetchers restart at every page; on Linux
//! the buffer is therefore an anonymous mapping advised for transparent huge pages (2 MiB), which
//! `cargo xtask bench model` shows as the difference between trailing and matching llama2.c's
//! `run.c` on that shape. Elsewhere (the browser, other systems) it is a plain vector.

use std::ops::Range;

/// Where a matrix starts is rounded up to this many floats (64 bytes, one cache line).
const ALIGN: usize = 16;

/// The matrices, copied once into one allocation; [`Arena::get`] returns one by its range.
pub struct Arena {
    mem: Mem,
}

enum Mem {
    #[cfg(target_os = "linux")]
    Mapped(memmap2::MmapMut),
    Heap(Vec<f32>),
}

impl Arena {
    /// Copies `parts` into one buffer, each starting on a cache line, and returns the buffer with
    /// the range of every part, in order.
    pub fn new(parts: &[&[f32]]) -> (Arena, Vec<Range<usize>>) {
        let mut ranges = Vec::with_capacity(parts.len());
        let mut len = 0;
        for p in parts {
            ranges.push(len..len + p.len());
            len = (len + p.len()).next_multiple_of(ALIGN);
        }
        let mut arena = Arena {
            mem: Mem::allocate(len),
        };
        let buf = arena.floats_mut();
        for (p, r) in parts.iter().zip(&ranges) {
            buf[r.clone()].copy_from_slice(p);
        }
        (arena, ranges)
    }

    /// The floats in `range` (one of the ranges [`Arena::new`] returned).
    #[inline(always)]
    pub fn get(&self, range: &Range<usize>) -> &[f32] {
        &self.floats()[range.clone()]
    }

    /// Whether the buffer is the huge-page mapping (false for the plain-vector fallback).
    #[cfg(test)]
    fn is_mapped(&self) -> bool {
        match &self.mem {
            #[cfg(target_os = "linux")]
            Mem::Mapped(_) => true,
            Mem::Heap(_) => false,
        }
    }

    fn floats(&self) -> &[f32] {
        match &self.mem {
            #[cfg(target_os = "linux")]
            Mem::Mapped(m) => bytemuck::cast_slice(&m[..]),
            Mem::Heap(v) => v,
        }
    }

    fn floats_mut(&mut self) -> &mut [f32] {
        match &mut self.mem {
            #[cfg(target_os = "linux")]
            Mem::Mapped(m) => bytemuck::cast_slice_mut(&mut m[..]),
            Mem::Heap(v) => v,
        }
    }
}

impl Mem {
    /// `len` zeroed floats: a huge-page-advised mapping on Linux when the system grants one
    /// (the advice is only a hint; a refused mapping falls back to the heap).
    fn allocate(len: usize) -> Mem {
        #[cfg(target_os = "linux")]
        if len > 0
            && let Ok(m) = memmap2::MmapMut::map_anon(len * size_of::<f32>())
        {
            // Advised before the first touch, so the pages are faulted in as huge ones.
            let _ = m.advise(memmap2::Advice::HugePage);
            return Mem::Mapped(m);
        }
        Mem::Heap(vec![0.0; len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_come_back_intact_and_cache_line_aligned() {
        let a: Vec<f32> = (0..5).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..40).map(|i| -(i as f32)).collect();
        let c: Vec<f32> = vec![];
        let (arena, ranges) = Arena::new(&[&a, &b, &c, &a]);
        assert_eq!(arena.get(&ranges[0]), &a[..]);
        assert_eq!(arena.get(&ranges[1]), &b[..]);
        assert_eq!(arena.get(&ranges[2]), &c[..]);
        assert_eq!(arena.get(&ranges[3]), &a[..]);
        for r in &ranges {
            assert_eq!(r.start % ALIGN, 0, "{r:?}");
        }
        #[cfg(target_os = "linux")]
        assert!(arena.is_mapped());
    }

    #[test]
    fn an_empty_model_needs_no_mapping() {
        let (arena, ranges) = Arena::new(&[]);
        assert!(ranges.is_empty());
        assert!(!arena.is_mapped());
    }
}
