//! Wrong secrets per client address: once an address has shown `server.wrong_secrets` wrong
//! admin tokens or API keys (bearer headers, the admin login form) within
//! `server.wrong_secrets_window_secs` of its first, every request of that address that shows
//! a secret is refused (429) until the window ends, the right secret included, so a token
//! cannot be guessed at the listener's speed. Only answers that refused a secret count: any
//! number of right ones at once pass.

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tracing::warn;

/// Wrong secrets counted per address, each count ending `window` after its first.
#[derive(Clone)]
pub struct Guesses {
    wrong: moka::sync::Cache<IpAddr, Arc<AtomicUsize>>,
    max: usize,
    window: Duration,
}

/// The key an address is counted under: IPv6 by its /64 (one host is given a whole /64 and
/// could otherwise guess from each of its addresses), IPv4 as itself (an IPv4 address in
/// IPv6 form too).
fn counted_as(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

impl Guesses {
    /// At most `max` wrong secrets per address within `window` (`max` 0: no limit).
    pub fn new(max: usize, window: Duration) -> Guesses {
        Guesses {
            wrong: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(window)
                .build(),
            max,
            window,
        }
    }

    /// Whether `addr` has shown its wrong secrets.
    fn refused(&self, addr: IpAddr) -> bool {
        self.max > 0
            && self
                .wrong
                .get(&counted_as(addr))
                .is_some_and(|n| n.load(Ordering::Acquire) >= self.max)
    }

    /// Counts a wrong secret of `addr` (said in the log once, when it reaches the limit).
    fn count(&self, addr: IpAddr) {
        if self.max == 0 {
            return;
        }
        let n = self
            .wrong
            .get_with(counted_as(addr), || Arc::new(AtomicUsize::new(0)))
            .fetch_add(1, Ordering::AcqRel)
            + 1;
        if n == self.max {
            warn!(%addr, window_secs = self.window.as_secs(), "too many wrong secrets: this address is refused for a while");
        }
    }
}

/// Whether `request` shows a secret: a bearer token, or the admin login form. (A session
/// cookie is not counted: a stale one after a restart is no guess, and checking one costs
/// a guesser as much as a bearer token would.)
fn shows_secret(request: &Request) -> bool {
    super::api::bearer(request.headers()).is_some()
        || (request.method() == Method::POST && request.uri().path() == "/admin/login")
}

/// The middleware: refuses an address that has shown its wrong secrets, and counts each 401
/// answered to a request that showed one.
pub async fn limit(State(guesses): State<Guesses>, request: Request, next: Next) -> Response {
    if !shows_secret(&request) {
        return next.run(request).await;
    }
    // Requests served without a connection's address (in-process) share one count.
    let addr = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
    if guesses.refused(addr) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, guesses.window.as_secs().to_string())],
            "too many wrong secrets from this address; try again later\n",
        )
            .into_response();
    }
    let response = next.run(request).await;
    if response.status() == StatusCode::UNAUTHORIZED {
        guesses.count(addr);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_refused_after_its_wrong_secrets_and_others_are_not() {
        let g = Guesses::new(3, Duration::from_secs(600));
        let a = IpAddr::from([10, 0, 0, 1]);
        for _ in 0..2 {
            g.count(a);
        }
        assert!(!g.refused(a), "two of three");
        g.count(a);
        assert!(g.refused(a));
        assert!(!g.refused(IpAddr::from([10, 0, 0, 2])), "another address");
        // The same IPv4 address written as IPv6 is the same address.
        assert!(g.refused("::ffff:10.0.0.1".parse().unwrap()));
        let off = Guesses::new(0, Duration::from_secs(600));
        for _ in 0..10 {
            off.count(a);
        }
        assert!(!off.refused(a), "0: no limit");
    }

    #[test]
    fn an_ipv6_host_is_counted_by_its_64() {
        let g = Guesses::new(2, Duration::from_secs(600));
        g.count("2001:db8:1:2::1".parse().unwrap());
        g.count("2001:db8:1:2:ffff::9".parse().unwrap());
        assert!(g.refused("2001:db8:1:2::77".parse().unwrap()));
        assert!(
            !g.refused("2001:db8:1:3::1".parse().unwrap()),
            "the next /64"
        );
    }
}
