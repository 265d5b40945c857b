//! Time in the question. "When did we move the cache to Redis?" is answered by the record that
//! says when ("yesterday", "last week", "on 3 May"); "what did we do last Tuesday?" by the
//! records made then. Both are ranking signals (`Explain::time`), never filters: a question's
//! time is a guess, and the words still decide what the records are about.

use chrono::{Datelike, Duration, NaiveDate, TimeZone, Utc};

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

const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Words that by themselves place what a record says in time.
const WHEN_WORDS: &[&str] = &[
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "ago",
    "weekend",
    "recently",
    "earlier",
];

/// What a question says about time: whether it asks when, and the span it names.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Asked {
    /// The question asks for a time ("when", "what date", "how long ago", …).
    pub when: bool,
    /// The span the question names, epoch milliseconds, inclusive.
    pub span: Option<(i64, i64)>,
    /// A month named without a year ("in June"): any year's.
    pub month: Option<u32>,
    /// The date the question names ("on 3 May 2023", "in June", "in 1930"), as a record's text
    /// may say it: a note or an imported chat says its dates where its time of making does not.
    pub named: Option<Named>,
}

/// A date as named, any part of it missing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Named {
    pub year: Option<i32>,
    pub month: Option<u32>,
    pub day: Option<u32>,
}

impl Named {
    /// Whether `text` names this date: the month with the day beside it when a day is named,
    /// and the year when one is.
    pub fn in_text(&self, text: &str) -> bool {
        let words = lower_words(text);
        let year_ok = self.year.is_none_or(|y| {
            let y = y.to_string();
            words.contains(&y)
        });
        let Some(m) = self.month else {
            return self.year.is_some() && year_ok;
        };
        let name = MONTHS[m as usize - 1];
        let day = |j: Option<usize>| j.and_then(|j| words.get(j)).and_then(|w| day_of(w));
        year_ok
            && words.iter().enumerate().any(|(i, w)| {
                let days = [day(i.checked_sub(1)), day(Some(i + 1))];
                w == name
                    && match self.day {
                        Some(d) => days.contains(&Some(d)),
                        // "may" alone is a verb: as a month it has a day or a year beside it.
                        None => {
                            name != "may"
                                || days.iter().any(Option::is_some)
                                || words.get(i + 1).is_some_and(|n| is_year(n))
                        }
                    }
            })
    }
}

/// A day of the month as written: "3", "03", "3rd".
fn day_of(w: &str) -> Option<u32> {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if digits.len() == w.len() || matches!(&w[digits.len()..], "st" | "nd" | "rd" | "th") {
        digits.parse().ok().filter(|d| (1..=31).contains(d))
    } else {
        None
    }
}

impl Asked {
    pub fn any(&self) -> bool {
        self.when || self.span.is_some() || self.month.is_some() || self.named.is_some()
    }

    /// 1 when the record answers the time asked: made within the span or month named, or,
    /// for a question asking when, saying a time itself; else 0.
    pub fn score(&self, created_ms: i64, text: &str) -> f64 {
        if let Some((a, b)) = self.span
            && (a..=b).contains(&created_ms)
        {
            return 1.0;
        }
        if let Some(m) = self.month
            && Utc
                .timestamp_millis_opt(created_ms)
                .single()
                .is_some_and(|t| t.month() == m)
        {
            return 1.0;
        }
        if self.when && says_time(text) {
            return 1.0;
        }
        self.named_in(text)
    }

    /// 1 when `text` names the date the question names, else 0.
    pub fn named_in(&self, text: &str) -> f64 {
        if self.named.is_some_and(|n| n.in_text(text)) {
            1.0
        } else {
            0.0
        }
    }
}

fn lower_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn is_year(w: &str) -> bool {
    w.len() == 4 && (w.starts_with("19") || w.starts_with("20")) && w.parse::<u32>().is_ok()
}

/// Whether `text` places something in time: a date, month, weekday, year or a word such as
/// "yesterday" or "last week".
pub fn says_time(text: &str) -> bool {
    let words = lower_words(text);
    words.iter().enumerate().any(|(i, w)| {
        let w = w.as_str();
        WHEN_WORDS.contains(&w)
            || WEEKDAYS.contains(&w)
            || (MONTHS.contains(&w) && w != "may")
            || (w == "may" && words.get(i + 1).is_some_and(|n| is_year(n)))
            || (w == "may" && i > 0 && words[i - 1].parse::<u32>().is_ok())
            || is_year(w)
            || ((w == "last" || w == "next" || w == "this")
                && words.get(i + 1).is_some_and(|n| {
                    matches!(
                        n.as_str(),
                        "week"
                            | "month"
                            | "year"
                            | "night"
                            | "weekend"
                            | "summer"
                            | "winter"
                            | "spring"
                            | "fall"
                            | "autumn"
                            | "morning"
                            | "evening"
                    ) || WEEKDAYS.contains(&n.as_str())
                }))
    })
}

/// What `question` asks about time, as of `now_ms`.
pub fn asked(question: &str, now_ms: i64) -> Asked {
    let words = lower_words(question);
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    let when = words.iter().enumerate().any(|(i, x)| {
        x == "when"
            || (x == "what" && matches!(w(i + 1), "date" | "day" | "year" | "month" | "time"))
            || (x == "which" && matches!(w(i + 1), "day" | "year" | "month" | "week"))
            || (x == "how" && w(i + 1) == "long")
    });
    let now = Utc
        .timestamp_millis_opt(now_ms)
        .single()
        .unwrap_or_else(Utc::now)
        .date_naive();
    let day = |d: NaiveDate| {
        let start = d
            .and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp_millis());
        start.map(|s| (s, s + 86_400_000 - 1))
    };
    let days = |from: NaiveDate, to: NaiveDate| Some((day(from)?.0, day(to)?.1));
    let mut span = None;
    let mut month = None;
    for (i, x) in words.iter().enumerate() {
        let x = x.as_str();
        let got = match (x, w(i + 1)) {
            ("yesterday", _) => day(now - Duration::days(1)),
            ("today", _) => day(now),
            ("last", "week") => days(now - Duration::days(13), now - Duration::days(6)),
            ("last", "month") => days(now - Duration::days(62), now - Duration::days(25)),
            ("this", "week") => days(now - Duration::days(6), now),
            ("last", d) if WEEKDAYS.contains(&d) => {
                let target = WEEKDAYS.iter().position(|x| *x == d).unwrap_or(0) as i64;
                let today = now.weekday().num_days_from_monday() as i64;
                let back = (today - target).rem_euclid(7);
                day(now - Duration::days(if back == 0 { 7 } else { back }))
            }
            (n, "days" | "weeks") if w(i + 2) == "ago" && n.parse::<i64>().is_ok() => {
                let n: i64 = n.parse().unwrap_or(0) * if w(i + 1) == "weeks" { 7 } else { 1 };
                days(
                    now - Duration::days(n + 1),
                    now - Duration::days((n - 1).max(0)),
                )
            }
            (m, next) if MONTHS.contains(&m) && (m != "may" || is_year(next)) => {
                let mi = MONTHS.iter().position(|x| *x == m).unwrap_or(0) as u32 + 1;
                if is_year(next) {
                    let y: i32 = next.parse().unwrap_or(1970);
                    let first = NaiveDate::from_ymd_opt(y, mi, 1);
                    let last = NaiveDate::from_ymd_opt(y + (mi / 12) as i32, mi % 12 + 1, 1)
                        .map(|d| d - Duration::days(1));
                    first.zip(last).and_then(|(a, b)| days(a, b))
                } else {
                    month = Some(mi);
                    None
                }
            }
            _ => None,
        };
        if got.is_some() {
            span = got;
        }
    }
    if span.is_none()
        && month.is_none()
        && let Some(y) = words.iter().find(|x| is_year(x))
    {
        let y: i32 = y.parse().unwrap_or(1970);
        span = NaiveDate::from_ymd_opt(y, 1, 1)
            .zip(NaiveDate::from_ymd_opt(y, 12, 31))
            .and_then(|(a, b)| days(a, b));
    }
    Asked {
        when,
        span,
        month,
        named: named(&words),
    }
}

/// The first date `words` name explicitly: a month with its day or year beside it ("may"
/// only so), or a year alone.
fn named(words: &[String]) -> Option<Named> {
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    for (i, x) in words.iter().enumerate() {
        let Some(m) = MONTHS.iter().position(|n| n == x) else {
            continue;
        };
        let before = i.checked_sub(1).and_then(|j| day_of(w(j)));
        let after = day_of(w(i + 1)).filter(|_| !is_year(w(i + 1)));
        let day = after.or(before);
        let year_at = if after.is_some() { i + 2 } else { i + 1 };
        let year = is_year(w(year_at))
            .then(|| w(year_at).parse().ok())
            .flatten();
        if x == "may" && day.is_none() && year.is_none() {
            continue;
        }
        return Some(Named {
            year,
            month: Some(m as u32 + 1),
            day,
        });
    }
    let year = words.iter().find(|x| is_year(x))?.parse().ok()?;
    Some(Named {
        year: Some(year),
        ..Named::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(y: i32, m: u32, d: u32) -> i64 {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(12, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp_millis()
    }

    #[test]
    fn a_question_asking_when_prefers_records_that_say_when() {
        let a = asked("When did we move the cache to Redis?", ms(2026, 11, 27));
        assert!(a.when && a.span.is_none());
        assert_eq!(a.score(0, "Moved the cache to Redis yesterday."), 1.0);
        assert_eq!(a.score(0, "The cache is in Redis now."), 0.0);
        assert_eq!(a.score(0, "We went there on 3 May 2023"), 1.0);
        // "may" as a verb is no date.
        assert!(!says_time("You may want to restart it."));
        assert!(says_time("We shipped it last week"));
        assert!(!asked("fix the cache", 0).any());
    }

    #[test]
    fn a_question_naming_a_time_prefers_records_made_then() {
        // 2026-11-27 is a Friday: last Tuesday is the 24th.
        let now = ms(2026, 11, 27);
        let a = asked("what did we do last Tuesday?", now);
        assert_eq!(a.score(ms(2026, 11, 24), "refactor"), 1.0);
        assert_eq!(a.score(ms(2026, 11, 25), "refactor"), 0.0);
        let a = asked("what broke yesterday", now);
        assert_eq!(a.score(ms(2026, 11, 26), "x"), 1.0);
        let a = asked("Where did Melanie go camping in June?", now);
        assert_eq!(a.month, Some(6));
        assert_eq!(a.score(ms(2023, 6, 20), "x"), 1.0);
        assert_eq!(a.score(ms(2023, 7, 2), "x"), 0.0);
        let a = asked("the migration in March 2024", now);
        assert_eq!(a.score(ms(2024, 3, 31), "x"), 1.0);
        assert_eq!(a.score(ms(2025, 3, 3), "x"), 0.0);
        let a = asked("what happened in 2022?", now);
        assert_eq!(a.score(ms(2022, 8, 1), "x"), 1.0);
    }

    #[test]
    fn a_record_that_names_the_date_asked_answers_it_whenever_it_was_made() {
        let now = ms(2026, 11, 27);
        let a = asked("Who did Maria have dinner with on May 3, 2023?", now);
        let n = a.named.unwrap();
        assert_eq!((n.year, n.month, n.day), (Some(2023), Some(5), Some(3)));
        // Written either way round, with or without an ordinal.
        assert_eq!(a.score(now, "1:56 pm on 3 May, 2023"), 1.0);
        assert_eq!(a.score(now, "dinner on May 3rd 2023"), 1.0);
        assert_eq!(a.named_in("7:00 pm on 3 May, 2023"), 1.0);
        // Another day, another year, or the month alone is not that date.
        assert_eq!(a.score(now, "1:56 pm on 8 May, 2023"), 0.0);
        assert_eq!(a.score(now, "on 3 May, 2022"), 0.0);
        assert_eq!(a.score(now, "sometime in May 2023"), 0.0);
        let a = asked("What did Gina find for her store on 1 February, 2023?", now);
        assert_eq!(a.named_in("2:00 pm on 1 February, 2023"), 1.0);
        assert_eq!(a.named_in("2:00 pm on 11 February, 2023"), 0.0);
        // A month alone, or a year alone.
        let a = asked("Where did Melanie go camping in June?", now);
        assert_eq!(a.named_in("camping trip, 20 June 2023"), 1.0);
        assert_eq!(a.named_in("camping trip, 2 July 2023"), 0.0);
        assert_eq!(
            asked("the law broken in 1930", now).named_in("the Salt March of 1930"),
            1.0
        );
        // "may" as a verb names nothing, in the question or in the record.
        assert!(asked("may I ask what we did?", now).named.is_none());
        let a = asked("what did we ship in May?", now);
        assert!(a.named.is_none());
        let a = asked("what did we ship on 4 May?", now);
        assert_eq!(a.named_in("You may want to ship it on 4 May"), 1.0);
        assert_eq!(a.named_in("You may want to ship it"), 0.0);
    }
}
