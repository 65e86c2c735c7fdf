//! The admin page at `/admin` (only when `ENGRAM_ADMIN_TOKEN` is set): people and spaces,
//! one person's memory by tier with where each item may surface, pause/resume, forgetting one
//! item and clearing a person through the memory tier's own paths (the same effects as the
//! chat commands, with an audit line naming the operator), the audit log, jobs and charts.
//! Every admin URL but the login form answers 401 without the token or a session; pages say
//! what went wrong in general words, the details go to the log.

pub mod auth;
pub mod pages;

use crate::domain::{Clock, Person, PersonId, Place, Platform, Privacy, Scope, SpaceId, SpaceKind};
use crate::memory::audit::By;
use crate::memory::entries::EntryBook;
use crate::memory::{FactRequest, ForgetOutcome, MemoryError, MemoryManager};
use crate::store::{Store, StoreError};
use auth::{AdminAuth, COOKIE, SESSION_HOURS};
use axum::Router;
use axum::extract::{Form, Path, Query, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{any, get, post};
use pages::Places;
use serde::Deserialize;
use std::sync::Arc;
use tracing::{error, info};

/// What the admin page works with, from the composition root.
pub struct AdminParts {
    /// Where memory lives.
    pub store: Arc<dyn Store>,
    /// Forgetting and clearing.
    pub memory: Arc<MemoryManager>,
    /// Pausing.
    pub entries: Arc<EntryBook>,
    /// Sessions' time.
    pub clock: Arc<dyn Clock>,
    /// The token.
    pub auth: AdminAuth,
}

/// The admin page.
pub struct Admin {
    parts: AdminParts,
}

impl Admin {
    /// The admin page over its parts.
    pub fn new(parts: AdminParts) -> Admin {
        Admin { parts }
    }
}

/// The operator a request is made by (from the session or "bearer").
#[derive(Debug, Clone)]
struct Operator(String);

/// Why an admin page could not be made.
#[derive(Debug, thiserror::Error)]
enum AdminError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error("not found")]
    NotFound,
}

/// An answer and its operator, for the error page's header.
struct Failed(AdminError, Option<String>);

impl IntoResponse for Failed {
    fn into_response(self) -> Response {
        let Failed(e, op) = self;
        let (status, what) = match &e {
            AdminError::NotFound => (StatusCode::NOT_FOUND, "There is nothing here."),
            _ => {
                error!(error = %e, "admin page failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "The page could not be made: the database did not answer as expected. The log has the details.",
                )
            }
        };
        (status, pages::problem("Problem", what, op.as_deref())).into_response()
    }
}

type Page = Result<Response, Failed>;

trait OrFail<T> {
    fn or_fail(self, op: &Operator) -> Result<T, Failed>;
}

impl<T, E: Into<AdminError>> OrFail<T> for Result<T, E> {
    fn or_fail(self, op: &Operator) -> Result<T, Failed> {
        self.map_err(|e| Failed(e.into(), Some(op.0.clone())))
    }
}

/// Headers of every admin answer: never cached, never framed, no scripts.
async fn harden(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    // "same-origin": a browser then names this page's origin on its form posts (with
    // "no-referrer" it sends `Origin: null`, which `same_origin` refuses).
    h.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    res
}

/// A 401 with the login form.
fn unauthorized(why: Option<&str>) -> Response {
    (StatusCode::UNAUTHORIZED, pages::login(why)).into_response()
}

/// Lets a request with the token (Bearer) or a live session through, its operator in its
/// extensions; a form post from another site is refused.
async fn require_admin(State(admin): State<Arc<Admin>>, mut req: Request, next: Next) -> Response {
    let auth = &admin.parts.auth;
    let now = admin.parts.clock.now();
    let operator = if let Some(token) = super::api::bearer(req.headers()) {
        auth.token_matches(token).then(|| "bearer".to_string())
    } else {
        match session_cookie(req.headers()) {
            // Signed and not over, it counts while the store has it open (not signed out).
            // The store is asked for every cookie, signed right or not: how long a refusal
            // takes says nothing of the token a forged cookie was signed with.
            Some(value) => {
                let signed = auth.operator(value, now);
                match admin
                    .parts
                    .store
                    .admin_session(&AdminAuth::key(value), now.timestamp())
                    .await
                {
                    Ok(open) => signed.filter(|name| open.as_ref() == Some(name)),
                    Err(e) => {
                        return Failed(e.into(), None).into_response();
                    }
                }
            }
            None => None,
        }
    };
    let Some(operator) = operator else {
        return unauthorized(None);
    };
    if req.method() == Method::POST && !same_origin(&req) {
        return (
            StatusCode::FORBIDDEN,
            pages::problem("Refused", "A form from another site.", Some(&operator)),
        )
            .into_response();
    }
    req.extensions_mut().insert(Operator(operator));
    next.run(req).await
}

/// The session cookie's value, if the request has one.
fn session_cookie(headers: &header::HeaderMap) -> Option<&str> {
    headers
        .get(header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|c| auth::cookie(c, COOKIE))
}

/// A browser's form post names its page's origin: it must be this host. (Scripts send
/// none; the session cookie is SameSite=Strict as well.)
fn same_origin(req: &Request) -> bool {
    let Some(origin) = req.headers().get(header::ORIGIN) else {
        return true;
    };
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    let origin = origin.to_str().ok().and_then(|o| o.split_once("://"));
    matches!((origin, host), (Some((_, o)), Some(h)) if o == h)
}

#[derive(Deserialize)]
struct LoginForm {
    name: String,
    token: String,
}

async fn login_form() -> Response {
    pages::login(None).into_response()
}

/// "; Secure" when the page was reached over HTTPS, as a TLS proxy in front says
/// (`X-Forwarded-Proto`, `Forwarded: proto=https`): the browser then never sends the session
/// over plain HTTP. Reached over plain HTTP (127.0.0.1, a compose network), a Secure cookie
/// would never come back.
fn secure_attribute(headers: &header::HeaderMap) -> &'static str {
    let said = |name: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split([',', ';']))
            .map(|v| v.trim().to_ascii_lowercase())
            .collect::<Vec<_>>()
    };
    let https = said("x-forwarded-proto")
        .first()
        .is_some_and(|p| p == "https")
        || said("forwarded").iter().any(|p| p == "proto=https");
    if https { "; Secure" } else { "" }
}

async fn login(
    State(admin): State<Arc<Admin>>,
    headers: header::HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let name = form.name.trim();
    if !auth::valid_name(name) {
        return unauthorized(Some("A name is 1 to 32 letters, digits, '-', '_' or '.'."));
    }
    if !admin.parts.auth.token_matches(&form.token) {
        info!(operator = name, "admin sign-in refused");
        return unauthorized(Some("That is not the admin token."));
    }
    let now = admin.parts.clock.now();
    let value = admin.parts.auth.session(name, now);
    if let Err(e) = admin
        .parts
        .store
        .open_admin_session(
            &AdminAuth::key(&value),
            name,
            AdminAuth::until(now),
            now.timestamp(),
        )
        .await
    {
        return Failed(e.into(), Some(name.to_string())).into_response();
    }
    info!(operator = name, "admin signed in");
    let cookie = format!(
        "{COOKIE}={value}; Path=/admin; HttpOnly; SameSite=Strict; Max-Age={}{}",
        SESSION_HOURS * 3600,
        secure_attribute(&headers)
    );
    ([(header::SET_COOKIE, cookie)], Redirect::to("/admin")).into_response()
}

/// Ends the session for every copy of its cookie, then drops the browser's.
async fn logout(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    headers: header::HeaderMap,
) -> Response {
    if let Some(value) = session_cookie(&headers) {
        if let Err(e) = admin
            .parts
            .store
            .close_admin_session(&AdminAuth::key(value))
            .await
        {
            return Failed(e.into(), Some(op.0)).into_response();
        }
        info!(operator = op.0, "admin signed out");
    }
    (
        [(
            header::SET_COOKIE,
            format!(
                "{COOKIE}=; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=0{}",
                secure_attribute(&headers)
            ),
        )],
        Redirect::to("/admin/login"),
    )
        .into_response()
}

async fn not_found(axum::Extension(op): axum::Extension<Operator>) -> Page {
    Err(Failed(AdminError::NotFound, Some(op.0)))
}

/// The titles of the spaces and the names of the people a page shows: those of `scopes`,
/// and `spaces` and `people` besides.
async fn places<'a>(
    store: &dyn Store,
    scopes: impl Iterator<Item = &'a Scope>,
    mut spaces: Vec<SpaceId>,
    mut people: Vec<PersonId>,
) -> Result<Places, StoreError> {
    for scope in scopes {
        match scope {
            Scope::Space(s) | Scope::Channel(s, _) => spaces.push(*s),
            Scope::Dm(p) => people.push(*p),
            Scope::Global => {}
        }
    }
    spaces.sort_by_key(|s| s.0);
    spaces.dedup();
    people.sort_by_key(|p| p.0);
    people.dedup();
    let mut places = Places::default();
    for (id, title) in store.space_titles(&spaces).await? {
        places.spaces.insert(id.0, title);
    }
    for p in people {
        if let Some(person) = store.person(p).await? {
            places.people.insert(p.0, person.display_name);
        }
    }
    Ok(places)
}

const CHART_DAYS: i64 = 30;

/// Days since the Unix epoch of `day`.
fn day_index_of(day: chrono::NaiveDate) -> i64 {
    (day - chrono::NaiveDate::default()).num_days()
}

/// The last `CHART_DAYS` days up to `today`, each with its count in `counts` (by day index),
/// or their running total from the first day on when `cumulative`.
fn per_day(counts: &[(i64, i64)], today: i64, cumulative: bool) -> Vec<(String, i64)> {
    let first = today - CHART_DAYS + 1;
    let mut total: i64 = if cumulative {
        counts
            .iter()
            .filter(|(d, _)| *d < first)
            .map(|(_, n)| n)
            .sum()
    } else {
        0
    };
    (first..=today)
        .map(|d| {
            let n: i64 = counts
                .iter()
                .filter(|(day, _)| *day == d)
                .map(|(_, n)| n)
                .sum();
            total = if cumulative { total + n } else { n };
            let label = chrono::DateTime::from_timestamp(d * 86_400, 0)
                .map(|t| t.date_naive().to_string())
                .unwrap_or_default();
            (label, total)
        })
        .collect()
}

async fn overview(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
) -> Page {
    let store = &*admin.parts.store;
    let now = admin.parts.clock.now();
    let today = crate::store::oversight::day_index(now);
    let since = now - chrono::TimeDelta::days(CHART_DAYS);
    let mut by_space: std::collections::BTreeMap<i64, Vec<(i64, i64)>> = Default::default();
    for (space, day, n) in store.messages_per_day(since).await.or_fail(&op)? {
        by_space.entry(space.0).or_default().push((day, n));
    }
    let mut busiest: Vec<(i64, Vec<(i64, i64)>)> = by_space.into_iter().collect();
    busiest.sort_by_key(|(id, days)| (-days.iter().map(|(_, n)| n).sum::<i64>(), *id));
    busiest.truncate(6);
    let shown = busiest.iter().map(|(id, _)| SpaceId(*id)).collect();
    let titles = places(store, std::iter::empty(), shown, Vec::new())
        .await
        .or_fail(&op)?;
    let (entries, messages) = store.memory_per_day().await.or_fail(&op)?;
    let usage = store
        .llm_usage(since.date_naive())
        .await
        .or_fail(&op)?
        .into_iter()
        .map(|(day, u)| (day_index_of(day), u));
    let (calls, tokens): (Vec<_>, Vec<_>) = usage
        .map(|(d, u)| ((d, u.calls), (d, u.prompt_tokens + u.completion_tokens)))
        .unzip();
    let view = pages::Overview {
        sizes: store.table_counts().await.or_fail(&op)?,
        backlog: store.index_backlog().await.or_fail(&op)?,
        messages: busiest
            .into_iter()
            .map(|(id, days)| (titles.space_name(id), per_day(&days, today, false)))
            .collect(),
        calls: per_day(&calls, today, false),
        tokens: per_day(&tokens, today, false),
        growth: (
            per_day(&entries, today, true),
            per_day(&messages, today, true),
        ),
    };
    Ok(pages::overview(&op.0, &view).into_response())
}

#[derive(Deserialize)]
struct Search {
    #[serde(default)]
    q: String,
    #[serde(default)]
    done: Option<String>,
}

async fn people(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Query(search): Query<Search>,
) -> Page {
    let found = admin
        .parts
        .store
        .search_people(&search.q, 200)
        .await
        .or_fail(&op)?;
    Ok(pages::people(&op.0, &search.q, &found).into_response())
}

async fn spaces(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Query(search): Query<Search>,
) -> Page {
    let found = admin
        .parts
        .store
        .search_spaces(&search.q, 200)
        .await
        .or_fail(&op)?;
    Ok(pages::spaces(&op.0, &search.q, &found).into_response())
}

async fn space(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Path(id): Path<i64>,
) -> Page {
    let store = &*admin.parts.store;
    let titles = places(store, std::iter::empty(), vec![SpaceId(id)], Vec::new())
        .await
        .or_fail(&op)?;
    if !titles.spaces.contains_key(&id) {
        return Err(Failed(AdminError::NotFound, Some(op.0)));
    }
    let people = store.space_people(SpaceId(id), 500).await.or_fail(&op)?;
    Ok(pages::space(&op.0, &titles.space_name(id), &people).into_response())
}

/// What `done=` in a redirect after an action says.
fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "forgot" => {
            "Forgotten: it is gone from memory, the messages that said it and the bot's answers quoting it."
        }
        "paused" => "Memory paused: nothing new is kept about them until it is resumed.",
        "resumed" => "Memory resumed.",
        "cleared" => "Everything about them was cleared.",
        "missing" => "That item is no longer there.",
        "nomatch" => "Nothing matched that line: it was changed or forgotten meanwhile.",
        "unclear" => {
            "Nothing was forgotten: the line says nothing but their name, or is longer than a fact may be."
        }
        _ => return None,
    })
}

async fn person(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Path(id): Path<i64>,
    Query(search): Query<Search>,
) -> Page {
    let store = &*admin.parts.store;
    let who = PersonId(id);
    let p = person_or_404(store, who, &op).await?;
    let mut facts = Vec::new();
    for scope in store.fact_scopes(who).await.or_fail(&op)? {
        let record = store.facts(who, &scope).await.or_fail(&op)?;
        let versions = store.fact_history(who, &scope).await.or_fail(&op)?;
        facts.push((scope, record, versions));
    }
    let entries = store.entries(who, None).await.or_fail(&op)?;
    let notes = store.daily_notes(who, None).await.or_fail(&op)?;
    let summaries = store.summaries_about(who).await.or_fail(&op)?;
    let told = store.hearsay(who, None).await.or_fail(&op)?;
    let audit = store.audit_log(Some(who), 200).await.or_fail(&op)?;
    let scopes = entries
        .iter()
        .map(|e| &e.scope)
        .chain(facts.iter().map(|(s, _, _)| s))
        .chain(notes.iter().map(|n| &n.scope))
        .chain(told.iter().map(|h| &h.scope))
        .chain(summaries.0.iter().chain(&summaries.1).map(|s| &s.scope))
        .chain(audit.iter().filter_map(|l| l.change.scope.as_ref()));
    let changers = facts
        .iter()
        .flat_map(|(_, _, v)| v)
        .filter_map(|f| f.changed_by)
        .collect();
    let places = places(store, scopes, Vec::new(), changers)
        .await
        .or_fail(&op)?;
    let view = pages::PersonView {
        id,
        name: p.display_name,
        accounts: store.accounts(who).await.or_fail(&op)?,
        paused: store.memory_paused(who).await.or_fail(&op)?,
        entry_history: store.entry_history(who).await.or_fail(&op)?,
        entries,
        facts,
        notes,
        summaries,
        told,
        audit,
        places,
    };
    Ok(pages::person(&op.0, &view, notice(search.done.as_deref())).into_response())
}

fn back(id: i64, done: &str) -> Response {
    Redirect::to(&format!("/admin/people/{id}?done={done}")).into_response()
}

/// The person's own private chat: where a request of theirs reaches all their memory (as
/// `/memory forget` confirmed there does).
fn own_place(person: PersonId) -> Place {
    Place {
        platform: Platform::Api,
        space: SpaceId(0),
        space_kind: SpaceKind::Private,
        channel: String::new(),
        privacy: Privacy::Dm,
        dm_owner: Some(person),
    }
}

/// The person with this id, or the "nothing here" page.
async fn person_or_404(store: &dyn Store, who: PersonId, op: &Operator) -> Result<Person, Failed> {
    match store.person(who).await.or_fail(op)? {
        Some(p) => Ok(p),
        None => Err(Failed(AdminError::NotFound, Some(op.0.clone()))),
    }
}

/// A request the person makes themselves in `place` (their own private chat, `own_place`),
/// as the operator acts in their stead.
fn own_request<'a>(
    who: PersonId,
    name: &'a str,
    place: &'a Place,
    text: &'a str,
) -> FactRequest<'a> {
    FactRequest {
        subject: who,
        subject_name: name,
        actor: who,
        actor_name: name,
        actor_is_moderator: false,
        place,
        text,
        source: None,
    }
}

/// Forgets one entry or one statement about the person, as `/memory forget` does once
/// confirmed: the item, and what it said everywhere else it is kept.
async fn forget_item(
    admin: &Admin,
    op: &Operator,
    id: i64,
    entry: Option<i64>,
    told: Option<i64>,
) -> Page {
    let store = &*admin.parts.store;
    let who = PersonId(id);
    let p = person_or_404(store, who, op).await?;
    let entries: Vec<(i64, String)> = match entry {
        Some(e) => store
            .entries(who, None)
            .await
            .or_fail(op)?
            .into_iter()
            .filter(|x| x.id == e)
            .map(|x| (x.id, x.value))
            .collect(),
        None => Vec::new(),
    };
    let statements: Vec<i64> = match told {
        Some(t) => store
            .hearsay(who, None)
            .await
            .or_fail(op)?
            .into_iter()
            .filter(|h| h.id == t)
            .map(|h| h.id)
            .collect(),
        None => Vec::new(),
    };
    if entries.is_empty() && statements.is_empty() {
        return Ok(back(id, "missing"));
    }
    let place = own_place(who);
    let req = own_request(who, &p.display_name, &place, "");
    let by = By::operator(&op.0);
    let n = admin
        .parts
        .memory
        .delete_entries(&req, &entries, &statements, &by)
        .await
        .or_fail(op)?;
    info!(operator = %op.0, person = id, items = n, "admin forgot an item");
    Ok(back(id, "forgot"))
}

async fn forget_entry(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Path((id, entry)): Path<(i64, i64)>,
) -> Page {
    forget_item(&admin, &op, id, Some(entry), None).await
}

async fn forget_statement(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Path((id, told)): Path<(i64, i64)>,
) -> Page {
    forget_item(&admin, &op, id, None, Some(told)).await
}

#[derive(Deserialize)]
struct Text {
    #[serde(default)]
    text: String,
}

/// Forgets a line of the person's facts or daily notes as "forget that …" in their own
/// private chat does: the line, and what said it everywhere else it is kept (entries, notes,
/// episode details, the messages and the bot's quotes), with an audit line naming the
/// operator.
async fn forget_text(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Path(id): Path<i64>,
    Form(form): Form<Text>,
) -> Page {
    let who = PersonId(id);
    let p = person_or_404(&*admin.parts.store, who, &op).await?;
    let place = own_place(who);
    let req = own_request(who, &p.display_name, &place, form.text.trim());
    let by = By::operator(&op.0);
    let done = match admin.parts.memory.forget_as(&req, &by).await {
        Ok(ForgetOutcome::Forgotten { .. }) => "forgot",
        Ok(ForgetOutcome::NotFound { .. }) => "nomatch",
        // Nothing that could be forgotten was asked (empty, only their name, too long).
        Err(MemoryError::EmptyFact { .. } | MemoryError::FactTooLong { .. }) => "unclear",
        Err(e) => return Err(Failed(e.into(), Some(op.0))),
    };
    info!(operator = %op.0, person = id, done, "admin forgot a line");
    Ok(back(id, done))
}

async fn set_paused(admin: &Admin, op: &Operator, id: i64, paused: bool) -> Page {
    let who = PersonId(id);
    person_or_404(&*admin.parts.store, who, op).await?;
    let by = By::operator(&op.0);
    admin
        .parts
        .entries
        .set_paused(who, paused, &by)
        .await
        .or_fail(op)?;
    info!(operator = %op.0, person = id, paused, "admin changed pause");
    Ok(back(id, if paused { "paused" } else { "resumed" }))
}

async fn pause(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Path(id): Path<i64>,
) -> Page {
    set_paused(&admin, &op, id, true).await
}

async fn resume(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Path(id): Path<i64>,
) -> Page {
    set_paused(&admin, &op, id, false).await
}

async fn clear_form(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Path(id): Path<i64>,
) -> Page {
    let p = person_or_404(&*admin.parts.store, PersonId(id), &op).await?;
    Ok(pages::confirm_clear(&op.0, id, &p.display_name).into_response())
}

#[derive(Deserialize)]
struct Confirm {
    #[serde(default)]
    confirm: String,
}

async fn clear(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
    Path(id): Path<i64>,
    Form(form): Form<Confirm>,
) -> Page {
    let who = PersonId(id);
    person_or_404(&*admin.parts.store, who, &op).await?;
    // Without the confirmation's "yes" nothing happens: back to the question.
    if form.confirm != "yes" {
        return Ok(Redirect::to(&format!("/admin/people/{id}/clear")).into_response());
    }
    let by = By::operator(&op.0);
    let rows = admin
        .parts
        .memory
        .clear_with_joined(who, &by)
        .await
        .or_fail(&op)?;
    info!(operator = %op.0, person = id, rows, "admin cleared a person");
    Ok(back(id, "cleared"))
}

async fn audit(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
) -> Page {
    let store = &*admin.parts.store;
    let lines = store.audit_log(None, 500).await.or_fail(&op)?;
    let scopes = lines.iter().filter_map(|l| l.change.scope.as_ref());
    let places = places(store, scopes, Vec::new(), Vec::new())
        .await
        .or_fail(&op)?;
    Ok(pages::audit(&op.0, &lines, &places).into_response())
}

async fn jobs(
    State(admin): State<Arc<Admin>>,
    axum::Extension(op): axum::Extension<Operator>,
) -> Page {
    let runs = admin.parts.store.recent_job_runs(200).await.or_fail(&op)?;
    let leases = admin.parts.store.leases().await.or_fail(&op)?;
    let now = admin.parts.clock.now();
    Ok(pages::jobs(&op.0, &runs, &leases, now).into_response())
}

/// The admin routes: the login form open, everything else behind the token.
pub fn routes(admin: Arc<Admin>) -> Router {
    let open = Router::new()
        .route("/admin/login", get(login_form).post(login))
        .with_state(admin.clone());
    let guarded = Router::new()
        .route("/admin", get(overview))
        .route("/admin/logout", post(logout))
        .route("/admin/people", get(people))
        .route("/admin/people/{id}", get(person))
        .route("/admin/people/{id}/pause", post(pause))
        .route("/admin/people/{id}/resume", post(resume))
        .route("/admin/people/{id}/clear", get(clear_form).post(clear))
        .route(
            "/admin/people/{id}/entries/{entry}/forget",
            post(forget_entry),
        )
        .route(
            "/admin/people/{id}/statements/{told}/forget",
            post(forget_statement),
        )
        .route("/admin/people/{id}/forget", post(forget_text))
        .route("/admin/spaces", get(spaces))
        .route("/admin/spaces/{id}", get(space))
        .route("/admin/audit", get(audit))
        .route("/admin/jobs", get(jobs))
        .route("/admin/{*rest}", any(not_found))
        .route("/admin/", get(overview))
        .layer(axum::middleware::from_fn_with_state(
            admin.clone(),
            require_admin,
        ))
        .with_state(admin);
    open.merge(guarded).layer(axum::middleware::from_fn(harden))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_cover_thirty_days_counted_or_summed() {
        let today = 20_000;
        let counts = [(today - 40, 5), (today - 29, 2), (today, 3)];
        let daily = per_day(&counts, today, false);
        assert_eq!(daily.len(), CHART_DAYS as usize);
        assert_eq!(daily[0].1, 2);
        assert_eq!(daily[29].1, 3);
        assert_eq!(daily.iter().map(|(_, n)| n).sum::<i64>(), 5);
        let total = per_day(&counts, today, true);
        assert_eq!(total[0].1, 7, "what came before the window counts");
        assert_eq!(total[29].1, 10);
        assert_eq!(daily[29].0, "2024-10-04");
        let day = chrono::NaiveDate::from_ymd_opt(2024, 10, 4).unwrap();
        assert_eq!(day_index_of(day), today);
    }
}
