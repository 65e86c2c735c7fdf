//! Where a channel's conversation changes topic: the episode boundary rules beyond the time
//! gap (which the store applies), pure. A message far from the recent turns of its episode
//! (by vector, or by shared words without vectors) is only a suspect; the shift holds when
//! the next judged message is far too, and the new episode then starts at the suspect. A
//! message that opens with a marker ("by the way", "кстати") starts one at once.

use crate::domain::MessageId;
use crate::embed;
use crate::store::query_terms;
use std::collections::{HashSet, VecDeque};

/// Turns an episode needs before a message can be off its topic: two lines are no topic yet
/// (in a group, the second reply rarely repeats the first's words).
pub const MIN_TOPIC_TURNS: usize = 3;

/// The boundary settings (`[episodes]`).
#[derive(Debug, Clone, PartialEq)]
pub struct TopicRules {
    /// A message whose vector is less similar (cosine) than this to the centroid of the
    /// episode's recent turns is far from its topic (0: vectors do not decide, words do).
    pub shift_similarity: f32,
    /// Without vectors (or when they do not decide): a message whose content words are found in the recent turns less
    /// often than this share is far from its topic.
    pub shift_overlap: f32,
    /// Without vectors, a message of fewer content words says nothing about the topic.
    pub min_words: usize,
    /// Recent turns that make up the topic.
    pub window: usize,
    /// Phrases that start a new episode when a message opens with them, lowercase.
    pub markers: Vec<String>,
}

/// One message as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// The message.
    pub id: MessageId,
    /// Its text.
    pub text: &'a str,
    /// Its vector, when it has one.
    pub vector: Option<&'a [f32]>,
    /// Said by the bot: part of the topic, never judged (the people move topics).
    pub is_bot: bool,
}

/// What one message does to its episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It continues the episode.
    Same,
    /// It is far from the topic: the episode continues unless the next judged message is far
    /// too.
    Suspect,
    /// The shift held: a new episode starts at `from` (the suspect) and takes this message.
    Shift {
        /// The first message of the new episode.
        from: MessageId,
    },
    /// It opens with a marker: a new episode starts with it.
    Marker,
}

/// A recent turn of the open episode.
#[derive(Debug, Clone)]
struct Recent {
    id: MessageId,
    vector: Option<Vec<f32>>,
    words: Vec<String>,
}

/// The running topic of one channel's open episode: its recent turns and the message that is
/// under suspicion of starting another.
#[derive(Debug, Clone, Default)]
pub struct Topic {
    recent: VecDeque<Recent>,
    suspect: Option<MessageId>,
}

/// Content words of `text` (stemmed, stop words out), at most 64.
fn content_words(text: &str) -> Vec<String> {
    query_terms(text, 64)
}

/// Whether `text` opens with one of `markers` (case and leading punctuation ignored, the
/// marker ending at a word boundary).
pub fn opens_with_marker(text: &str, markers: &[String]) -> bool {
    let text = text
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    markers.iter().any(|m| {
        let m = m.trim();
        !m.is_empty()
            && text.starts_with(m)
            && text[m.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric())
    })
}

impl Topic {
    /// A topic with no turns yet (a new episode).
    pub fn new() -> Topic {
        Topic::default()
    }

    /// The message under suspicion of starting a new topic, if any.
    pub fn suspect(&self) -> Option<MessageId> {
        self.suspect
    }

    /// Judges `turn` against the topic and takes it in.
    pub fn judge(&mut self, rules: &TopicRules, turn: Turn<'_>) -> Verdict {
        let words = content_words(turn.text);
        let recent = Recent {
            id: turn.id,
            vector: turn.vector.map(<[f32]>::to_vec),
            words,
        };
        if turn.is_bot {
            self.push(rules, recent);
            return Verdict::Same;
        }
        if !self.recent.is_empty() && opens_with_marker(turn.text, &rules.markers) {
            self.recent.clear();
            self.suspect = None;
            self.push(rules, recent);
            return Verdict::Marker;
        }
        let verdict = match (self.far(rules, &recent), self.suspect) {
            (None, _) => Verdict::Same,
            (Some(false), _) => {
                self.suspect = None;
                Verdict::Same
            }
            (Some(true), None) => {
                self.suspect = Some(turn.id);
                Verdict::Suspect
            }
            (Some(true), Some(from)) => {
                // The new episode keeps the turns from the suspect on.
                while self.recent.front().is_some_and(|r| r.id != from) {
                    self.recent.pop_front();
                }
                self.suspect = None;
                Verdict::Shift { from }
            }
        };
        self.push(rules, recent);
        verdict
    }

    fn push(&mut self, rules: &TopicRules, turn: Recent) {
        self.recent.push_back(turn);
        // The suspect and what follows it are kept past the window: the shift may move them.
        while self.recent.len() > rules.window.max(1)
            && self
                .recent
                .front()
                .is_some_and(|r| Some(r.id) != self.suspect)
        {
            self.recent.pop_front();
        }
        // Turns that said nothing kept the suspect waiting until too little topic is left
        // to judge by: it was no shift.
        if self.suspect.is_some() && self.settled().count() < MIN_TOPIC_TURNS {
            self.suspect = None;
            while self.recent.len() > rules.window.max(1) {
                self.recent.pop_front();
            }
        }
    }

    /// The turns that make up the topic a message is judged against: those before the
    /// suspect (a suspect and its followers are not the topic yet).
    fn settled(&self) -> impl Iterator<Item = &Recent> {
        let suspect = self.suspect;
        self.recent
            .iter()
            .take_while(move |r| Some(r.id) != suspect)
    }

    /// Whether `turn` is far from the topic; None when nothing can be said (no topic yet:
    /// fewer than `MIN_TOPIC_TURNS` turns, or too few words to compare without vectors).
    fn far(&self, rules: &TopicRules, turn: &Recent) -> Option<bool> {
        if self.settled().count() < MIN_TOPIC_TURNS {
            return None;
        }
        if let Some(v) = turn
            .vector
            .as_ref()
            .filter(|_| rules.shift_similarity > 0.0)
        {
            let vectors: Vec<&[f32]> = self.settled().filter_map(|r| r.vector.as_deref()).collect();
            if let Some(c) = embed::centroid(vectors) {
                return Some(embed::cosine(v, &c) < rules.shift_similarity);
            }
        }
        let mine: HashSet<&str> = turn.words.iter().map(String::as_str).collect();
        if mine.len() < rules.min_words.max(1) {
            return None;
        }
        let theirs: HashSet<&str> = self
            .settled()
            .flat_map(|r| r.words.iter().map(String::as_str))
            .collect();
        if theirs.is_empty() {
            return None;
        }
        let shared = mine.iter().filter(|w| theirs.contains(*w)).count();
        Some(rules.shift_overlap > 0.0 && (shared as f32 / mine.len() as f32) < rules.shift_overlap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> TopicRules {
        TopicRules {
            shift_similarity: 0.5,
            shift_overlap: 0.2,
            min_words: 3,
            window: 10,
            markers: vec!["by the way".into(), "кстати".into(), "anyway".into()],
        }
    }

    /// Judges lexical turns (no vectors) in order; the verdicts.
    fn run(texts: &[&str]) -> Vec<Verdict> {
        let mut topic = Topic::new();
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                topic.judge(
                    &rules(),
                    Turn {
                        id: MessageId(i as i64 + 1),
                        text: t,
                        vector: None,
                        is_bot: false,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn markers_open_a_message_at_a_word_boundary() {
        let m = rules().markers;
        assert!(opens_with_marker("By the way, did you see it?", &m));
        assert!(opens_with_marker("  ...кстати, а ты был там?", &m));
        assert!(opens_with_marker("Anyway", &m));
        assert!(!opens_with_marker("anyways I think", &m));
        assert!(!opens_with_marker("I was going anyway", &m));
    }

    #[test]
    fn a_shift_holds_only_when_the_next_message_is_far_too() {
        use Verdict::*;
        let v = run(&[
            "the garden tomatoes need more water this summer",
            "water the tomatoes in the garden every morning",
            "garden tomatoes grow faster with morning water",
            // One message away, then back: no boundary.
            "my laptop battery drains quickly these days",
            "tomatoes in the garden love morning water",
            // Away for two: the second confirms, the episode starts at the first.
            "the football match tonight starts late",
            "football tickets for the match tonight sold out",
            "tonight the football match will be great",
        ]);
        assert_eq!(
            v,
            vec![
                Same,
                Same,
                Same,
                Suspect,
                Same,
                Suspect,
                Shift { from: MessageId(6) },
                Same
            ]
        );
    }

    #[test]
    fn short_messages_and_the_bot_say_nothing_about_the_topic() {
        use Verdict::*;
        let mut topic = Topic::new();
        let r = rules();
        let turn = |id, text, is_bot| Turn {
            id: MessageId(id),
            text,
            vector: None,
            is_bot,
        };
        for id in 1..=3 {
            assert_eq!(
                topic.judge(&r, turn(id, "garden tomatoes need water daily", false)),
                Same
            );
        }
        assert_eq!(
            topic.judge(
                &r,
                turn(4, "laptop battery drains quickly these days", false)
            ),
            Suspect
        );
        // Neither clears nor confirms the suspect.
        assert_eq!(topic.judge(&r, turn(5, "ok sure", false)), Same);
        assert_eq!(
            topic.judge(
                &r,
                turn(6, "Completely different words entirely here", true)
            ),
            Same
        );
        assert_eq!(topic.suspect(), Some(MessageId(4)));
        assert_eq!(
            topic.judge(&r, turn(7, "battery laptop charger replacement", false)),
            Shift { from: MessageId(4) }
        );
    }

    #[test]
    fn a_suspect_waiting_behind_silent_turns_is_let_go() {
        use Verdict::*;
        let r = TopicRules {
            window: 5,
            ..rules()
        };
        let mut topic = Topic::new();
        let turn = |id, text, is_bot| Turn {
            id: MessageId(id),
            text,
            vector: None,
            is_bot,
        };
        for id in 1..=4 {
            topic.judge(&r, turn(id, "garden tomatoes need water daily", false));
        }
        let off = "laptop battery drains quickly these days";
        assert_eq!(topic.judge(&r, turn(5, off, false)), Suspect);
        for id in 6..=20 {
            topic.judge(&r, turn(id, "ok", true));
        }
        assert_eq!(topic.suspect(), None);
        // The topic can still be judged: a shift is suspected again.
        for id in 21..=23 {
            let same = topic.judge(&r, turn(id, "garden tomatoes need water daily", false));
            assert_eq!(same, Same);
        }
        let next = topic.judge(&r, turn(24, "football tickets tonight sold out", false));
        assert_eq!(next, Suspect);
    }

    #[test]
    fn vectors_decide_when_there_are_some() {
        use Verdict::*;
        let r = rules();
        let mut topic = Topic::new();
        let turn = |id, v: &'static [f32]| Turn {
            id: MessageId(id),
            text: "x",
            vector: Some(v),
            is_bot: false,
        };
        static A: [f32; 2] = [1.0, 0.0];
        static B: [f32; 2] = [0.0, 1.0];
        for id in 1..=3 {
            assert_eq!(topic.judge(&r, turn(id, &A)), Same);
        }
        assert_eq!(topic.judge(&r, turn(4, &B)), Suspect);
        assert_eq!(topic.judge(&r, turn(5, &B)), Shift { from: MessageId(4) });
        // The new topic is B, too young to judge by; then A is the stranger.
        assert_eq!(topic.judge(&r, turn(6, &B)), Same);
        assert_eq!(topic.judge(&r, turn(7, &A)), Suspect);
    }

    #[test]
    fn a_marker_starts_at_once_but_not_an_empty_episode() {
        use Verdict::*;
        let v = run(&[
            "by the way the garden tomatoes need water",
            "garden tomatoes need water in summer",
            "Кстати, the garden tomatoes need water",
        ]);
        assert_eq!(v, vec![Same, Same, Marker]);
    }
}
