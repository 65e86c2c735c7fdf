//! Pure ranking arithmetic for hybrid search (`Retriever::search` uses it): reciprocal rank
//! fusion of ranked lists, ordering by score, and de-duplication.

use std::collections::HashMap;
use std::hash::Hash;

/// Reciprocal rank fusion: each list adds `weight / (k + rank)` (rank from 1) to its items.
pub fn rrf<T: Copy + Eq + Hash>(lists: &[(f64, &[T])], k: f64) -> HashMap<T, f64> {
    let mut scores: HashMap<T, f64> = HashMap::new();
    for (weight, list) in lists {
        for (i, item) in list.iter().enumerate() {
            *scores.entry(*item).or_insert(0.0) += weight / (k + (i + 1) as f64);
        }
    }
    scores
}

/// Items sorted by score, best first; ties go to the higher id (the newer message).
pub fn ranked<T: Copy + Ord>(scores: &HashMap<T, f64>) -> Vec<(T, f64)> {
    let mut out: Vec<(T, f64)> = scores.iter().map(|(k, v)| (*k, *v)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    out
}

/// Keeps the first (best) item of each key: the same text said twice is shown once.
pub fn dedup_by_key<T, K: Eq + Hash>(items: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    items.into_iter().filter(|i| seen.insert(key(i))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_rewards_agreement_between_lists() {
        let bm25 = [1, 2, 3];
        let vector = [3, 4, 1];
        let s = rrf(&[(1.0, &bm25[..]), (1.0, &vector[..])], 60.0);
        let order: Vec<i32> = ranked(&s).into_iter().map(|(id, _)| id).collect();
        // 1 is first and third, 3 third and first; 2 and 4 are both second once. Ties go
        // to the higher id.
        assert_eq!(order, [3, 1, 4, 2]);
        assert!(rrf::<i32>(&[], 60.0).is_empty());
    }

    #[test]
    fn weights_change_the_winner() {
        // 2 is second in both lists; 1 and 3 are first in one each. With a small k, agreement
        // wins at equal weights, and a heavier list's first place wins otherwise.
        let (bm25, vector) = ([1, 2], [3, 2]);
        let winner =
            |wb: f64, wv: f64| ranked(&rrf(&[(wb, &bm25[..]), (wv, &vector[..])], 1.0))[0].0;
        assert_eq!(winner(1.0, 1.0), 2);
        assert_eq!(winner(1.0, 3.0), 3);
        assert_eq!(winner(3.0, 1.0), 1);
        // A weight of 0 takes a list out.
        assert_eq!(winner(1.0, 0.0), 1);
    }

    #[test]
    fn dedup_keeps_the_best_copy() {
        let items = vec![(1, "hi"), (2, "yo"), (3, "hi")];
        assert_eq!(dedup_by_key(items, |i| i.1), [(1, "hi"), (2, "yo")]);
    }
}
