//! A BERT encoder for CPU inference over packed sequences: what
//! `LocalEmbedder` runs.
//!
//! Key decision: the texts of a forward pass are packed one after another
//! (no padding), so the per-token work — the linear layers, GELU and the
//! layer norms, nearly all of a small model's time — is done for real
//! tokens only, and attention runs per text over its own tokens, where a
//! padded batch needs a mask. Buffers are plain `f32` slices updated in
//! place, and the matrix products go to `gemm` (the kernel candle uses);
//! a generic tensor library allocates a tensor per element-wise step and
//! computes the exact GELU with a scalar `erf`, which together cost about
//! as much as the matrix products themselves on this model
//! (`mnemo bench embed` has the before and after).
//!
//! What is computed is BERT as Hugging Face's `BertModel` defines it:
//! word + position + token-type embeddings, layer norm, then per layer
//! self-attention (softmax of QKᵀ/√d), output projection, residual and
//! layer norm, feed-forward with the configured activation, residual and
//! layer norm.

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

/// The activation between the feed-forward layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Activation {
    /// The exact (erf) GELU, named `gelu` in `config.json`.
    Gelu,
    /// The tanh approximation of GELU.
    #[serde(
        alias = "gelu_new",
        alias = "gelu_pytorch_tanh",
        alias = "gelu_approximate"
    )]
    GeluTanh,
    Relu,
}

/// The fields of a BERT `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: Activation,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
}

/// A matrix and bias applied as `x · Wᵀ + b` (weights stored `[out, in]`,
/// as in the checkpoint).
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value stacked: one product per layer instead of three.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    up: Linear,
    down: Linear,
    output_norm: Norm,
}

pub(crate) struct Encoder {
    hidden: usize,
    heads: usize,
    eps: f32,
    activation: Activation,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

/// One text's tokens as the tokenizer gave them.
pub(crate) struct Tokens<'a> {
    pub ids: &'a [u32],
    pub type_ids: &'a [u32],
}

/// Reads tensors by name under the prefix the checkpoint uses.
struct Checkpoint<'a> {
    tensors: SafeTensors<'a>,
    prefix: String,
}

impl Checkpoint<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let full = format!("{}{name}", self.prefix);
        let view = self
            .tensors
            .tensor(&full)
            .map_err(|_| format!("{full} is missing"))?;
        if view.shape() != shape {
            return Err(format!(
                "{full} has shape {:?}, expected {shape:?}",
                view.shape()
            ));
        }
        let bytes = view.data();
        let values: Vec<f32> = match view.dtype() {
            Dtype::F32 => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F16 => bytes
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Dtype::BF16 => bytes
                .chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => return Err(format!("{full} is {other:?}; f32, f16 and bf16 load")),
        };
        Ok(values)
    }

    fn linear(&self, name: &str, inputs: usize, outputs: usize) -> Result<Linear, String> {
        Ok(Linear {
            weight: self.get(&format!("{name}.weight"), &[outputs, inputs])?,
            bias: self.get(&format!("{name}.bias"), &[outputs])?,
            inputs,
            outputs,
        })
    }

    fn norm(&self, name: &str, size: usize) -> Result<Norm, String> {
        Ok(Norm {
            weight: self.get(&format!("{name}.weight"), &[size])?,
            bias: self.get(&format!("{name}.bias"), &[size])?,
        })
    }
}

impl Encoder {
    /// Loads the encoder from a safetensors checkpoint. Checkpoints name
    /// their tensors `embeddings.…` or, saved from a model with a head,
    /// `bert.…` (or `<model_type>.…`); all three are looked for.
    pub(crate) fn load(
        weights: &[u8],
        config: &Config,
        activation: Activation,
        model_type: &str,
    ) -> Result<Self, String> {
        let tensors = SafeTensors::deserialize(weights).map_err(|e| e.to_string())?;
        let prefix = ["".to_string(), "bert.".into(), format!("{model_type}.")]
            .into_iter()
            .find(|p| {
                tensors
                    .tensor(&format!("{p}embeddings.word_embeddings.weight"))
                    .is_ok()
            })
            .ok_or("no embeddings.word_embeddings.weight tensor")?;
        let checkpoint = Checkpoint { tensors, prefix };
        let h = config.hidden_size;
        let f = config.intermediate_size;
        if config.num_attention_heads == 0 || !h.is_multiple_of(config.num_attention_heads) {
            return Err(format!(
                "hidden size {h} is not a multiple of {} heads",
                config.num_attention_heads
            ));
        }
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for index in 0..config.num_hidden_layers {
            let at = |name: &str| format!("encoder.layer.{index}.{name}");
            let query = checkpoint.linear(&at("attention.self.query"), h, h)?;
            let key = checkpoint.linear(&at("attention.self.key"), h, h)?;
            let value = checkpoint.linear(&at("attention.self.value"), h, h)?;
            let qkv = Linear {
                weight: [query.weight, key.weight, value.weight].concat(),
                bias: [query.bias, key.bias, value.bias].concat(),
                inputs: h,
                outputs: 3 * h,
            };
            layers.push(Layer {
                qkv,
                attention_out: checkpoint.linear(&at("attention.output.dense"), h, h)?,
                attention_norm: checkpoint.norm(&at("attention.output.LayerNorm"), h)?,
                up: checkpoint.linear(&at("intermediate.dense"), h, f)?,
                down: checkpoint.linear(&at("output.dense"), f, h)?,
                output_norm: checkpoint.norm(&at("output.LayerNorm"), h)?,
            });
        }
        Ok(Encoder {
            hidden: h,
            heads: config.num_attention_heads,
            eps: config.layer_norm_eps as f32,
            activation,
            word: checkpoint.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            position: checkpoint.get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, h],
            )?,
            token_type: checkpoint.get(
                "embeddings.token_type_embeddings.weight",
                &[config.type_vocab_size, h],
            )?,
            embedding_norm: checkpoint.norm("embeddings.LayerNorm", h)?,
            layers,
        })
    }

    pub(crate) fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// The last hidden states of `texts`, packed: text `i`'s tokens are
    /// rows `starts[i]..starts[i + 1]` of a `[tokens, hidden]` matrix.
    /// `threads` above 1 splits each linear layer's product over that many
    /// threads: for a pass too small to share out by text (a query), where
    /// a product is mostly the reading of the weights.
    pub(crate) fn forward(
        &self,
        texts: &[Tokens<'_>],
        threads: usize,
    ) -> Result<(Vec<f32>, Vec<usize>), String> {
        let h = self.hidden;
        let mut starts = Vec::with_capacity(texts.len() + 1);
        starts.push(0);
        for text in texts {
            if text.ids.len() != text.type_ids.len() {
                return Err("token and type ids differ in length".into());
            }
            let positions = self.position.len() / h;
            if text.ids.len() > positions {
                return Err(format!(
                    "{} tokens exceed the model's {positions} positions",
                    text.ids.len()
                ));
            }
            starts.push(starts.last().copied().unwrap_or(0) + text.ids.len());
        }
        let tokens = starts.last().copied().unwrap_or(0);

        let mut x = vec![0f32; tokens * h];
        let mut row = 0;
        for text in texts {
            for (position, (&id, &kind)) in text.ids.iter().zip(text.type_ids).enumerate() {
                let (id, kind) = (id as usize, kind as usize);
                let (Some(word), Some(kind)) = (
                    self.word.get(id * h..(id + 1) * h),
                    self.token_type.get(kind * h..(kind + 1) * h),
                ) else {
                    return Err(format!("token {id} (type {kind}) is outside the model"));
                };
                let out = &mut x[row * h..(row + 1) * h];
                let place = &self.position[position * h..(position + 1) * h];
                for (((o, w), p), k) in out.iter_mut().zip(word).zip(place).zip(kind) {
                    *o = w + p + k;
                }
                row += 1;
            }
        }
        layer_norm(&mut x, &self.embedding_norm, self.eps);

        let parallelism = if threads > 1 {
            gemm::Parallelism::Rayon(threads)
        } else {
            gemm::Parallelism::None
        };
        let mut scratch = Scratch::default();
        for layer in &self.layers {
            self.layer(layer, &mut x, &starts, &mut scratch, parallelism);
        }
        Ok((x, starts))
    }

    fn layer(
        &self,
        layer: &Layer,
        x: &mut [f32],
        starts: &[usize],
        s: &mut Scratch,
        parallelism: gemm::Parallelism,
    ) {
        let h = self.hidden;
        let tokens = x.len() / h;
        let head = h / self.heads;
        let scale = 1.0 / (head as f32).sqrt();

        linear(
            &layer.qkv,
            x,
            tokens,
            resize(&mut s.qkv, tokens * 3 * h),
            false,
            parallelism,
        );
        let context = resize(&mut s.context, tokens * h);
        for bounds in starts.windows(2) {
            let (first, n) = (bounds[0], bounds[1] - bounds[0]);
            if n == 0 {
                continue;
            }
            let scores = resize(&mut s.scores, n * n);
            for index in 0..self.heads {
                let column = index * head;
                let strided = |offset: usize| Layout {
                    offset: first * 3 * h + offset + column,
                    rows: n,
                    cols: head,
                    rs: 3 * h,
                    cs: 1,
                };
                let (q, k, v) = (strided(0), strided(h), strided(2 * h));
                // scores = Q · Kᵀ / √d
                matmul(
                    scores,
                    Layout::dense(n, n),
                    &s.qkv,
                    q,
                    &s.qkv,
                    k.transposed(),
                    false,
                    scale,
                    gemm::Parallelism::None,
                );
                for row in scores.chunks_exact_mut(n) {
                    softmax(row);
                }
                // context[:, head] = softmax(scores) · V
                matmul(
                    context,
                    Layout {
                        offset: first * h + column,
                        rows: n,
                        cols: head,
                        rs: h,
                        cs: 1,
                    },
                    scores,
                    Layout::dense(n, n),
                    &s.qkv,
                    v,
                    false,
                    1.0,
                    gemm::Parallelism::None,
                );
            }
        }
        // x = norm(x + context · Woᵀ + bo)
        linear(&layer.attention_out, context, tokens, x, true, parallelism);
        layer_norm(x, &layer.attention_norm, self.eps);
        // x = norm(x + act(x · W1ᵀ + b1) · W2ᵀ + b2)
        let inner = resize(&mut s.inner, tokens * layer.up.outputs);
        linear(&layer.up, x, tokens, inner, false, parallelism);
        match self.activation {
            Activation::Gelu => inner.iter_mut().for_each(|v| *v = gelu(*v)),
            Activation::GeluTanh => inner.iter_mut().for_each(|v| *v = gelu_tanh(*v)),
            Activation::Relu => inner.iter_mut().for_each(|v| *v = v.max(0.0)),
        }
        linear(&layer.down, inner, tokens, x, true, parallelism);
        layer_norm(x, &layer.output_norm, self.eps);
    }
}

/// Buffers reused across the layers of a pass.
#[derive(Default)]
struct Scratch {
    qkv: Vec<f32>,
    context: Vec<f32>,
    scores: Vec<f32>,
    inner: Vec<f32>,
}

fn resize(buffer: &mut Vec<f32>, len: usize) -> &mut [f32] {
    buffer.resize(len, 0.0);
    &mut buffer[..len]
}

/// `out = x · Wᵀ + b` for `rows` rows of `x`; with `residual`, added to
/// what `out` holds (the residual connection) instead.
fn linear(
    layer: &Linear,
    x: &[f32],
    rows: usize,
    out: &mut [f32],
    residual: bool,
    parallelism: gemm::Parallelism,
) {
    matmul(
        out,
        Layout::dense(rows, layer.outputs),
        x,
        Layout::dense(rows, layer.inputs),
        &layer.weight,
        Layout::dense(layer.outputs, layer.inputs).transposed(),
        residual,
        1.0,
        parallelism,
    );
    for row in out.chunks_exact_mut(layer.outputs) {
        row.iter_mut().zip(&layer.bias).for_each(|(o, b)| *o += b);
    }
}

fn layer_norm(x: &mut [f32], norm: &Norm, eps: f32) {
    let size = norm.weight.len();
    for row in x.chunks_exact_mut(size) {
        let mean = row.iter().sum::<f32>() / size as f32;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / size as f32;
        let inverse = 1.0 / (variance + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = (*v - mean) * inverse * w + b;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inverse = 1.0 / sum;
    row.iter_mut().for_each(|v| *v *= inverse);
}

/// The exact GELU, `x · Φ(x) = ½x(1 + erf(x/√2))`, with [`erf`].
pub(crate) fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// GELU's tanh approximation, `½x(1 + tanh(√(2/π)(x + 0.044715x³)))`.
pub(crate) fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}

/// The error function as a rational polynomial on [-4, 4] (±1 beyond, where
/// erf is 1 to within f32's precision): Eigen's f32 approximation (also in
/// XLA and TVM), within a millionth of the exact value. Branch-free, so
/// the GELU loop vectorises, where the scalar `erf` of a maths library was
/// an eighth of the model's time. Plain multiply-adds, not `mul_add`:
/// without FMA enabled at compile time that is a call into a software
/// `fmaf` per coefficient, slower than the library `erf` it replaces.
pub(crate) fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = -2.726_142_3e-10_f32;
    let p = p * x2 + 2.770_681_4e-8;
    let p = p * x2 - 2.101_024e-6;
    let p = p * x2 - 5.692_506_4e-5;
    let p = p * x2 - 7.349_906_3e-4;
    let p = p * x2 - 2.954_600_5e-3;
    let p = p * x2 - 1.609_603_3e-2;
    let q = -1.456_607_2e-5_f32;
    let q = q * x2 - 2.133_740_6e-4;
    let q = q * x2 - 1.682_827e-3;
    let q = q * x2 - 7.373_329e-3;
    let q = q * x2 - 1.426_474e-2;
    x * p / q
}

/// A matrix inside a slice: element (r, c) is at `offset + r·rs + c·cs`.
#[derive(Debug, Clone, Copy)]
struct Layout {
    offset: usize,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl Layout {
    fn dense(rows: usize, cols: usize) -> Self {
        Layout {
            offset: 0,
            rows,
            cols,
            rs: cols,
            cs: 1,
        }
    }

    fn transposed(self) -> Self {
        Layout {
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }

    /// Whether every element it addresses lies within `len`.
    fn fits(&self, len: usize) -> bool {
        self.rows == 0
            || self.cols == 0
            || self.offset + (self.rows - 1) * self.rs + (self.cols - 1) * self.cs < len
    }
}

/// `dst = [dst +] scale · lhs · rhs` over the layouts given.
#[allow(clippy::too_many_arguments)]
fn matmul(
    dst: &mut [f32],
    d: Layout,
    lhs: &[f32],
    l: Layout,
    rhs: &[f32],
    r: Layout,
    accumulate: bool,
    scale: f32,
    parallelism: gemm::Parallelism,
) {
    assert!(d.rows == l.rows && d.cols == r.cols && l.cols == r.rows);
    assert!(d.fits(dst.len()) && l.fits(lhs.len()) && r.fits(rhs.len()));
    // Distinct (row, col) of the destination must be distinct elements.
    assert!(d.cs == 1 && (d.rows <= 1 || d.rs >= d.cols));
    if d.rows == 0 || d.cols == 0 {
        return;
    }
    if l.cols == 0 {
        if !accumulate {
            for row in 0..d.rows {
                let start = d.offset + row * d.rs;
                dst[start..start + d.cols].fill(0.0);
            }
        }
        return;
    }
    // SAFETY: every element the three layouts address lies within its
    // slice (asserted above), the destination's elements are distinct, and
    // `dst` is borrowed mutably, so it aliases neither input. Strides fit
    // in `isize` since they index within a slice.
    unsafe {
        gemm::gemm(
            d.rows,
            d.cols,
            l.cols,
            dst.as_mut_ptr().add(d.offset),
            d.cs as isize,
            d.rs as isize,
            accumulate,
            lhs.as_ptr().add(l.offset),
            l.cs as isize,
            l.rs as isize,
            rhs.as_ptr().add(r.offset),
            r.cs as isize,
            r.rs as isize,
            1.0,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf by its series (small |x|) and continued fraction (large |x|) in
    /// f64: a reference independent of the approximation under test.
    fn erf_reference(x: f64) -> f64 {
        if x.abs() < 3.0 {
            // erf(x) = 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1))
            let mut sum = 0.0;
            let mut term = x;
            let mut n = 0.0;
            while term.abs() > 1e-17 {
                sum += term / (2.0 * n + 1.0);
                n += 1.0;
                term *= -x * x / n;
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // erfc(x) = exp(-x²)/(x√π) · (1 - 1/(2x²) + 3/(4x⁴) - …), ample at |x| ≥ 3
            let x2 = x.abs() * x.abs();
            let mut series = 1.0;
            let mut term = 1.0;
            for k in 1..8 {
                term *= -((2 * k - 1) as f64) / (2.0 * x2);
                series += term;
            }
            let erfc = (-x2).exp() / (x.abs() * std::f64::consts::PI.sqrt()) * series;
            (1.0 - erfc).copysign(x)
        }
    }

    #[test]
    fn erf_is_within_a_millionth_of_the_exact_value_everywhere() {
        let mut worst: f64 = 0.0;
        for i in -1200..=1200 {
            let x = i as f64 / 200.0;
            let error = (erf(x as f32) as f64 - erf_reference(x)).abs();
            worst = worst.max(error);
        }
        assert!(worst < 1e-6, "worst error {worst}");
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(10.0), erf(4.0));
        assert!((erf(4.0) - 1.0).abs() < 1e-6);
        assert_eq!(erf(-1.5), -erf(1.5));
    }

    #[test]
    fn gelu_forms_agree_where_they_should() {
        assert_eq!(gelu(0.0), 0.0);
        // Φ(1) = 0.841344746…
        assert!((gelu(1.0) - 0.841_344_7).abs() < 2e-6);
        assert!((gelu(-1.0) + 0.158_655_25).abs() < 2e-6);
        for i in -60..=60 {
            let x = i as f32 / 10.0;
            assert!((gelu(x) - gelu_tanh(x)).abs() < 2e-3, "{x}");
        }
    }

    #[test]
    fn matmul_follows_the_layouts_and_accumulates_when_asked() {
        // lhs 2×3, rhs given as its transpose (2×3 stored, read 3×2).
        let lhs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let rhs_t = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        let mut dst = [10.0; 4];
        // (accumulate, scale) → dst after the call
        for (accumulate, scale, expected) in [
            (false, 1.0, [4.0, 2.0, 10.0, 5.0]),
            (true, 0.5, [6.0, 3.0, 15.0, 7.5]),
        ] {
            matmul(
                &mut dst,
                Layout::dense(2, 2),
                &lhs,
                Layout::dense(2, 3),
                &rhs_t,
                Layout::dense(2, 3).transposed(),
                accumulate,
                scale,
                gemm::Parallelism::None,
            );
            assert_eq!(dst, expected);
        }
    }

    #[test]
    #[should_panic]
    fn a_layout_past_its_slice_is_refused() {
        let mut dst = [0.0; 4];
        matmul(
            &mut dst,
            Layout::dense(2, 2),
            &[1.0; 5],
            Layout::dense(2, 3),
            &[1.0; 6],
            Layout::dense(3, 2),
            false,
            1.0,
            gemm::Parallelism::None,
        );
    }
}
