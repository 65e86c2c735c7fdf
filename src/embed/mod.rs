//! The embedding seam at the bottom of the retrieval flow: the batch-first `Embedder` trait,
//! the in-process all-MiniLM-L6-v2 on ONNX Runtime (`local`), the OpenAI-compatible `/v1/embeddings` client
//! (`openai`), and vector helpers shared by the stores and retrieval.

pub mod budgeted;
pub mod local;
pub mod openai;

use crate::domain::ModelIdentity;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

pub use local::{LocalEmbedder, Precision};
pub use openai::OpenAiEmbedder;

#[derive(Debug, thiserror::Error)]
/// Why an embedding call failed.
pub enum EmbedError {
    #[error("cannot load the embedding model: {0}")]
    /// The local model's files could not be loaded.
    Load(String),
    #[error("the embedding model failed: {0}")]
    /// The local model failed on the input (or a vector cache could not be written).
    Model(String),
    #[error("cannot reach the embedding API: {0}")]
    /// The embedding API could not be reached, timed out, or its client could not be built.
    Connect(String),
    #[error("the embedding API answered HTTP {status}: {detail}")]
    /// The embedding API answered with an error status.
    Http {
        /// The HTTP status.
        status: u16,
        /// What the status means ("Internal Server Error"): never the provider's error text.
        detail: String,
        /// How long the API asked us to wait (Retry-After).
        retry_after: Option<Duration>,
    },
    #[error("the embedding API's answer is unusable: {0}")]
    /// The answer was not the vectors asked for.
    BadResponse(String),
    /// The answer this call was for is over its person's or space's limit.
    #[error("the spending limit for this answer is reached")]
    Limited,
}

impl EmbedError {
    /// The model refuses this input (HTTP 400, 413 or 422, an answer unusable for it, or the
    /// local model failing on it): another input may go through, this one will not.
    pub fn refuses_input(&self) -> bool {
        matches!(
            self,
            EmbedError::Http {
                status: 400 | 413 | 422,
                ..
            } | EmbedError::Model(_)
                | EmbedError::BadResponse(_)
        )
    }

    /// Worth trying again later (the background embedder keeps the texts pending).
    pub fn is_retryable(&self) -> bool {
        match self {
            EmbedError::Connect(_) => true,
            EmbedError::Http { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}

/// Turns texts into unit-length vectors, many at a time (one call per batch).
#[async_trait]
pub trait Embedder: Send + Sync {
    /// Names the vector space: vectors of different models are never compared.
    fn model(&self) -> &str;
    /// Length of every vector it makes.
    fn dimensions(&self) -> usize;
    /// The vector space it makes: stored with every vector, so a model change never compares
    /// vectors of two models.
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            provider: "custom".into(),
            model: self.model().to_string(),
            dimensions: self.dimensions(),
            revision: String::new(),
        }
    }
    /// How much of `text` the model reads as words it knows, 0 to 1: the share of its words
    /// (those with a letter) its vocabulary holds whole. A model that splits most words into
    /// pieces (an English model on Russian) places the text by those pieces, and retrieval
    /// trusts its vector less. An embedder that cannot tell says 1.
    fn known_share(&self, _text: &str) -> f64 {
        1.0
    }
    /// One vector per text, in order, each of length `dimensions()` and L2-normalised.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// An embedder shared by the indexer and the retriever.
pub type SharedEmbedder = Arc<dyn Embedder>;

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Cosine similarity of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Mean of unit vectors, normalised: the centroid an episode is compared by.
pub fn centroid<'a>(vectors: impl IntoIterator<Item = &'a [f32]>) -> Option<Vec<f32>> {
    let mut sum: Option<Vec<f32>> = None;
    for v in vectors {
        match &mut sum {
            None => sum = Some(v.to_vec()),
            Some(s) => s.iter_mut().zip(v).for_each(|(a, b)| *a += b),
        }
    }
    let mut s = sum?;
    normalize(&mut s);
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centroid_is_unit_and_between() {
        let a = [1.0f32, 0.0];
        let b = [0.0f32, 1.0];
        let c = centroid([&a[..], &b[..]]).unwrap();
        assert!((c[0] - c[1]).abs() < 1e-6);
        assert!((cosine(&c, &c) - 1.0).abs() < 1e-6);
        assert!(centroid(std::iter::empty()).is_none());
    }
}
