//! Pure ranking arithmetic for hybrid search (`Retriever::search` uses it): reciprocal rank
//! fusion of ranked lists, ordering by score, de-duplication, and a message's score with its
//! neighbours' as context.

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

/// The first `limit` items of distinct keys, each the first (best) of its key: the same text
/// said twice is shown once. Keys past the limit are never computed.
pub fn dedup_by_key<T, K: Eq + Hash>(items: Vec<T>, limit: usize, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|i| seen.insert(key(i)))
        .take(limit)
        .collect()
}

/// A message and its neighbours in its channel, for `with_context`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InContext {
    /// The message before it, if any.
    pub before: Option<i64>,
    /// The message after it, if any.
    pub after: Option<i64>,
    /// Its length (search words).
    pub length: f64,
}

/// Scores with context: each message's own score (0 if it has none) plus `weight × half /
/// (half + its length)` times the better of its neighbours' own scores. Every message with a
/// score, and every neighbour of one, is scored; a message missing from `context` keeps its
/// own score.
pub fn with_context(
    own: &HashMap<i64, f64>,
    context: &HashMap<i64, InContext>,
    weight: f64,
    half: f64,
) -> HashMap<i64, f64> {
    let score = |id: Option<i64>| id.and_then(|i| own.get(&i).copied()).unwrap_or(0.0);
    let mut ids: Vec<i64> = own.keys().copied().collect();
    for id in own.keys() {
        if let Some(c) = context.get(id) {
            ids.extend(c.before.iter().chain(c.after.iter()));
        }
    }
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .map(|id| {
            let mine = score(Some(id));
            let added = context.get(&id).map_or(0.0, |c| {
                let share = weight * half / (half + c.length.max(0.0));
                share * score(c.before).max(score(c.after))
            });
            (id, mine + added)
        })
        .collect()
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
    fn context_lifts_a_short_answer_to_a_matching_question() {
        // 1: "Did you go bowling last Friday?" (matches), 2: "Yes!" (no match, short),
        // 3: a long message after it, 4: a match elsewhere with no neighbours known.
        let own: HashMap<i64, f64> = [(1, 4.0), (4, 3.0)].into();
        let ctx = |before, after, length| InContext {
            before,
            after,
            length,
        };
        let context: HashMap<i64, InContext> = [
            (1, ctx(None, Some(2), 6.0)),
            (2, ctx(Some(1), Some(3), 1.0)),
            (3, ctx(Some(2), None, 60.0)),
        ]
        .into();
        let s = with_context(&own, &context, 0.5, 40.0);
        // 2 is scored through 1; 3 is not a neighbour of a scored message and stays out.
        assert!((s[&2] - 0.5 * 40.0 / 41.0 * 4.0).abs() < 1e-12);
        assert!(!s.contains_key(&3));
        // 1's neighbour scores nothing, so 1 keeps its own; 4 has no context.
        assert_eq!(s[&1], 4.0);
        assert_eq!(s[&4], 3.0);
        // A long message takes less of its neighbour's score than a short one.
        let long: HashMap<i64, InContext> =
            [(1, ctx(None, Some(2), 6.0)), (2, ctx(Some(1), None, 400.0))].into();
        assert!(with_context(&own, &long, 0.5, 40.0)[&2] < s[&2] / 5.0);
        // Weight 0: only own scores.
        let plain = with_context(&own, &context, 0.0, 40.0);
        assert_eq!(plain[&2], 0.0);
        assert_eq!(plain[&1], 4.0);
    }

    #[test]
    fn dedup_keeps_the_best_copy() {
        let items = vec![(1, "hi"), (2, "yo"), (3, "hi")];
        assert_eq!(
            dedup_by_key(items.clone(), 10, |i| i.1),
            [(1, "hi"), (2, "yo")]
        );
        assert_eq!(dedup_by_key(items, 1, |i| i.1), [(1, "hi")]);
    }
}
