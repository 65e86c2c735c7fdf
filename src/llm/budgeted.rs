//! The chat model as answers see it: a call made for someone's answer (a `Payer` in the task)
//! is refused when that answer may not spend, and its tokens count towards the space's daily
//! budget. Calls of jobs (no payer) pass through untouched.

use crate::domain::budget::{Limits, current_payer};
use crate::llm::{ChatModel, ChatRequest, ChatResponse, LlmError, UsageSnapshot};
use async_trait::async_trait;
use std::sync::Arc;

/// A chat model that refuses calls made for an answer over its limits and counts the tokens each answer spends.
pub struct Budgeted {
    inner: Arc<dyn ChatModel>,
    limits: Arc<Limits>,
}

impl Budgeted {
    /// `inner`, under `limits`.
    pub fn new(inner: Arc<dyn ChatModel>, limits: Arc<Limits>) -> Budgeted {
        Budgeted { inner, limits }
    }
}

#[async_trait]
impl ChatModel for Budgeted {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let payer = current_payer();
        if payer.is_some_and(|p| !p.may_spend) {
            return Err(LlmError::Limited);
        }
        let result = self.inner.complete(request).await;
        if let (Some(payer), Ok(response)) = (payer, &result) {
            self.limits.spend(
                payer.space,
                response
                    .prompt_tokens
                    .saturating_add(response.completion_tokens),
            );
        }
        result
    }

    fn usage(&self) -> UsageSnapshot {
        self.inner.usage()
    }
}
