//! all-MiniLM-L6-v2 run in-process with candle from a local directory of weights
//! (`model.safetensors`, `tokenizer.json`, `config.json`); never downloads anything.

use super::{EmbedError, Embedder, normalize};
use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

/// all-MiniLM-L6-v2 (384 dimensions) on the CPU with candle, from local weights.
pub struct MiniLmEmbedder {
    inner: Arc<Inner>,
    model_name: String,
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    dimensions: usize,
    batch_size: usize,
}

impl MiniLmEmbedder {
    /// True when `dir` holds the three files the model needs.
    pub fn present(dir: &Path) -> bool {
        ["model.safetensors", "tokenizer.json", "config.json"]
            .iter()
            .all(|f| dir.join(f).is_file())
    }

    /// Loads the model from `dir`; texts are cut at `max_tokens` word pieces.
    pub fn load(dir: &Path, max_tokens: usize, batch_size: usize) -> Result<Self, EmbedError> {
        let file = |name: &str| -> Result<PathBuf, EmbedError> {
            let p = dir.join(name);
            if p.is_file() {
                Ok(p)
            } else {
                Err(EmbedError::Load(format!(
                    "{} is missing (embed.model_dir = {})",
                    p.display(),
                    dir.display()
                )))
            }
        };
        let config: Config = serde_json::from_str(
            &std::fs::read_to_string(file("config.json")?)
                .map_err(|e| EmbedError::Load(e.to_string()))?,
        )
        .map_err(|e| EmbedError::Load(format!("config.json: {e}")))?;
        let mut tokenizer = Tokenizer::from_file(file("tokenizer.json")?)
            .map_err(|e| EmbedError::Load(format!("tokenizer.json: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| EmbedError::Load(e.to_string()))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        let weights = file("model.safetensors")?;
        // SAFETY: the weights file is memory-mapped read-only; nothing in this process writes it.
        let vb =
            unsafe { VarBuilder::from_mmaped_safetensors(&[weights], DType::F32, &Device::Cpu) }
                .map_err(|e| EmbedError::Load(format!("model.safetensors: {e}")))?;
        let model = BertModel::load(vb, &config).map_err(|e| EmbedError::Load(e.to_string()))?;
        Ok(MiniLmEmbedder {
            inner: Arc::new(Inner {
                model,
                tokenizer,
                dimensions: config.hidden_size,
                batch_size: batch_size.max(1),
            }),
            model_name: "all-MiniLM-L6-v2".to_string(),
        })
    }
}

impl Inner {
    fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let err = |e: candle_core::Error| EmbedError::Model(e.to_string());
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Model(e.to_string()))?;
        let rows = encodings.len();
        let len = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(rows * len);
        let mut mask = Vec::with_capacity(rows * len);
        for e in &encodings {
            ids.extend(e.get_ids().iter().map(|&x| x as i64));
            mask.extend(e.get_attention_mask().iter().map(|&x| x as i64));
        }
        let ids = Tensor::from_vec(ids, (rows, len), &Device::Cpu).map_err(err)?;
        let mask = Tensor::from_vec(mask, (rows, len), &Device::Cpu).map_err(err)?;
        let types = ids.zeros_like().map_err(err)?;
        let hidden = self.model.forward(&ids, &types, Some(&mask)).map_err(err)?;
        // Mean pooling over real tokens (padding masked out), as sentence-transformers does.
        let m = mask
            .to_dtype(DType::F32)
            .map_err(err)?
            .unsqueeze(2)
            .map_err(err)?;
        let summed = hidden.broadcast_mul(&m).map_err(err)?.sum(1).map_err(err)?;
        let counts = m.sum(1).map_err(err)?.clamp(1e-9, f64::MAX).map_err(err)?;
        let pooled = summed.broadcast_div(&counts).map_err(err)?;
        let mut out: Vec<Vec<f32>> = pooled.to_vec2().map_err(err)?;
        out.iter_mut().for_each(|v| normalize(v));
        Ok(out)
    }
}

#[async_trait]
impl Embedder for MiniLmEmbedder {
    fn model(&self) -> &str {
        &self.model_name
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = self.inner.clone();
        let texts = texts.to_vec();
        // CPU-bound: off the async workers, so replies keep flowing while a batch runs.
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::with_capacity(texts.len());
            // Similar lengths share a batch, so little of each batch is padding.
            let mut order: Vec<usize> = (0..texts.len()).collect();
            order.sort_by_key(|&i| texts[i].len());
            let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
            for chunk in order.chunks(inner.batch_size) {
                let batch: Vec<String> = chunk.iter().map(|&i| texts[i].clone()).collect();
                for (&i, v) in chunk.iter().zip(inner.embed_batch(&batch)?) {
                    vectors[i] = Some(v);
                }
            }
            for v in vectors {
                out.push(v.ok_or_else(|| EmbedError::Model("missing vector".into()))?);
            }
            Ok(out)
        })
        .await
        .map_err(|e| EmbedError::Model(e.to_string()))?
    }
}
