//! Choosing the next token as llama2.c's `run.c` does: greedy at temperature 0, otherwise
//! softmax with temperature and multinomial or top-p sampling driven by run.c's xorshift RNG.

/// run.c's xorshift* generator, so that a seed gives the same tokens as `run -s SEED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XorShift {
    state: u64,
}

impl XorShift {
    /// A generator with this exact state (run.c uses the seed as the state; 0 stays 0 forever).
    pub fn new(seed: u64) -> Self {
        XorShift { state: seed }
    }

    /// The current state.
    pub fn state(&self) -> u64 {
        self.state
    }

    /// run.c's `random_u32`.
    pub fn next_u32(&mut self) -> u32 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }

    /// run.c's `random_f32`: uniform in [0, 1) with 24 bits.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / 16_777_216.0
    }

    /// A standard normal sample scaled by `std` (Box–Muller; for weight initialisation).
    pub fn normal(&mut self, std: f32) -> f32 {
        let u1 = (self.next_f32() as f64).max(1e-12);
        let u2 = self.next_f32() as f64;
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32 * std
    }

    /// `n` normal samples with standard deviation `std`.
    pub fn normal_vec(&mut self, n: usize, std: f32) -> Vec<f32> {
        (0..n).map(|_| self.normal(std)).collect()
    }

    /// A uniform index in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u32() as u64) << 32 | self.next_u32() as u64) % n.max(1) as u64) as usize
    }
}

/// The settings of one sampler, with run.c's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplerConfig {
    /// 0 means greedy (argmax); 1 leaves the distribution as it is.
    pub temperature: f32,
    /// Nucleus threshold; values outside (0, 1) sample from the full distribution.
    pub topp: f32,
    /// RNG seed; run.c replaces 0 by the time, callers here must choose one.
    pub seed: u64,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            temperature: 1.0,
            topp: 0.9,
            seed: 42,
        }
    }
}

/// Picks tokens from logits; owns its scratch buffer so sampling allocates nothing.
#[derive(Debug, Clone)]
pub struct Sampler {
    config: SamplerConfig,
    rng: XorShift,
    probindex: Vec<(f32, u32)>,
}

impl Sampler {
    /// A sampler with `config` (its seed is the RNG's initial state).
    pub fn new(config: SamplerConfig) -> Self {
        Sampler {
            config,
            rng: XorShift::new(config.seed),
            probindex: Vec::new(),
        }
    }

    /// The settings.
    pub fn config(&self) -> SamplerConfig {
        self.config
    }

    /// The next token for these logits; the logits are overwritten (as in run.c).
    pub fn sample(&mut self, logits: &mut [f32]) -> u32 {
        if logits.is_empty() {
            return 0;
        }
        if self.config.temperature == 0.0 {
            return argmax(logits);
        }
        let t = self.config.temperature;
        for l in logits.iter_mut() {
            *l /= t;
        }
        softmax(logits);
        let coin = self.rng.next_f32();
        let topp = self.config.topp;
        if topp <= 0.0 || topp >= 1.0 {
            sample_mult(logits, coin)
        } else {
            self.sample_topp(logits, topp, coin)
        }
    }

    fn sample_topp(&mut self, probs: &[f32], topp: f32, coin: f32) -> u32 {
        let n = probs.len();
        let cutoff = (1.0 - topp) / (n as f32 - 1.0);
        self.probindex.clear();
        self.probindex.extend(
            probs
                .iter()
                .enumerate()
                .filter(|(_, p)| **p >= cutoff)
                .map(|(i, p)| (*p, i as u32)),
        );
        if self.probindex.is_empty() {
            return argmax(probs);
        }
        self.probindex
            .sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal));
        let mut cumulative = 0.0f32;
        let mut last = self.probindex.len() - 1;
        for (i, (p, _)) in self.probindex.iter().enumerate() {
            cumulative += p;
            if cumulative > topp {
                last = i;
                break;
            }
        }
        let r = coin * cumulative;
        let mut cdf = 0.0f32;
        for (p, idx) in &self.probindex[..=last] {
            cdf += p;
            if r < cdf {
                return *idx;
            }
        }
        self.probindex[last].1
    }
}

/// Index of the largest value (the first one on ties), as run.c's `sample_argmax`.
pub fn argmax(xs: &[f32]) -> u32 {
    let mut best = 0;
    for (i, x) in xs.iter().enumerate().skip(1) {
        if *x > xs[best] {
            best = i;
        }
    }
    best as u32
}

fn sample_mult(probs: &[f32], coin: f32) -> u32 {
    let mut cdf = 0.0f32;
    for (i, p) in probs.iter().enumerate() {
        cdf += p;
        if coin < cdf {
            return i as u32;
        }
    }
    probs.len() as u32 - 1
}

/// In-place softmax, as run.c's.
pub fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in x.iter_mut() {
        *v /= sum;
    }
}
