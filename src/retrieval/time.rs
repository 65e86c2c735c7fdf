//! Time expressions in a query or a message ("yesterday", "last night", "last week", "in May",
//! "on 9 July, 2022", "the last week of August 2023", "summer 2022", "two weeks ago"), turned
//! into the window of time they name, relative to when the question is asked or the message
//! was sent.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc, Weekday};

/// A half-open window [from, to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Start of the window (inclusive).
    pub from: DateTime<Utc>,
    /// End of the window (exclusive).
    pub to: DateTime<Utc>,
}

impl Window {
    /// Whether `t` falls inside.
    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        t >= self.from && t < self.to
    }

    /// Whether the two share any time.
    pub fn overlaps(&self, other: &Window) -> bool {
        self.from < other.to && other.from < self.to
    }

    /// The days after the window in which people still tell about it ("yesterday I went
    /// bowling", "last week", "two days ago"): where `is_about` looks for such messages.
    pub fn reported_after(&self) -> Window {
        Window {
            from: self.to,
            to: self.to + Duration::days(REPORTED_DAYS),
        }
    }

    /// The two days after the window, where most messages that tell about it are ("yesterday
    /// I went bowling", "last night"): searched for them beside the window's own messages.
    pub fn told_soon_after(&self) -> Window {
        Window {
            from: self.to,
            to: self.to + Duration::days(2),
        }
    }

    /// Whether `text`, sent at `sent_at`, is from this time or tells about it: sent inside
    /// it, or sent within `reported_after` and naming a time that overlaps it, read from when
    /// it was sent ("yesterday I went bowling", sent the day after), and no wider than the
    /// larger of a week and this window ("last month" says little about one day of it).
    pub fn is_about(&self, text: &str, sent_at: DateTime<Utc>) -> bool {
        if self.contains(sent_at) {
            return true;
        }
        if !self.reported_after().contains(sent_at) {
            return false;
        }
        let widest = (self.to - self.from).max(Duration::days(7));
        told_time(text, sent_at)
            .is_some_and(|named| named.overlaps(self) && named.to - named.from <= widest)
    }
}

/// Days after a time in which a message may still tell about it (see `Window::is_about`).
const REPORTED_DAYS: i64 = 8;

/// The part of a message searched for the time it names (a long one tells it early).
const MENTION_CHARS: usize = 1000;

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [(&str, Weekday); 7] = [
    ("monday", Weekday::Mon),
    ("tuesday", Weekday::Tue),
    ("wednesday", Weekday::Wed),
    ("thursday", Weekday::Thu),
    ("friday", Weekday::Fri),
    ("saturday", Weekday::Sat),
    ("sunday", Weekday::Sun),
];

fn number(word: &str) -> Option<i64> {
    let words = [
        "a", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    if let Some(i) = words.iter().position(|w| *w == word) {
        return Some(i.max(1) as i64);
    }
    word.parse().ok().filter(|n| (1..=400).contains(n))
}

fn day_start(d: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).expect("midnight"))
}

fn days(d: NaiveDate, n: i64) -> Window {
    Window {
        from: day_start(d),
        to: day_start(d) + Duration::days(n),
    }
}

fn month(year: i32, m: u32) -> Option<Window> {
    let from = NaiveDate::from_ymd_opt(year, m, 1)?;
    let to = if m == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(year, m + 1, 1)?
    };
    Some(Window {
        from: day_start(from),
        to: day_start(to),
    })
}

/// The window the query names, if any. Vague phrases ("recently") name none. Dates come
/// first ("on 9 July, 2022", "July 9", "the last week of August 2023", "the week before 23
/// January"), then seasons and years ("summer 2022", "in 2021"), then times relative to `now`
/// ("yesterday", "last week", "two weeks ago").
pub fn window(query: &str, now: DateTime<Utc>) -> Option<Window> {
    let lower = query.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let today = now.date_naive();
    dated(&words, today)
        .or_else(|| season_or_year(&words, today))
        .or_else(|| relative(&words, now))
}

/// The time `text`, sent at `sent_at`, names ("yesterday", "last Friday", "in May"), read
/// in its first part (a long message tells it early): what an answer to "when …?" holds.
pub fn told_time(text: &str, sent_at: DateTime<Utc>) -> Option<Window> {
    let head: String = text.chars().take(MENTION_CHARS).collect();
    window(&head, sent_at)
}

/// Whether a question asks when something happened ("When did Jolene go to Rio?", "In which
/// month …", "How long ago …"). English, as the time phrases are.
pub fn asks_when(query: &str) -> bool {
    let lower = query.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    // "when" opens the question, or follows a word it asks with ("and when", "since when");
    // elsewhere it joins clauses ("what did she do when …").
    let opens = |i: usize| i == 0 || matches!(words[i - 1], "and" | "so" | "since" | "until");
    words
        .iter()
        .enumerate()
        .any(|(i, w)| *w == "when" && opens(i))
        || words.windows(3).any(|p| p == ["how", "long", "ago"])
        || words.windows(2).any(|p| {
            matches!(
                (p[0], p[1]),
                (
                    "what" | "which",
                    "date" | "day" | "month" | "year" | "week" | "time"
                )
            )
        })
}

/// A year word (1900–2200).
fn year_of(word: &str) -> Option<i32> {
    word.parse().ok().filter(|y| (1900..=2200).contains(y))
}

/// A day of the month: "9", "09", "9th", "21st".
fn day_of(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !["", "st", "nd", "rd", "th"].contains(&suffix) || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

/// A month's name or its three-letter form ("mar", "may" and "jun" only in full: they are words
/// too), from 1.
fn month_of(word: &str) -> Option<u32> {
    MONTHS
        .iter()
        .position(|n| {
            *n == word
                || (word.len() == 3
                    && n.starts_with(word)
                    && !["mar", "may", "jun"].contains(&word))
        })
        .map(|m| m as u32 + 1)
}

/// A date the query names around a month's name: a day ("9 July", "July 9th", "the 3rd of
/// May"), a year ("May 2023"), or a part of the month ("the last week of August", "early
/// January"); without a year, the latest such date not after today.
fn dated(words: &[&str], today: NaiveDate) -> Option<Window> {
    let at = |i: usize| words.get(i).copied().unwrap_or("");
    for (i, w) in words.iter().enumerate() {
        let Some(m) = month_of(w) else { continue };
        let before = |n: usize| if i >= n { at(i - n) } else { "" };
        let (next, after_next) = (at(i + 1), at(i + 2));
        let day = day_of(next)
            .filter(|_| year_of(next).is_none())
            .or_else(|| day_of(before(1)))
            .or_else(|| (before(1) == "of").then(|| day_of(before(2))).flatten());
        let year = if day_of(next).is_some() && year_of(next).is_none() {
            year_of(after_next)
        } else {
            year_of(next)
        };
        // "may" alone is a verb: it needs a day, a year or a preposition beside it.
        let cue = matches!(
            before(1),
            "in" | "on" | "during" | "since" | "early" | "late" | "mid" | "of"
        );
        if *w == "may" && day.is_none() && year.is_none() && !cue {
            continue;
        }
        let year = year.unwrap_or_else(|| {
            if (m, day.unwrap_or(1)) > (today.month(), day.map_or(31, |_| today.day())) {
                today.year() - 1
            } else {
                today.year()
            }
        });
        let lead: Vec<&str> = words[i.saturating_sub(5)..i].to_vec();
        if let Some(d) = day {
            // "31 February" names no day; a later month word may.
            let Some(date) = NaiveDate::from_ymd_opt(year, m, d) else {
                continue;
            };
            // "(the week) before 23 January": the week up to that day.
            if lead.iter().rev().take(3).any(|x| *x == "before") {
                return Some(Window {
                    from: day_start(date) - Duration::days(7),
                    to: day_start(date),
                });
            }
            return Some(days(date, 1));
        }
        let whole = month(year, m)?;
        let has = |x: &str| lead.contains(&x);
        let first_days = |n: i64| Window {
            from: whole.from,
            to: whole.from + Duration::days(n),
        };
        let last_days = |n: i64| Window {
            from: whole.to - Duration::days(n),
            to: whole.to,
        };
        return Some(if has("week") && (has("last") || has("final")) {
            last_days(7)
        } else if has("week") && has("first") {
            first_days(7)
        } else if has("beginning") || has("early") || has("start") {
            first_days(10)
        } else if has("end") || has("late") {
            last_days(10)
        } else if has("mid") || has("middle") {
            Window {
                from: whole.from + Duration::days(10),
                to: whole.from + Duration::days(20),
            }
        } else {
            whole
        });
    }
    None
}

/// A season ("summer 2022", "last winter") or a year ("in 2021", "during 2019").
fn season_or_year(words: &[&str], today: NaiveDate) -> Option<Window> {
    const SEASONS: [(&str, u32); 5] = [
        ("spring", 3),
        ("summer", 6),
        ("autumn", 9),
        ("fall", 9),
        ("winter", 12),
    ];
    let season = |w: &str| SEASONS.iter().find(|(n, _)| *n == w).map(|(_, m)| *m);
    // Three months from the first of `m` in `year`.
    let months = |year: i32, m: u32| {
        let from = NaiveDate::from_ymd_opt(year, m, 1)?;
        let to = from.checked_add_months(chrono::Months::new(3))?;
        Some(Window {
            from: day_start(from),
            to: day_start(to),
        })
    };
    for (i, w) in words.iter().enumerate() {
        let prev = if i > 0 { words[i - 1] } else { "" };
        let next = words.get(i + 1).copied().unwrap_or("");
        if let (Some(m), Some(y)) = (season(prev), year_of(w)) {
            return months(y, m);
        }
        if let Some(m) = season(w).filter(|_| year_of(next).is_none()) {
            if !matches!(prev, "last" | "this" | "the" | "in" | "during") {
                continue;
            }
            // The latest such season that has begun; "last" while in it: the one before.
            let y = if m <= today.month() {
                today.year()
            } else {
                today.year() - 1
            };
            let latest = months(y, m)?;
            let inside = latest.contains(day_start(today));
            return if prev == "last" && inside {
                months(y - 1, m)
            } else {
                Some(latest)
            };
        }
        if let Some(y) = year_of(w)
            && matches!(prev, "in" | "during" | "since" | "of" | "year" | "from")
        {
            return Some(Window {
                from: day_start(NaiveDate::from_ymd_opt(y, 1, 1)?),
                to: day_start(NaiveDate::from_ymd_opt(y + 1, 1, 1)?),
            });
        }
    }
    None
}

/// A time relative to `now`: "today", "yesterday", "last week", "this month", "last Friday",
/// "two weeks ago", and one more back: "the day before yesterday", "the night (week, weekend,
/// month, year) before last".
fn relative(words: &[&str], now: DateTime<Utc>) -> Option<Window> {
    let today = now.date_naive();
    let week_start = today - Duration::days(today.weekday().num_days_from_monday() as i64);
    let weekend = |back: i64| days(week_start - Duration::days(7 * back - 5), 2);
    let year = |y: i32| {
        Some(Window {
            from: day_start(NaiveDate::from_ymd_opt(y, 1, 1)?),
            to: day_start(NaiveDate::from_ymd_opt(y + 1, 1, 1)?),
        })
    };
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or("");
        let prev = if i > 0 { words[i - 1] } else { "" };
        // "The <unit> before yesterday/last": one unit further back than the word alone.
        let before = (prev == "before" && i >= 2).then(|| words[i - 2]);
        match *w {
            "today" | "tonight" => return Some(days(today, 1)),
            "yesterday" => {
                let back = if matches!(before, Some("day" | "night")) {
                    2
                } else {
                    1
                };
                return Some(days(today - Duration::days(back), 1));
            }
            // "Last" ends the phrase ("the week before last, I ..."; not "the week before last
            // Friday", nor "the day before last Christmas").
            "last" if ends_a_phrase(next) => match before {
                Some("day" | "night") => return Some(days(today - Duration::days(2), 1)),
                Some("week") => return Some(days(week_start - Duration::days(14), 7)),
                Some("weekend") => return Some(weekend(2)),
                Some("month") => return month_back(today, 2),
                Some("year") => return year(today.year() - 2),
                _ => {}
            },
            "last" | "past" | "previous" | "this" => {
                let this = *w == "this";
                match next {
                    "night" if !this => return Some(days(today - Duration::days(1), 1)),
                    "week" if this => return Some(days(week_start, 7)),
                    "week" => return Some(days(week_start - Duration::days(7), 7)),
                    "weekend" => return Some(weekend(if this { 0 } else { 1 })),
                    "month" => return month_back(today, if this { 0 } else { 1 }),
                    "year" => return year(today.year() - if this { 0 } else { 1 }),
                    _ => {}
                }
                if let Some(wd) = weekday(next) {
                    let back = (today.weekday().num_days_from_monday() as i64
                        - wd.num_days_from_monday() as i64)
                        .rem_euclid(7);
                    let back = if back == 0 { 7 } else { back };
                    return Some(days(today - Duration::days(back), 1));
                }
            }
            "ago" => {
                // "<n> <unit> ago": a window around that point, as wide as one unit.
                let unit = prev.trim_end_matches('s');
                let at = |back: usize| i.checked_sub(back).map_or("", |j| words[j]);
                let n = count(at(2), at(3)).unwrap_or(1);
                let span = match unit {
                    "day" => Duration::days(1),
                    "week" => Duration::days(7),
                    "month" => Duration::days(30),
                    "year" => Duration::days(365),
                    _ => continue,
                };
                let at = now - span * n as i32;
                return Some(Window {
                    from: at - span / 2 - Duration::days(1),
                    to: at + span / 2 + Duration::days(1),
                });
            }
            _ => {}
        }
    }
    None
}

/// Whether a phrase has ended before `next`, the word after it ("" at the end): a word
/// that goes on a clause or starts another ("the week before last *did* I", "*I* went").
fn ends_a_phrase(next: &str) -> bool {
    next.is_empty()
        || EVENT_ENDS.contains(&next)
        || OWN.contains(&next)
        || [
            "you", "he", "she", "they", "it", "me", "us", "him", "her", "them", "his", "their",
            "your", "its", "to", "at", "in", "on", "for", "with", "then", "so",
        ]
        .contains(&next)
}

/// The weekday a word names ("friday").
fn weekday(word: &str) -> Option<Weekday> {
    WEEKDAYS.iter().find(|(n, _)| *n == word).map(|(_, wd)| *wd)
}

/// The calendar month `back` months before the one holding `today` (0: that month).
fn month_back(today: NaiveDate, back: u32) -> Option<Window> {
    let months = today.year() * 12 + today.month0() as i32 - back as i32;
    month(months.div_euclid(12), months.rem_euclid(12) as u32 + 1)
}

/// A time a question names by an event rather than a date: "the week before the trip", "two
/// days after my surgery". Its window is found from when the event was told
/// (`Anchored::around`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchored {
    /// The words that name the event ("the trip", "my surgery", "i moved").
    pub event: String,
    /// Whether it is the asker's own ("my trip", "our wedding", "after I moved"): then only
    /// the asker's words tell of it.
    pub own: bool,
    /// Which side of it the question asks about.
    pub side: Side,
}

/// Which side of an event a question asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The span right before it ("the week before").
    Before(Duration),
    /// The span right after it ("two days after").
    After(Duration),
}

/// Words after which an event's name has ended ("the week before the trip *did* I …").
const EVENT_ENDS: [&str; 24] = [
    "did", "do", "does", "was", "were", "is", "are", "will", "would", "could", "can", "should",
    "have", "has", "had", "and", "or", "but", "what", "which", "who", "where", "when", "how",
];

/// The words an event's name may start with that name no event: "the day before that", "the
/// day after tomorrow", "the week before last", "the week after next", "two days after you
/// told me" (the conversation, not an event).
const NO_EVENT: [&str; 20] = [
    "that",
    "then",
    "this",
    "it",
    "now",
    "which",
    "what",
    "when",
    "me",
    "him",
    "her",
    "them",
    "tomorrow",
    "today",
    "tonight",
    "yesterday",
    "last",
    "next",
    "you",
    "all",
];

/// The words that make an event the asker's own ("my trip", "after we moved").
const OWN: [&str; 4] = ["my", "our", "i", "we"];

/// Daily times, named like events but no one event ("the day before sunset").
const DAILY: [&str; 12] = [
    "breakfast",
    "lunch",
    "dinner",
    "noon",
    "midnight",
    "bed",
    "bedtime",
    "sunrise",
    "sunset",
    "dawn",
    "dusk",
    "work",
];

/// Words of a name's start that are not the event itself ("*the* trip", "*his* trip").
const DETERMINERS: [&str; 11] = [
    "the", "a", "an", "my", "his", "her", "their", "our", "your", "its", "this",
];

/// The time `query` names by an event, if any: a span before or after it ("the week before
/// the trip", "a few days after my surgery", "two weeks before her wedding"). "Before" or
/// "after" with no span ("before the trip") names no window (it is all of the time before),
/// nor does a daily time ("the day after sunset") or a date (`window` reads those).
/// "During the trip" is not read: on groupchat_dev2 the best messages that tell of such an
/// event were as often from another time (planning it, a yoga practice told of every week),
/// and its window lowered turn R@5 from 0.766 to 0.756.
pub fn anchored(query: &str) -> Option<Anchored> {
    let lower = query.to_lowercase();
    // Each word, and whether a clause ends right after it ("…the trip, what did I …").
    let mut words: Vec<(&str, bool)> = Vec::new();
    for raw in lower.split_whitespace() {
        let ends = raw.ends_with([',', '?', '.', '!', ';', ':']);
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        match (word.is_empty(), words.last_mut()) {
            (false, _) => words.push((word, ends)),
            (true, Some(last)) => last.1 |= ends,
            (true, None) => {}
        }
    }
    for (i, (w, ends)) in words.iter().enumerate() {
        let side = match *w {
            "before" | "after" => {
                let Some(span) = i.checked_sub(1).and_then(|u| span_before(&words, u)) else {
                    continue;
                };
                if *w == "before" {
                    Side::Before(span)
                } else {
                    Side::After(span)
                }
            }
            _ => continue,
        };
        if *ends {
            continue;
        }
        let mut event: Vec<&str> = Vec::new();
        for (word, ends) in &words[i + 1..] {
            if EVENT_ENDS.contains(word) || event.len() == 8 {
                break;
            }
            event.push(word);
            if *ends {
                break;
            }
        }
        let start = event
            .iter()
            .position(|w| !DETERMINERS.contains(w))
            .unwrap_or(event.len());
        let named = &event[start..];
        let Some(first) = named.first() else { continue };
        if NO_EVENT.contains(first) || named.iter().any(|w| DAILY.contains(w)) {
            continue;
        }
        let own = event.first().is_some_and(|w| OWN.contains(w));
        let event = event.join(" ");
        // A date or a season is a time already ("the week before 23 January").
        if window(&event, DateTime::UNIX_EPOCH).is_some() {
            continue;
        }
        return Some(Anchored { event, own, side });
    }
    None
}

/// The span that ends at `unit` ("the week", "two days", "a few days", "a couple of weeks"),
/// if one does.
fn span_before(words: &[(&str, bool)], unit: usize) -> Option<Duration> {
    let days = match words[unit].0.trim_end_matches('s') {
        "day" | "night" => 1,
        "weekend" => 3,
        "week" => 7,
        "fortnight" => 14,
        "month" => 30,
        _ => return None,
    };
    let at = |i: Option<usize>| i.and_then(|i| words.get(i)).map_or("", |w| w.0);
    let n = count(at(unit.checked_sub(1)), at(unit.checked_sub(2)))?;
    Some(Duration::days(days * n))
}

/// How many units the words before a unit say, `last` the one right before it and `earlier`
/// the one before that: "the", "two", "a few" (3), "a couple of" (2).
fn count(last: &str, earlier: &str) -> Option<i64> {
    match last {
        "the" | "that" => Some(1),
        "few" => Some(3),
        "couple" => Some(2),
        "of" if earlier == "couple" => Some(2),
        _ => number(last),
    }
}

impl Anchored {
    /// The window this names, the event having been told in `text` sent at `sent_at`: the
    /// time the message names (`told_time`, its first one) when that is a past one of at most a
    /// week, else the day it was sent; then the span before or after that. Which part of the
    /// event the message's time is, it does not tell: "we got back from the trip yesterday"
    /// puts the trip yesterday, at its end.
    pub fn around(&self, text: &str, sent_at: DateTime<Utc>) -> Window {
        let event = told_time(text, sent_at)
            .filter(|w| w.to - w.from <= Duration::days(7) && w.from <= sent_at)
            .unwrap_or_else(|| days(sent_at.date_naive(), 1));
        match self.side {
            Side::Before(span) => Window {
                from: event.from - span,
                to: event.from,
            },
            Side::After(span) => Window {
                from: event.to,
                to: event.to + span,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn relative_windows() {
        // A Wednesday.
        let now = at("2023-05-31T15:00:00Z");
        let w = window("what did I say yesterday?", now).unwrap();
        assert_eq!(
            (w.from, w.to),
            (at("2023-05-30T00:00:00Z"), at("2023-05-31T00:00:00Z"))
        );
        let w = window("the restaurant from last week", now).unwrap();
        assert_eq!(
            (w.from, w.to),
            (at("2023-05-22T00:00:00Z"), at("2023-05-29T00:00:00Z"))
        );
        let w = window("what did we do last month", now).unwrap();
        assert_eq!(
            (w.from, w.to),
            (at("2023-04-01T00:00:00Z"), at("2023-05-01T00:00:00Z"))
        );
        let w = window("last Friday's game", now).unwrap();
        assert_eq!(w.from, at("2023-05-26T00:00:00Z"));
        let w = window("something two weeks ago", now).unwrap();
        assert!(w.contains(at("2023-05-17T12:00:00Z")) && !w.contains(now));
        // Counted as spans before an event are: "a few" is three, "a couple of" two.
        let w = window("a few days ago", now).unwrap();
        assert!(w.contains(at("2023-05-27T12:00:00Z")) && !w.contains(at("2023-05-30T12:00:00Z")));
        let w = window("a couple weeks ago", now).unwrap();
        assert!(w.contains(at("2023-05-17T12:00:00Z")) && !w.contains(at("2023-05-27T12:00:00Z")));
        let w = window("a couple of weeks ago", now).unwrap();
        assert!(w.contains(at("2023-05-17T12:00:00Z")) && !w.contains(at("2023-05-27T12:00:00Z")));
        let w = window("a week ago", now).unwrap();
        assert!(w.contains(at("2023-05-24T12:00:00Z")) && !w.contains(at("2023-05-17T12:00:00Z")));
    }

    #[test]
    fn one_more_back_before_yesterday_or_last() {
        // A Wednesday in January: the months before go back into the year before.
        let now = at("2024-01-31T15:00:00Z");
        let span = |q: &str| {
            let w = window(q, now).unwrap_or_else(|| panic!("{q}: no window"));
            (w.from, w.to)
        };
        let day = |d: &str| {
            (
                at(&format!("{d}T00:00:00Z")),
                at(&format!("{d}T00:00:00Z")) + Duration::days(1),
            )
        };
        assert_eq!(
            span("what did I eat the day before yesterday?"),
            day("2024-01-29")
        );
        assert_eq!(span("yesterday"), day("2024-01-30"));
        assert_eq!(span("the night before last"), day("2024-01-29"));
        assert_eq!(span("last night"), day("2024-01-30"));
        // Question, first day, day after the last.
        for (q, from, to) in [
            (
                "where was I the week before last",
                "2024-01-15",
                "2024-01-22",
            ),
            (
                "the week before last I went to Paris",
                "2024-01-15",
                "2024-01-22",
            ),
            ("the weekend before last", "2024-01-20", "2024-01-22"),
            ("last weekend", "2024-01-27", "2024-01-29"),
            ("the month before last", "2023-11-01", "2023-12-01"),
            ("last month", "2023-12-01", "2024-01-01"),
            ("this month", "2024-01-01", "2024-02-01"),
            ("the year before last", "2022-01-01", "2023-01-01"),
        ] {
            assert_eq!(span(q), (day(from).0, day(to).0), "{q}");
        }
        // "Last" naming a day or unit of its own is that one ("the week before last Friday"
        // is read as last Friday, the nearer of the two).
        assert_eq!(span("the week before last Friday"), day("2024-01-26"));
        // A message tells of the day it names, from when it was sent.
        let told = told_time(
            "the day before yesterday I went bowling",
            at("2022-03-18T09:00:00Z"),
        )
        .unwrap();
        assert_eq!((told.from, told.to), day("2022-03-16"));
        // Before something else, it is no more back.
        assert_eq!(span("the party before yesterday"), day("2024-01-30"));
        assert_eq!(span("the night before yesterday"), day("2024-01-29"));
        assert_eq!(span("the day before last"), day("2024-01-29"));
        // "Before last" naming something else names no time ("last Christmas" is no
        // unit back).
        for q in [
            "the night before last exam",
            "the day before last day of school",
            "a week before last Christmas",
            "the week before last-minute packing",
        ] {
            assert_eq!(window(q, now), None, "{q}");
        }
        // Nor do they name an event of their own.
        assert_eq!(anchored("the day before yesterday"), None);
        assert_eq!(anchored("the week before last"), None);
    }

    #[test]
    fn month_names_pick_the_latest_past_month() {
        let now = at("2023-05-31T15:00:00Z");
        let w = window("the trip in June", now).unwrap();
        assert_eq!(w.from, at("2022-06-01T00:00:00Z"));
        let w = window("What happened in May?", now).unwrap();
        assert_eq!(w.from, at("2023-05-01T00:00:00Z"));
        let w = window("on March 3 I bought", now).unwrap();
        assert_eq!(
            (w.from, w.to),
            (at("2023-03-03T00:00:00Z"), at("2023-03-04T00:00:00Z"))
        );
        assert_eq!(
            window("in December 2021", now).unwrap().from,
            at("2021-12-01T00:00:00Z")
        );
    }

    #[test]
    fn dates_with_days_years_and_parts_of_months() {
        let now = at("2023-09-21T10:00:00Z");
        let day = |q: &str| {
            let w = window(q, now).unwrap();
            (
                w.from.date_naive().to_string(),
                w.to.date_naive().to_string(),
            )
        };
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            day("How did John relax on 9 July, 2022?"),
            pair("2022-07-09", "2022-07-10")
        );
        assert_eq!(day("on March 16, 2022"), pair("2022-03-16", "2022-03-17"));
        assert_eq!(day("the 3rd of May"), pair("2023-05-03", "2023-05-04"));
        assert_eq!(day("on May 5th"), pair("2023-05-05", "2023-05-06"));
        // Later in the year than today, without a year: last year's.
        assert_eq!(day("on 25 December"), pair("2022-12-25", "2022-12-26"));
        assert_eq!(
            day("during the last week of August 2023"),
            pair("2023-08-25", "2023-09-01")
        );
        assert_eq!(
            day("the first week of August 2023"),
            pair("2023-08-01", "2023-08-08")
        );
        assert_eq!(
            day("in the beginning of January 2023"),
            pair("2023-01-01", "2023-01-11")
        );
        // The first and last ten days.
        assert_eq!(
            day("at the end of June 2023"),
            pair("2023-06-21", "2023-07-01")
        );
        assert_eq!(
            day("finished last week before 23 January, 2023"),
            pair("2023-01-16", "2023-01-23")
        );
        assert_eq!(
            day("Which country did John visit in 2021?"),
            pair("2021-01-01", "2022-01-01")
        );
        assert_eq!(day("during summer 2022"), pair("2022-06-01", "2022-09-01"));
        assert_eq!(day("last winter"), pair("2022-12-01", "2023-03-01"));
        assert_eq!(day("this summer"), pair("2023-06-01", "2023-09-01"));
        // In September the summer just ended is both "this" and "last" summer.
        assert_eq!(day("last summer"), pair("2023-06-01", "2023-09-01"));
        // A number that is no year or day names nothing; "may" as a verb neither.
        assert_eq!(window("I ran 2021 meters", now), None);
        assert_eq!(window("you may have 45 of them", now), None);
    }

    #[test]
    fn a_time_is_told_about_in_the_days_after() {
        // Wednesday 16 March 2022.
        let day = window("on March 16, 2022", at("2022-11-08T20:00:00Z")).unwrap();
        let about = |text: &str, sent: &str| day.is_about(text, at(sent));
        // Sent that day, whatever it says.
        assert!(about("nothing much", "2022-03-16T10:00:00Z"));
        // The next day, "yesterday"; two days after, "last night" names the 17th.
        assert!(about("Yesterday I went bowling!", "2022-03-17T09:00:00Z"));
        assert!(!about("I went bowling last night", "2022-03-18T09:00:00Z"));
        assert!(about("I went bowling last night", "2022-03-17T09:00:00Z"));
        // "Two days ago" is a day either side; "last Wednesday" from the next Monday.
        assert!(about("two days ago I went bowling", "2022-03-18T09:00:00Z"));
        assert!(about(
            "last Wednesday I went bowling",
            "2022-03-21T09:00:00Z"
        ));
        // The days after, naming no time or another one; later than the days after; before.
        assert!(!about("I went bowling", "2022-03-17T09:00:00Z"));
        assert!(!about("today I went bowling", "2022-03-17T09:00:00Z"));
        assert!(about("on March 16 I went bowling", "2022-03-24T09:00:00Z"));
        assert!(!about("on March 16 I went bowling", "2022-03-26T09:00:00Z"));
        assert!(!about("on March 16 I go bowling", "2022-03-15T09:00:00Z"));
        // "Last month" overlaps the 16th but says little about it; it does about the month.
        assert!(!about("last month I went bowling", "2022-04-01T09:00:00Z"));
        let march = window("in March 2022", at("2022-11-08T20:00:00Z")).unwrap();
        assert!(march.is_about("last month I went bowling", at("2022-04-01T09:00:00Z")));
        assert!(!march.is_about("last year I went bowling", at("2022-04-01T09:00:00Z")));
        assert_eq!(
            day.reported_after(),
            Window {
                from: at("2022-03-17T00:00:00Z"),
                to: at("2022-03-25T00:00:00Z"),
            }
        );
    }

    #[test]
    fn no_window_without_a_time_phrase() {
        let now = at("2023-05-31T15:00:00Z");
        assert_eq!(window("may I ask what my dog's name is", now), None);
        assert_eq!(window("recommend a book", now), None);
        assert_eq!(window("", now), None);
        assert_eq!(window("🦀 ago ago last", now), None);
    }

    #[test]
    fn questions_that_ask_when_and_answers_that_tell() {
        for q in [
            "When did Jolene go to Rio?",
            "so when is the party",
            "In which month did John start his job?",
            "What year did they move?",
            "how long ago was the trip",
        ] {
            assert!(asks_when(q), "{q}");
        }
        for q in [
            "What did Melanie do when she got home?",
            "how long is the drive",
            "what did I say about the trip",
            "",
        ] {
            assert!(!asks_when(q), "{q}");
        }
        let sent = at("2023-05-31T15:00:00Z");
        assert!(told_time("Yes! Last Friday.", sent).is_some());
        assert!(told_time("I went there in May 2022", sent).is_some());
        assert!(told_time("It was a lot of fun", sent).is_none());
        assert!(told_time("", sent).is_none());
    }

    #[test]
    fn times_named_by_an_event() {
        let named = |q: &str| anchored(q).map(|a| (a.event, a.side));
        let days = |n: i64| Duration::days(n);
        assert_eq!(
            named("What did I buy the week before the trip?"),
            Some(("the trip".into(), Side::Before(days(7))))
        );
        assert_eq!(
            named("what happened two days after my surgery, do you remember"),
            Some(("my surgery".into(), Side::After(days(2))))
        );
        assert_eq!(
            named("Where did we eat a few days before her wedding?"),
            Some(("her wedding".into(), Side::Before(days(3))))
        );
        assert_eq!(
            named("a couple of weeks after the move"),
            Some(("the move".into(), Side::After(days(14))))
        );
        // A clause names an event too; "I", "we", "my" and "our" make it the asker's own.
        assert_eq!(
            named("what did we eat the day after we moved"),
            Some(("we moved".into(), Side::After(days(1))))
        );
        let own = |q: &str| anchored(q).map(|a| a.own);
        assert_eq!(own("the week before my trip"), Some(true));
        assert_eq!(own("the week before our wedding"), Some(true));
        assert_eq!(own("the day after I moved"), Some(true));
        assert_eq!(own("the week before the trip"), Some(false));
        assert_eq!(own("the week before her trip"), Some(false));
        // The name ends at a clause's end or where the question goes on.
        assert_eq!(
            named("the day before the race, what did I eat?"),
            Some(("the race".into(), Side::Before(days(1))))
        );
        assert_eq!(
            named("the night before the exam did anyone call"),
            Some(("the exam".into(), Side::Before(days(1))))
        );
        for q in [
            // No span: all of the time before.
            "Before I purchased the gravel bike, did I have other bikes?",
            "How many days before my best friend's birthday party did I order her gift?",
            // A date or a season is read by `window`; "that" and daily times are no event.
            "the week before 23 January",
            "the week before summer 2022",
            "the day before that",
            "what are we doing the day after tomorrow",
            "where was I the week before last",
            "the week after next",
            "two days after you told me",
            "what did I eat the day after lunch",
            "the week before sunset",
            // Its own time is not read (see `anchored`).
            "What additional country did James visit during his trip to Canada?",
            "the week before",
            "",
            "before after during",
        ] {
            assert_eq!(named(q), None, "{q}");
        }
    }

    #[test]
    fn an_event_window_is_read_from_when_it_was_told() {
        // Told on Wednesday 31 May 2023.
        let sent = at("2023-05-31T15:00:00Z");
        let span = |q: &str, text: &str| {
            let w = anchored(q).unwrap().around(text, sent);
            (
                w.from.date_naive().to_string(),
                w.to.date_naive().to_string(),
            )
        };
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        // The day it was told, when the message names no time.
        assert_eq!(
            span("the week before the trip", "The trip was amazing!"),
            pair("2023-05-24", "2023-05-31")
        );
        assert_eq!(
            span("two days after the trip", "The trip was amazing!"),
            pair("2023-06-01", "2023-06-03")
        );
        // The time it names, when it names a past one of at most a week.
        assert_eq!(
            span(
                "the week before the trip",
                "Yesterday we got back from the trip"
            ),
            pair("2023-05-23", "2023-05-30")
        );
        assert_eq!(
            span("two days after the trip", "We went on the trip last week"),
            pair("2023-05-29", "2023-05-31")
        );
        // A time too wide to place the event by is not used.
        assert_eq!(
            span("the week before the trip", "Last year I went on the trip"),
            pair("2023-05-24", "2023-05-31")
        );
    }
}
