//! Time expressions in a query ("yesterday", "last week", "in May", "two weeks ago"), turned
//! into the window of time they name, relative to when the question is asked.

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
}

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

/// The window the query names, if any. Vague phrases ("recently") name none.
// Over 80 lines: one arm per time expression ("today", "last week", "in May", …), read as
// a table.
pub fn window(query: &str, now: DateTime<Utc>) -> Option<Window> {
    let lower = query.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let today = now.date_naive();
    let week_start = today - Duration::days(today.weekday().num_days_from_monday() as i64);
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or("");
        let prev = if i > 0 { words[i - 1] } else { "" };
        match *w {
            "today" | "tonight" => return Some(days(today, 1)),
            "yesterday" => return Some(days(today - Duration::days(1), 1)),
            "last" | "past" | "previous" | "this" => {
                let this = *w == "this";
                match next {
                    "week" if this => return Some(days(week_start, 7)),
                    "week" => return Some(days(week_start - Duration::days(7), 7)),
                    "weekend" => {
                        let sat = week_start - Duration::days(if this { -5 } else { 2 });
                        return Some(days(sat, 2));
                    }
                    "month" => {
                        let (y, m) = (today.year(), today.month());
                        return if this {
                            month(y, m)
                        } else if m == 1 {
                            month(y - 1, 12)
                        } else {
                            month(y, m - 1)
                        };
                    }
                    "year" => {
                        let y = if this { today.year() } else { today.year() - 1 };
                        return Some(Window {
                            from: day_start(NaiveDate::from_ymd_opt(y, 1, 1)?),
                            to: day_start(NaiveDate::from_ymd_opt(y + 1, 1, 1)?),
                        });
                    }
                    _ => {}
                }
                if let Some((_, wd)) = WEEKDAYS.iter().find(|(n, _)| *n == next) {
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
                let n = if i >= 2 { number(words[i - 2]) } else { None }.unwrap_or(1);
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
        if let Some(m) = MONTHS.iter().position(|n| {
            n == w
                || (w.len() == 3 && n.starts_with(w) && *w != "mar" && *w != "may" && *w != "jun")
        }) {
            // "in May", "on May 5", "May 2023": the latest such month not after now, unless a
            // year is given. "may" alone is a verb too, so it needs "in"/"on"/"during" or a
            // number next to it.
            let m = m as u32 + 1;
            let year_word = words
                .get(i + 1)
                .and_then(|n| n.parse::<i32>().ok())
                .filter(|y| (1900..=2200).contains(y));
            let day_word = words
                .get(i + 1)
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|d| (1..=31).contains(d));
            let cue = matches!(
                prev,
                "in" | "on" | "during" | "since" | "early" | "late" | "mid"
            ) || year_word.is_some()
                || day_word.is_some();
            if *w == "may" && !cue {
                continue;
            }
            let year = year_word.unwrap_or_else(|| {
                if m > today.month() {
                    today.year() - 1
                } else {
                    today.year()
                }
            });
            if let (Some(d), None) = (day_word, year_word)
                && let Some(date) = NaiveDate::from_ymd_opt(year, m, d)
            {
                return Some(days(date, 1));
            }
            return month(year, m);
        }
    }
    None
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
    fn no_window_without_a_time_phrase() {
        let now = at("2023-05-31T15:00:00Z");
        assert_eq!(window("may I ask what my dog's name is", now), None);
        assert_eq!(window("recommend a book", now), None);
        assert_eq!(window("", now), None);
        assert_eq!(window("🦀 ago ago last", now), None);
    }
}
