//! `engram bench …`: benchmarks that print JSON. They run the real store, memory and HTTP client
//! against local fakes, never against the network.

// The two benchmarks that start a fake model server come with the `test-util` feature.
#[cfg(feature = "test-util")]
pub mod context;
pub mod embed;
pub mod language;
#[cfg(feature = "test-util")]
pub mod load;
pub mod retrieval;
pub mod store;

use serde::Serialize;

/// `engram bench context`: the size of the synthetic community (defaults: the command
/// line's).
#[derive(Debug, Clone)]
pub struct ContextBenchOptions {
    /// People in the community.
    pub people: usize,
    /// Days of chat.
    pub days: i64,
    /// Messages in all.
    pub messages: usize,
    /// Warm context builds per person.
    pub warm_rounds: usize,
    /// Seed of the generator (the same seed, the same community).
    pub seed: u64,
}

/// `engram bench load`: the load and the fake model's behaviour.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// People sending messages.
    pub people: usize,
    /// Spaces they are spread over.
    pub spaces: usize,
    /// Messages per second, all people together.
    pub rate: f64,
    /// How long the load runs (seconds).
    pub secs: u64,
    /// How long the fake model takes to answer (milliseconds).
    pub llm_latency_ms: u64,
    /// Share (0..=1) of model requests that fail with 500.
    pub llm_fault_rate: f64,
}

/// Latency percentiles in microseconds.
#[derive(Debug, Serialize)]
pub struct Latency {
    /// How many samples were taken.
    pub samples: usize,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// The slowest.
    pub max_us: f64,
}

/// Percentiles of samples in microseconds.
pub fn latency(mut us: Vec<f64>) -> Latency {
    us.sort_by(f64::total_cmp);
    Latency {
        samples: us.len(),
        p50_us: percentile(&us, 50.0),
        p99_us: percentile(&us, 99.0),
        max_us: us.last().copied().unwrap_or(0.0),
    }
}

/// p-th percentile (0..=100) of durations in microseconds, nearest rank.
pub fn percentile(sorted_us: &[f64], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted_us.len() as f64).ceil() as usize;
    sorted_us[rank.clamp(1, sorted_us.len()) - 1]
}

/// Resident memory of this process, from /proc/self/status: (current, peak) in KiB.
pub fn resident_memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}
