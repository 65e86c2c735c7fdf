//! Pure ranking arithmetic for hybrid search (`Retriever::search` uses it): reciprocal rank
//! fusion of ranked lists, ordering by score, de-duplication, and a message's score with its
//! neighbours' as context, and the lift the best results give the people's messages around them.

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

/// The messages up to two places before and after one in its channel, in order: places −2,
/// −1, 1, 2.
pub type Around = [Option<i64>; 4];

/// What the best results lift around them: the message right before and right after one of
/// `best` (in its `around`) take `share_1` of its score, the next ones out `share_2`; a message
/// lifted by several takes the largest lift (two best results side by side lift each other).
/// Only messages `person` says are people's lift or are lifted or carry a lift on: a bot's
/// long answer next to a match says nothing about what people said to each other, so where a
/// person's and the bot's turns alternate nothing moves.
pub fn neighbour_lifts(
    best: &[(i64, f64)],
    around: &HashMap<i64, Around>,
    person: impl Fn(i64) -> bool,
    share_1: f64,
    share_2: f64,
) -> HashMap<i64, f64> {
    let mut lifts: HashMap<i64, f64> = HashMap::new();
    let mut lift = |id: i64, by: f64| {
        let l = lifts.entry(id).or_insert(0.0);
        *l = l.max(by);
    };
    let people = |id: Option<i64>| id.filter(|i| person(*i));
    for &(id, score) in best.iter().filter(|(id, _)| person(*id)) {
        let Some(row) = around.get(&id) else {
            continue;
        };
        for (one, two) in [(row[1], row[0]), (row[2], row[3])] {
            if let Some(one) = people(one) {
                lift(one, share_1 * score);
                if let Some(two) = people(two) {
                    lift(two, share_2 * score);
                }
            }
        }
    }
    lifts
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
    #[test]
    fn the_best_lift_the_people_around_them() {
        // A channel: 1 Alice (matches), 2 Bob, 3 Alice (the answer), 4 the bot, 5 Carol;
        // elsewhere 10 (matches) with 11 after it.
        let around: HashMap<i64, Around> = [
            (1, [None, None, Some(2), Some(3)]),
            (3, [Some(1), Some(2), Some(4), Some(5)]),
            (10, [None, None, Some(11), None]),
        ]
        .into();
        let person = |id: i64| id != 4;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        let lifts = neighbour_lifts(&[(1, 2.0), (10, 1.0)], &around, person, 0.3, 0.2);
        assert!(close(lifts[&2], 0.6) && close(lifts[&3], 0.4) && close(lifts[&11], 0.3));
        // Nothing lifts itself, nothing goes three places on.
        assert!(!lifts.contains_key(&1) && !lifts.contains_key(&4) && !lifts.contains_key(&5));
        // From the answer: the bot's message after it is not lifted, nor does it carry the
        // lift on to Carol; before it, Bob's and Alice's are.
        let from_3 = neighbour_lifts(&[(3, 1.0)], &around, person, 0.3, 0.2);
        assert!(close(from_3[&2], 0.3) && close(from_3[&1], 0.2));
        assert!(
            !from_3.contains_key(&4) && !from_3.contains_key(&5),
            "{from_3:?}"
        );
        // Positive control: were the bot a person, both would be.
        let all = neighbour_lifts(&[(3, 1.0)], &around, |_| true, 0.3, 0.2);
        assert!(close(all[&4], 0.3) && close(all[&5], 0.2));
        // A message lifted twice keeps the larger lift: 2 is next to 1 (0.3 × 2) and next
        // to 3 (0.3 × 1).
        let both = neighbour_lifts(&[(1, 2.0), (3, 1.0)], &around, person, 0.3, 0.2);
        assert!(close(both[&2], 0.6) && close(both[&3], 0.4) && close(both[&1], 0.2));
        // Two places on, a bot's message is not lifted either (12 after Carol's 11).
        let chain = [(10, [None, None, Some(11), Some(12)])].into();
        let bot_12 = |id: i64| id != 12;
        let lifted_12 = |p: &dyn Fn(i64) -> bool| {
            neighbour_lifts(&[(10, 1.0)], &chain, p, 0.3, 0.2).contains_key(&12)
        };
        assert!(!lifted_12(&bot_12) && lifted_12(&|_| true));
        // A bot's message among the best lifts nothing.
        let bots = [(4, [None, Some(3), Some(5), None])].into();
        assert!(neighbour_lifts(&[(4, 9.0)], &bots, person, 0.3, 0.2).is_empty());
        assert!(!neighbour_lifts(&[(4, 9.0)], &bots, |_| true, 0.3, 0.2).is_empty());
        // Shares of 0: no lift.
        let none = neighbour_lifts(&[(1, 2.0)], &around, person, 0.0, 0.0);
        assert!(!none.is_empty() && none.values().all(|l| *l == 0.0));
    }
}
