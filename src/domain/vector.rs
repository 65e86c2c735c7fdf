//! Vector spaces: which model made a vector. Vectors of different models are never compared;
//! a vector always travels with the space it lives in. And a vector's bytes.

use serde::Serialize;
use std::fmt;

/// What makes a vector space: the provider, the model, its vector size and, for local models,
/// a hash of the weights (the same name can ship other weights).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ModelIdentity {
    /// "local", "openai", or another embedder's kind.
    pub provider: String,
    /// The model's name.
    pub model: String,
    /// Length of its vectors.
    pub dimensions: usize,
    /// A revision or weights hash ("" when the provider names none).
    pub revision: String,
}

impl fmt::Display for ModelIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} ({} dimensions",
            self.provider, self.model, self.dimensions
        )?;
        if !self.revision.is_empty() {
            write!(f, ", revision {}", self.revision)?;
        }
        write!(f, ")")
    }
}

/// The store's id of a vector space (`vector_spaces.id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct VectorSpaceId(pub i64);

/// A unit vector and the space it lives in.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    /// The model's space.
    pub space: VectorSpaceId,
    /// The vector.
    pub vector: Vec<f32>,
}

/// Little-endian f32 bytes: the BLOB form SQLite and sqlite-vec use.
pub fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A vector from its stored bytes (little-endian f32s).
pub fn from_bytes(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_forms_round_trip() {
        let v = vec![0.25f32, -1.5, 3.0e-7, 0.0];
        assert_eq!(from_bytes(&to_bytes(&v)), v);
    }
}
