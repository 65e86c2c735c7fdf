//! `engram bench language`: how often language detection names the language of labelled chat
//! lines (a TSV of `code<TAB>text`, e.g. tests/data/language_lines.tsv), per language, and
//! what it costs per line.

use crate::domain::language::{self, Language};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// Lines of one language: how many, how many detected right, and what the others became.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LanguageScore {
    /// Lines labelled with it.
    pub lines: usize,
    /// Lines detected as it.
    pub correct: usize,
    /// `correct / lines`.
    pub accuracy: f64,
    /// What its lines were detected as when wrong ("none": no letters to tell by).
    pub mistaken_for: BTreeMap<String, usize>,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct LanguageReport {
    /// Lines read.
    pub lines: usize,
    /// Share detected right.
    pub accuracy: f64,
    /// Per labelled language.
    pub per_language: BTreeMap<String, LanguageScore>,
    /// Mean detection time per line, microseconds.
    pub micros_per_line: f64,
}

/// Why a data file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LanguageBenchError {
    /// A line is not `code<TAB>text` with a known code.
    #[error("line {line}: expected `code<TAB>text` with a known language code")]
    BadLine {
        /// 1-based line number.
        line: usize,
    },
}

/// Measures detection on `tsv` (lines `code<TAB>text`; empty lines and `#` comments skipped).
pub fn run(tsv: &str) -> Result<LanguageReport, LanguageBenchError> {
    let mut rows = Vec::new();
    for (i, line) in tsv.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (code, text) = line
            .split_once('\t')
            .filter(|(c, _)| Language::from_code(c).is_some())
            .ok_or(LanguageBenchError::BadLine { line: i + 1 })?;
        rows.push((code.to_string(), text));
    }
    // The models load on first use: not part of any line's time.
    let _ = language::detect("warm up");
    let mut per_language: BTreeMap<String, LanguageScore> = BTreeMap::new();
    let started = Instant::now();
    let detected: Vec<Option<Language>> = rows.iter().map(|(_, t)| language::detect(t)).collect();
    let elapsed = started.elapsed();
    let mut correct = 0;
    for ((code, _), got) in rows.iter().zip(detected) {
        let s = per_language.entry(code.clone()).or_default();
        s.lines += 1;
        let got = got.map_or("none", Language::code);
        if got == code {
            s.correct += 1;
            correct += 1;
        } else {
            *s.mistaken_for.entry(got.to_string()).or_default() += 1;
        }
    }
    for s in per_language.values_mut() {
        s.accuracy = s.correct as f64 / s.lines.max(1) as f64;
    }
    Ok(LanguageReport {
        lines: rows.len(),
        accuracy: correct as f64 / rows.len().max(1) as f64,
        per_language,
        micros_per_line: elapsed.as_secs_f64() * 1e6 / rows.len().max(1) as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_each_language_and_refuses_bad_lines() {
        let r = run("# comment\nen\tsee you tomorrow at the station\nru\tувидимся завтра на вокзале\nde\tthe weather is lovely today\n\n").unwrap();
        assert_eq!(r.lines, 3);
        assert_eq!(r.per_language["en"].correct, 1);
        assert_eq!(r.per_language["ru"].accuracy, 1.0);
        // A line labelled German but written in English counts as a mistake, and says as what.
        assert_eq!(r.per_language["de"].correct, 0);
        assert_eq!(r.per_language["de"].mistaken_for["en"], 1);
        assert!((r.accuracy - 2.0 / 3.0).abs() < 1e-9);
        assert!(matches!(
            run("xx\thello"),
            Err(LanguageBenchError::BadLine { line: 1 })
        ));
        assert!(matches!(
            run("en hello"),
            Err(LanguageBenchError::BadLine { line: 1 })
        ));
    }
}
