//! The embedder as answers see it: embedding a question for someone's answer that may not
//! spend is refused (the search goes on with BM25 alone). Background indexing (no payer) passes
//! through untouched.

use crate::domain::budget::current_payer;
use crate::embed::{EmbedError, Embedder};
use async_trait::async_trait;
use std::sync::Arc;

/// An embedder that refuses calls made for an answer over its limits.
pub struct Budgeted {
    inner: Arc<dyn Embedder>,
}

impl Budgeted {
    /// `inner`, with the limits of the current task's payer.
    pub fn new(inner: Arc<dyn Embedder>) -> Budgeted {
        Budgeted { inner }
    }
}

#[async_trait]
impl Embedder for Budgeted {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn identity(&self) -> crate::domain::ModelIdentity {
        self.inner.identity()
    }

    fn known_share(&self, text: &str) -> f64 {
        self.inner.known_share(text)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if current_payer().is_some_and(|p| !p.may_spend) {
            return Err(EmbedError::Limited);
        }
        self.inner.embed(texts).await
    }
}
