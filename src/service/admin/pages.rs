//! The admin page's HTML (maud, escaped by construction: memory is people's text and is shown
//! as text): the layout, the login form, and one function per page over what its handler
//! read. Charts are inline SVG bars; nothing runs in the browser.

use crate::domain::{Entry, EntryVersion, Scope};
use crate::store::{
    Account, AuditLine, FactVersion, FactsRecord, Hearsay, JobRunRow, LeaseRow, PersonRow,
    SpaceRow, SummaryAbout, TableCount,
};
use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};
use std::collections::HashMap;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#222}\
header{background:#243447;color:#fff;padding:.6em 1em;display:flex;gap:1.2em;align-items:center}\
header a{color:#fff}main{padding:1em 1.5em;max-width:80em}\
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}\
th{background:#f2f2f2}.notice{background:#e6f4ea;padding:.5em 1em}.error{background:#fde8e8;padding:.5em 1em}\
.muted{color:#777}form.inline{display:inline}button.danger{color:#a00}svg{background:#fafafa;border:1px solid #ddd}\
.charts{display:flex;flex-wrap:wrap;gap:1.5em}pre{white-space:pre-wrap;margin:0}";

/// Names of spaces and people, to say in words where memory may surface.
#[derive(Debug, Default)]
pub struct Places {
    /// Space titles.
    pub spaces: HashMap<i64, String>,
    /// People's names.
    pub people: HashMap<i64, String>,
}

impl Places {
    /// A space's title (or its id when it has none).
    pub fn space_name(&self, id: i64) -> String {
        self.spaces
            .get(&id)
            .filter(|t| !t.is_empty())
            .cloned()
            .unwrap_or_else(|| format!("space {id}"))
    }

    fn person(&self, id: i64) -> String {
        self.people
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("person {id}"))
    }

    /// Where memory of `scope` may surface, in words.
    pub fn surfaces(&self, scope: &Scope) -> String {
        match scope {
            Scope::Global => "everywhere they talk with the bot (shared)".into(),
            Scope::Space(s) => format!("every channel of {}", self.space_name(s.0)),
            Scope::Channel(s, c) => format!("only #{c} in {} (restricted)", self.space_name(s.0)),
            Scope::Dm(p) => format!("only {}'s private chats", self.person(p.0)),
        }
    }
}

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M").to_string()
}

/// The frame of every page: `operator` is who is logged in (none on the login form).
pub fn layout(title: &str, operator: Option<&str>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) " · Engram admin" }
                style { (STYLE) }
            }
            body {
                header {
                    strong { "Engram admin" }
                    @if let Some(op) = operator {
                        a href="/admin" { "Overview" }
                        a href="/admin/people" { "People" }
                        a href="/admin/spaces" { "Spaces" }
                        a href="/admin/audit" { "Audit log" }
                        a href="/admin/jobs" { "Jobs" }
                        span.muted { "signed in as " (op) }
                        form.inline method="post" action="/admin/logout" {
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// The login form, with why the last try failed.
pub fn login(error: Option<&str>) -> Markup {
    layout(
        "Sign in",
        None,
        html! {
            @if let Some(e) = error { p.error { (e) } }
            form method="post" action="/admin/login" {
                p {
                    label { "Your name (for the audit log) " input name="name" id="name" value="admin" required; }
                }
                p {
                    label { "Admin token " input type="password" name="token" id="token" required autocomplete="current-password"; }
                }
                button type="submit" id="sign-in" { "Sign in" }
            }
        },
    )
}

/// A page that says only what went wrong, in general words.
pub fn problem(title: &str, what: &str, operator: Option<&str>) -> Markup {
    layout(title, operator, html! { p.error { (what) } })
}

/// A bar chart of `points` (label, value), as inline SVG.
pub fn bars(title: &str, points: &[(String, i64)]) -> Markup {
    let (w, h) = (520.0_f64, 140.0_f64);
    let top = points.iter().map(|(_, v)| *v).max().unwrap_or(0);
    let max = top.max(1) as f64;
    let step = w / points.len().max(1) as f64;
    html! {
        figure {
            figcaption { (title) " " span.muted { "(max " (top) ")" } }
            svg width=(w) height=(h + 16.0) role="img" aria-label=(title) {
                @for (i, (label, v)) in points.iter().enumerate() {
                    @let bh = (*v as f64 / max) * h;
                    rect x=(i as f64 * step + 1.0) y=(h - bh) width=((step - 2.0).max(1.0)) height=(bh) fill="#4a7bb7" {
                        title { (label) ": " (v) }
                    }
                }
                @if let (Some((first, _)), Some((last, _))) = (points.first(), points.last()) {
                    text x="2" y=(h + 13.0) font-size="11" { (first) }
                    text x=(w - 2.0) y=(h + 13.0) font-size="11" text-anchor="end" { (last) }
                }
            }
        }
    }
}

/// A chart's bars: (day, value).
pub type Series = Vec<(String, i64)>;

/// What the overview shows.
pub struct Overview {
    /// Rows per table.
    pub sizes: Vec<TableCount>,
    /// Messages waiting for the indexer.
    pub backlog: i64,
    /// Per space (title), messages per day.
    pub messages: Vec<(String, Series)>,
    /// LLM calls per day.
    pub calls: Series,
    /// LLM tokens (prompt and answer) per day.
    pub tokens: Series,
    /// Entries and messages kept, by day (cumulative).
    pub growth: (Series, Series),
}

/// The overview: search, sizes, charts.
pub fn overview(op: &str, o: &Overview) -> Markup {
    layout(
        "Overview",
        Some(op),
        html! {
            (search_forms(""))
            h2 { "Charts (last 30 days)" }
            div.charts {
                @for (space, points) in &o.messages {
                    (bars(&format!("Messages per day in {space}"), points))
                }
                (bars("LLM calls per day", &o.calls))
                (bars("LLM tokens per day", &o.tokens))
                (bars("Memory entries kept", &o.growth.0))
                (bars("Messages kept", &o.growth.1))
            }
            h2 { "Sizes" }
            table {
                tr { th { "table" } th { "rows" } }
                @for t in &o.sizes { tr { td { (t.table) } td { (t.rows) } } }
                tr { td { "index backlog" } td { (o.backlog) } }
            }
        },
    )
}

fn search_forms(q: &str) -> Markup {
    html! {
        form method="get" action="/admin/people" {
            input type="search" name="q" id="people-q" value=(q) placeholder="name, @username or platform id";
            button type="submit" id="find-people" { "Find people" }
        }
        form method="get" action="/admin/spaces" {
            input type="search" name="q" id="spaces-q" placeholder="title or platform id";
            button type="submit" { "Find spaces" }
        }
    }
}

/// People found.
pub fn people(op: &str, q: &str, found: &[PersonRow]) -> Markup {
    layout(
        "People",
        Some(op),
        html! {
            (search_forms(q))
            @if found.is_empty() { p { "No one found." } }
            table {
                tr { th { "person" } th { "messages" } }
                @for p in found {
                    tr {
                        td { a.person href={ "/admin/people/" (p.id.0) } { (p.display_name) } " " span.muted { "#" (p.id.0) } }
                        td { (p.messages) }
                    }
                }
            }
        },
    )
}

/// Spaces found.
pub fn spaces(op: &str, q: &str, found: &[SpaceRow]) -> Markup {
    layout(
        "Spaces",
        Some(op),
        html! {
            form method="get" action="/admin/spaces" {
                input type="search" name="q" value=(q) placeholder="title or platform id";
                button type="submit" { "Find spaces" }
            }
            table {
                tr { th { "space" } th { "platform" } th { "kind" } th { "platform id" } th { "messages" } }
                @for s in found {
                    tr {
                        td { a href={ "/admin/spaces/" (s.id.0) } { @if s.title.is_empty() { "(untitled)" } @else { (s.title) } } }
                        td { (s.platform) } td { (s.kind) } td { (s.external_id) } td { (s.messages) }
                    }
                }
            }
        },
    )
}

/// One space: who wrote there.
pub fn space(op: &str, title: &str, people: &[PersonRow]) -> Markup {
    layout(
        title,
        Some(op),
        html! {
            table {
                tr { th { "person" } th { "messages here" } }
                @for p in people {
                    tr { td { a href={ "/admin/people/" (p.id.0) } { (p.display_name) } } td { (p.messages) } }
                }
            }
        },
    )
}

/// Everything kept about one person.
pub struct PersonView {
    /// Their id.
    pub id: i64,
    /// Their name.
    pub name: String,
    /// Their platform accounts.
    pub accounts: Vec<Account>,
    /// Whether their memory is paused.
    pub paused: bool,
    /// MEMORY.md entries.
    pub entries: Vec<Entry>,
    /// Earlier values of entries.
    pub entry_history: Vec<EntryVersion>,
    /// Facts texts per scope with their versions.
    pub facts: Vec<(Scope, FactsRecord, Vec<FactVersion>)>,
    /// Daily notes.
    pub notes: Vec<crate::domain::DailyNote>,
    /// Day summaries, then history summaries, about them.
    pub summaries: (Vec<SummaryAbout>, Vec<SummaryAbout>),
    /// What others said about them.
    pub told: Vec<Hearsay>,
    /// Changes to their memory.
    pub audit: Vec<AuditLine>,
    /// Names for scopes.
    pub places: Places,
}

/// A text of memory line by line, each line that says something with a button that forgets
/// it (and what said it elsewhere), as "forget that …" would; headings and blank lines as
/// they are.
fn forgettable_lines(base: &str, text: &str) -> Markup {
    html! {
        table.lines {
            @for line in text.lines() {
                tr {
                    td { pre { (line) } }
                    td {
                        @if !line.trim().is_empty() && !line.trim_start().starts_with('#') {
                            form.inline method="post" action={ (base) "/forget" } {
                                input type="hidden" name="text" value=(line.trim());
                                button.danger.forget type="submit" { "Forget" }
                            }
                        }
                    }
                }
            }
        }
    }
}

// Over 80 lines: one section per tier of memory, in the order the reply context uses them.
/// The person page: memory by tier, each item with where it may surface, and the actions.
pub fn person(op: &str, v: &PersonView, notice: Option<&str>) -> Markup {
    let base = format!("/admin/people/{}", v.id);
    let places = &v.places;
    layout(
        &v.name,
        Some(op),
        html! {
            @if let Some(n) = notice { p.notice id="notice" { (n) } }
            p {
                "Memory is " strong id="memory-state" { @if v.paused { "paused" } @else { "on" } } ". "
                @if v.paused {
                    form.inline method="post" action={ (base) "/resume" } { button type="submit" id="resume" { "Resume" } }
                } @else {
                    form.inline method="post" action={ (base) "/pause" } { button type="submit" id="pause" { "Pause" } }
                }
                " "
                a href={ (base) "/clear" } id="clear" { "Clear everything about " (v.name) "…" }
            }
            h2 { "Linked accounts" }
            table {
                tr { th { "platform" } th { "id" } th { "name" } th { "username" } th { "linked" } }
                @for a in &v.accounts {
                    tr {
                        td { (a.platform.as_str()) } td { (a.external_id) } td { (a.display_name) }
                        td { (a.username.as_deref().unwrap_or("")) }
                        td { @if a.linked() { "joined by /memory link" } }
                    }
                }
            }
            h2 { "MEMORY.md entries" }
            table #entries {
                tr { th { "category" } th { "entry" } th { "confidence" } th { "source" } th { "learned" } th { "may surface" } th { "updated" } th {} }
                @for e in &v.entries {
                    tr.entry {
                        td { (e.category.heading()) }
                        td.value {
                            (e.value)
                            @for h in v.entry_history.iter().filter(|h| h.entry_id == e.id) {
                                br; span.muted { "was: " (h.value) " (" (h.source) ", replaced " (when(h.replaced_at)) " by " (h.replaced_by) ")" }
                            }
                        }
                        td { (format!("{:.2}", e.confidence)) }
                        td { (e.source) }
                        td { (e.origin) }
                        td { (places.surfaces(&e.scope)) }
                        td { (when(e.updated_at)) }
                        td {
                            form.inline method="post" action={ (base) "/entries/" (e.id) "/forget" } {
                                button.danger.forget type="submit" { "Forget" }
                            }
                        }
                    }
                }
            }
            h2 { "Facts" }
            @for (scope, record, versions) in &v.facts {
                h3 { "May surface: " (places.surfaces(scope)) }
                (forgettable_lines(&base, &record.text))
                details {
                    summary { (versions.len()) " versions" }
                    table {
                        tr { th { "version" } th { "change" } th { "as asked" } th { "how" } th { "by" } th { "when" } }
                        @for f in versions {
                            tr {
                                td { (f.version) } td { (f.op) } td { (f.request) } td { (f.method) }
                                td { @if let Some(p) = f.changed_by { (places.person(p.0)) } }
                                td { (when(f.at)) }
                            }
                        }
                    }
                }
            }
            h2 { "What others told about them" }
            table #told {
                tr { th { "told by" } th { "what" } th { "may surface" } th { "when" } th {} }
                @for h in &v.told {
                    tr {
                        td { (h.told_by_name) } td { (h.text) } td { (places.surfaces(&h.scope)) } td { (when(h.at)) }
                        td {
                            form.inline method="post" action={ (base) "/statements/" (h.id) "/forget" } {
                                button.danger type="submit" { "Forget" }
                            }
                        }
                    }
                }
            }
            h2 { "Daily notes" }
            table {
                tr { th { "day" } th { "note" } th { "source" } th { "may surface" } }
                @for n in &v.notes {
                    tr { td { (n.day) } td { (forgettable_lines(&base, &n.text)) } td { (n.source) } td { (places.surfaces(&n.scope)) } }
                }
            }
            h2 { "Day summaries mentioning them" }
            (summaries(&v.summaries.0, places))
            h2 { "History summaries" }
            (summaries(&v.summaries.1, places))
            h2 { "Changes to their memory" }
            (audit_table(&v.audit, places))
        },
    )
}

fn summaries(items: &[SummaryAbout], places: &Places) -> Markup {
    html! {
        table {
            tr { th { "day" } th { "summary" } th { "may surface" } }
            @for s in items {
                tr { td { (s.day) } td { (s.text) } td { (places.surfaces(&s.scope)) } }
            }
        }
    }
}

/// The confirmation before clearing a person, as `/memory clear` asks for a "yes".
pub fn confirm_clear(op: &str, id: i64, name: &str) -> Markup {
    layout(
        &format!("Clear {name}?"),
        Some(op),
        html! {
            p {
                "This deletes everything Engram keeps about " strong { (name) } ": their entries and facts with \
                 their history, daily notes, summaries, what others said about them and what they said about \
                 others, every message they wrote (the bot's copy) with the bot's replies, and the memory of \
                 accounts joined to them. It cannot be undone. The audit log records that you did it."
            }
            form method="post" action={ "/admin/people/" (id) "/clear" } {
                input type="hidden" name="confirm" value="yes";
                button.danger type="submit" id="confirm-clear" { "Yes, clear everything" }
                " " a href={ "/admin/people/" (id) } { "Cancel" }
            }
        },
    )
}

fn audit_table(lines: &[AuditLine], places: &Places) -> Markup {
    html! {
        table #audit {
            tr { th { "when" } th { "who" } th { "did" } th { "whose memory" } th { "where" } th { "items" } th { "asked in the message" } }
            @for l in lines {
                @let c = &l.change;
                tr {
                    td { (when(c.at)) }
                    td {
                        @if let Some(a) = c.actor { a href={ "/admin/people/" (a.0) } { (c.actor_label) } }
                        @else { (c.actor_label) }
                    }
                    td { (c.action) }
                    td {
                        @if let Some(s) = c.subject {
                            a href={ "/admin/people/" (s.0) } { (l.subject_name.as_deref().unwrap_or("(unknown)")) }
                        }
                    }
                    td { @if let Some(s) = &c.scope { (places.surfaces(s)) } }
                    td { (c.count) }
                    td {
                        @match &l.message_text {
                            Some(t) => (t),
                            None if c.message.is_some() => span.muted { "(no longer kept)" },
                            None => "",
                        }
                    }
                }
            }
        }
    }
}

/// The audit log.
pub fn audit(op: &str, lines: &[AuditLine], places: &Places) -> Markup {
    layout(
        "Audit log",
        Some(op),
        html! {
            p.muted { "Newest first. The log keeps who changed whose memory, how and where; what was said shows \
                       only while the message that said it is kept." }
            (audit_table(lines, places))
        },
    )
}

/// Job runs.
pub fn jobs(op: &str, runs: &[JobRunRow], leases: &[LeaseRow], now: DateTime<Utc>) -> Markup {
    layout(
        "Jobs",
        Some(op),
        html! {
            h2 { "Leases" }
            table #leases {
                tr { th { "name" } th { "holder" } th { "until" } }
                @for l in leases {
                    tr {
                        td { (l.name) } td { (l.holder) }
                        td {
                            @if l.until > now { "held until " (when(l.until)) }
                            @else { strong { "expired " (when(l.until)) } }
                        }
                    }
                }
            }
            h2 { "Runs" }
            table #jobs {
                tr { th { "job" } th { "run" } th { "status" } th { "attempts" } th { "holder" } th { "lease" } th { "started" } th { "finished" } th { "detail" } }
                @for r in runs {
                    tr {
                        td { (r.job) } td { (r.run_key) }
                        td { @if r.status == "failed" { strong.error { "failed" } } @else { (r.status) } }
                        td { (r.attempts) } td { (r.holder) }
                        td {
                            @if r.status == "running" && r.lease_until > now { "held until " (when(r.lease_until)) }
                            @else if r.status == "running" { strong { "expired " (when(r.lease_until)) } }
                            @else if r.status == "failed" { "retry from " (when(r.lease_until)) }
                        }
                        td { (when(r.started_at)) }
                        td { @if let Some(f) = r.finished_at { (when(f)) } }
                        td { (r.detail.chars().take(300).collect::<String>()) }
                    }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_shown_as_text() {
        let page = problem("t", "<script>alert(1)</script>", Some("ops"));
        let html = page.into_string();
        assert!(!html.contains("<script>alert"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }

    #[test]
    fn leases_show_their_holder_and_whether_they_are_held() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let lease = |name: &str, holder: &str, secs: i64| LeaseRow {
            name: name.into(),
            holder: holder.into(),
            until: now + chrono::Duration::seconds(secs),
        };
        let leases = [
            lease("poller:a", "host-1", 20),
            lease("poller:b", "host-2", -5),
        ];
        let html = jobs("ops", &[], &leases, now).into_string();
        let (held, expired) = (html.find("host-1").unwrap(), html.find("host-2").unwrap());
        let held_until = html.find("held until").expect("the live lease is held");
        let expired_at = html.find("expired").expect("the old one has expired");
        assert!(held < held_until && held_until < expired);
        assert!(expired < expired_at);
        assert!(!jobs("ops", &[], &[], now).into_string().contains("host-1"));
    }

    #[test]
    fn bars_scale_to_the_largest() {
        let svg = bars("x", &[("a".into(), 1), ("b".into(), 4)]).into_string();
        assert!(
            svg.contains("height=\"140\""),
            "the largest fills the height: {svg}"
        );
        assert!(svg.contains("height=\"35\""), "a quarter of it: {svg}");
        let empty = bars("none", &[]).into_string();
        assert!(empty.contains("svg"));
    }
}
