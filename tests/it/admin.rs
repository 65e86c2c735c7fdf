//! The admin page: every admin URL refuses a request without the token (none, a wrong one, a
//! forged, expired, foreign, never opened or signed-out session) with a 401 that shows nothing kept, beside the same
//! request with it; a form posted from another site is refused; forgetting an item and
//! clearing a person have the chat commands' effects and leave an audit line naming the
//! operator, and the audit log keeps no forgotten text. A real headless Chromium drives the
//! page through WebDriver: sign in, find a person, forget one entry, and the chat no longer
//! knows it.

use crate::common::*;
use engram::app;
use engram::service::admin::auth::AdminAuth;
use reqwest::StatusCode;
use reqwest::redirect::Policy;

const TOKEN: &str = "admin-token-0123456789abcdef";

/// The listener of `h` with the admin page.
async fn serve_admin(h: &Harness) -> (String, tokio::sync::watch::Sender<bool>) {
    let admin = app::admin_page(Some(TOKEN), &h.memory, h.store.clone(), h.clock.clone())
        .expect("a strong token");
    listen(h, engram::service::Programs { api: None, admin }).await
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}

/// How a request shows who it is.
#[derive(Clone, Copy, Debug)]
enum Cred<'a> {
    None,
    Bearer(&'a str),
    Cookie(&'a str),
}

async fn send(
    base: &str,
    method: &str,
    path: &str,
    cred: Cred<'_>,
    form: &[(&str, &str)],
) -> (StatusCode, String) {
    let url = format!("{base}{path}");
    let mut req = match method {
        "GET" => client().get(url),
        _ => client().post(url).form(form),
    };
    req = match cred {
        Cred::None => req,
        Cred::Bearer(t) => req.bearer_auth(t),
        Cred::Cookie(c) => req.header("cookie", format!("engram_admin={c}")),
    };
    let res = req.send().await.unwrap();
    (res.status(), res.text().await.unwrap())
}

/// The session cookie's value in a `Set-Cookie` header.
fn session_in(set_cookie: &str) -> String {
    set_cookie
        .split(';')
        .next()
        .unwrap()
        .strip_prefix("engram_admin=")
        .unwrap()
        .to_string()
}

async fn entry_id(h: &Harness, person: engram::domain::PersonId, words: &str) -> i64 {
    h.store
        .entries(person, None)
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.value.contains(words))
        .unwrap_or_else(|| panic!("an entry with {words:?}"))
        .id
}

// Over 80 lines: one scenario, each refusal beside the allowed request it mirrors.
async fn admin_urls_need_the_token(url: Option<String>) {
    let h = harness_on(url, false).await;
    h.dm("alice", "remember that I love green tea").await;
    h.dm("alice", "remember that I live in Lisbon").await;
    let alice = h.person("alice").await;
    let tea = entry_id(&h, alice, "green tea").await;
    let (base, stop) = serve_admin(&h).await;

    let now = h.clock.now();
    let foreign = AdminAuth::new("another-token-0123456789")
        .unwrap()
        .session("admin", now);
    let ours = AdminAuth::new(TOKEN).unwrap();
    let expired = ours.session("admin", now - chrono::TimeDelta::hours(13));
    let forged = format!("admin.{}.{}", now.timestamp() + 3600, "ab".repeat(32));
    // Signed with the token but never opened by a sign-in: a session counts only while the
    // store has it open.
    let never_opened = ours.session("admin", now);
    let person = format!("/admin/people/{}", alice.0);
    let gets = [
        "/admin".to_string(),
        "/admin/".to_string(),
        "/admin/people?q=alice".to_string(),
        person.clone(),
        format!("{person}/clear"),
        "/admin/audit".to_string(),
        "/admin/jobs".to_string(),
        "/admin/spaces".to_string(),
        "/admin/spaces/1".to_string(),
        "/admin/people/999999".to_string(),
        "/admin/no-such-page".to_string(),
    ];
    let posts = [
        (format!("{person}/clear"), vec![("confirm", "yes")]),
        (format!("{person}/entries/{tea}/forget"), vec![]),
        (format!("{person}/pause"), vec![]),
        (format!("{person}/resume"), vec![]),
        (format!("{person}/statements/1/forget"), vec![]),
        (
            format!("{person}/forget"),
            vec![("text", "I love green tea")],
        ),
        ("/admin/logout".to_string(), vec![]),
    ];
    let refused = [
        Cred::None,
        Cred::Bearer("admin-token-0123456789abcdeX"),
        Cred::Bearer(&TOKEN[..TOKEN.len() - 1]),
        Cred::Cookie(&foreign),
        Cred::Cookie(&expired),
        Cred::Cookie(&forged),
        Cred::Cookie(&never_opened),
        Cred::Cookie(""),
    ];
    for cred in refused {
        for path in &gets {
            let (code, body) = send(&base, "GET", path, cred, &[]).await;
            assert_eq!(code, StatusCode::UNAUTHORIZED, "GET {path} with {cred:?}");
            let lower = body.to_lowercase();
            assert!(
                !lower.contains("green tea") && !lower.contains("alice"),
                "GET {path} with {cred:?} leaks: {body}"
            );
            assert!(body.contains("Admin token"), "the login form is offered");
        }
        for (path, form) in &posts {
            let (code, _) = send(&base, "POST", path, cred, form).await;
            assert_eq!(code, StatusCode::UNAUTHORIZED, "POST {path} with {cred:?}");
        }
    }
    // Nothing those requests asked for happened.
    assert!(
        entry_values(&h, alice)
            .await
            .iter()
            .any(|v| v.contains("green tea"))
    );
    assert!(!h.store.memory_paused(alice).await.unwrap());

    // The same pages with the token show the person and their memory.
    for path in &gets[..9] {
        let (code, body) = send(&base, "GET", path, Cred::Bearer(TOKEN), &[]).await;
        assert_eq!(code, StatusCode::OK, "GET {path}: {body}");
    }
    let (_, page) = send(&base, "GET", &person, Cred::Bearer(TOKEN), &[]).await;
    assert!(
        page.contains("I love green tea") && page.contains("alice"),
        "{page}"
    );
    assert!(
        page.contains("only alice&#39;s private chats")
            || page.contains("only alice's private chats"),
        "where it may surface: {page}"
    );
    let (code, _) = send(
        &base,
        "GET",
        "/admin/people/999999",
        Cred::Bearer(TOKEN),
        &[],
    )
    .await;
    assert_eq!(code, StatusCode::NOT_FOUND);

    // The login form: a wrong token is refused, the right one gives a session that works.
    let (code, _) = send(
        &base,
        "POST",
        "/admin/login",
        Cred::None,
        &[("name", "ops"), ("token", "wrong-token-0123456789")],
    )
    .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    let res = client()
        .post(format!("{base}/admin/login"))
        .form(&[("name", "ops"), ("token", TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let set = res.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict") && !set.contains("Secure"),
        "over plain HTTP a Secure cookie would never come back: {set}"
    );
    // Behind a TLS proxy that says so, the session never travels over plain HTTP.
    for (name, value) in [
        ("x-forwarded-proto", "https"),
        ("forwarded", "for=192.0.2.60;proto=https;by=203.0.113.43"),
    ] {
        let proxied = client()
            .post(format!("{base}/admin/login"))
            .header(name, value)
            .form(&[("name", "ops"), ("token", TOKEN)])
            .send()
            .await
            .unwrap();
        let set = proxied.headers()["set-cookie"].to_str().unwrap();
        assert!(set.ends_with("; Secure"), "{name}: {set}");
    }
    let session = session_in(&set);
    let (code, body) = send(&base, "GET", "/admin", Cred::Cookie(&session), &[]).await;
    assert_eq!(code, StatusCode::OK);
    assert!(body.contains("signed in as ops"));

    // A form posted from another site with the session is refused; from the page itself it
    // is done.
    let cross = client()
        .post(format!("{base}{person}/pause"))
        .header("cookie", format!("engram_admin={session}"))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
    assert!(!h.store.memory_paused(alice).await.unwrap());
    let own = client()
        .post(format!("{base}{person}/pause"))
        .header("cookie", format!("engram_admin={session}"))
        .header("origin", &base)
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), StatusCode::SEE_OTHER);
    assert!(h.store.memory_paused(alice).await.unwrap());
    let lines = h.store.audit_log(Some(alice), 10).await.unwrap();
    let paused: Vec<_> = lines
        .iter()
        .filter(|l| l.change.action == "pause")
        .collect();
    assert_eq!(paused.len(), 1, "one line for one pause: {lines:?}");
    assert_eq!(paused[0].change.actor_label, "admin:ops");
    let (code, _) = send(
        &base,
        "POST",
        &format!("{person}/resume"),
        Cred::Cookie(&session),
        &[],
    )
    .await;
    assert_eq!(code, StatusCode::SEE_OTHER);
    assert!(!h.store.memory_paused(alice).await.unwrap());

    // Signing out ends the session for every copy of its cookie, not only the browser's; a
    // second sign-in's session is its own and goes on.
    let copied = session.clone();
    let other = client()
        .post(format!("{base}/admin/login"))
        .form(&[("name", "ops2"), ("token", TOKEN)])
        .send()
        .await
        .unwrap();
    let other = session_in(other.headers()["set-cookie"].to_str().unwrap());
    let (code, _) = send(&base, "GET", "/admin", Cred::Cookie(&copied), &[]).await;
    assert_eq!(
        code,
        StatusCode::OK,
        "the copy works while the session is open"
    );
    let (code, _) = send(&base, "POST", "/admin/logout", Cred::Cookie(&session), &[]).await;
    assert_eq!(code, StatusCode::SEE_OTHER);
    for path in ["/admin", "/admin/audit"] {
        let (code, body) = send(&base, "GET", path, Cred::Cookie(&copied), &[]).await;
        assert_eq!(code, StatusCode::UNAUTHORIZED, "{path} after signing out");
        assert!(!body.contains("alice"), "{body}");
    }
    let (code, body) = send(&base, "GET", "/admin", Cred::Cookie(&other), &[]).await;
    assert_eq!(code, StatusCode::OK, "another session goes on");
    assert!(body.contains("signed in as ops2"));
    let _ = stop.send(true);

    // Without a token there is no admin page at all.
    let (base, stop) = listen(&h, engram::service::Programs::default()).await;
    let (code, _) = send(&base, "GET", "/admin", Cred::Bearer(TOKEN), &[]).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (code, _) = send(&base, "GET", "/healthz", Cred::None, &[]).await;
    assert_eq!(code, StatusCode::OK, "the listener itself answers");
    let _ = stop.send(true);
}

// Over 80 lines: one story (remember, audit, forget, audit, clear, audit) checked as it goes.
async fn forgetting_and_clearing_are_audited_and_leave_no_text(url: Option<String>) {
    let h = harness_on(url, false).await;
    h.dm("alice", "remember that I love green tea").await;
    h.dm("alice", "remember that I live in Lisbon").await;
    h.say_in(&group("acme"), "alice", "hi all").await;
    h.say_in(&group("acme"), "bob", "hi all, I am bob").await;
    let alice = h.person("alice").await;
    // Bob tells something about Alice and takes it back: his own "forget" message stays in
    // the history, and the log must not show it.
    let told = "@Engram remember this about @alice: she plays chess on tuesdays";
    h.say_in(&group("acme"), "bob", told).await.expect("told");
    assert_eq!(h.store.hearsay(alice, None).await.unwrap().len(), 1);
    let back = "@Engram forget that @alice plays chess on tuesdays";
    h.say_in(&group("acme"), "bob", back)
        .await
        .expect("taken back");
    assert!(h.store.hearsay(alice, None).await.unwrap().is_empty());
    let (base, stop) = serve_admin(&h).await;
    let bearer = Cred::Bearer(TOKEN);

    // The audit log says who remembered what, from the message that asked.
    let (_, log) = send(&base, "GET", "/admin/audit", bearer, &[]).await;
    assert!(log.contains("remember that I love green tea"), "{log}");
    assert_eq!(log.matches(">remember<").count(), 2, "{log}");
    assert!(log.contains(">tell<") && log.contains(">forget<"), "{log}");
    assert!(
        !log.contains("chess"),
        "a forgotten statement is nowhere in the log: {log}"
    );
    assert!(!rows_holding(&h, "green tea").await.is_empty());

    // Forget one entry from the admin page: gone from memory, from the chat, and from the log.
    let tea = entry_id(&h, alice, "green tea").await;
    let path = format!("/admin/people/{}/entries/{tea}/forget", alice.0);
    let (code, _) = send(&base, "POST", &path, bearer, &[]).await;
    assert_eq!(code, StatusCode::SEE_OTHER);
    let values = entry_values(&h, alice).await;
    assert!(
        !values.iter().any(|v| v.contains("green tea")),
        "{values:?}"
    );
    assert!(
        values.iter().any(|v| v.contains("Lisbon")),
        "the other entry stays: {values:?}"
    );
    let view = h.dm("alice", "/memory").await;
    assert!(
        !view.contains("green tea") && view.contains("Lisbon"),
        "{view}"
    );
    let (_, log) = send(&base, "GET", "/admin/audit", bearer, &[]).await;
    assert!(
        !log.contains("green tea"),
        "the forgotten text is nowhere in the log: {log}"
    );
    assert!(
        log.contains("remember that I live in Lisbon"),
        "what stays is still shown: {log}"
    );
    assert!(
        log.contains("admin:bearer") && log.contains(">delete<"),
        "{log}"
    );
    let left = rows_holding(&h, "green tea").await;
    assert!(left.is_empty(), "forgotten from every table: {left:?}");

    // Forget one statement someone made about her: gone from the store and her view, with
    // the other statement kept (a positive control).
    let told = "@Engram remember this about @alice: she collects vinyl records";
    h.say_in(&group("acme"), "bob", told).await.expect("told");
    let kept = "@Engram remember this about @alice: she rides a red bicycle";
    h.say_in(&group("acme"), "bob", kept).await.expect("told");
    let statements = h.store.hearsay(alice, None).await.unwrap();
    let vinyl = statements
        .iter()
        .find(|s| s.text.contains("vinyl"))
        .expect("the statement")
        .id;
    let path = format!("/admin/people/{}/statements/{vinyl}/forget", alice.0);
    let (code, _) = send(&base, "POST", &path, bearer, &[]).await;
    assert_eq!(code, StatusCode::SEE_OTHER);
    let statements = h.store.hearsay(alice, None).await.unwrap();
    assert!(
        !statements.iter().any(|s| s.text.contains("vinyl"))
            && statements.iter().any(|s| s.text.contains("red bicycle")),
        "{statements:?}"
    );
    let (_, page) = send(
        &base,
        "GET",
        &format!("/admin/people/{}", alice.0),
        bearer,
        &[],
    )
    .await;
    assert!(
        !page.contains("vinyl") && page.contains("red bicycle"),
        "{page}"
    );

    // Clearing without the confirmation's "yes" does nothing; with it, everything goes and
    // the log says who did it.
    let clear = format!("/admin/people/{}/clear", alice.0);
    let (code, _) = send(&base, "POST", &clear, bearer, &[]).await;
    assert_eq!(code, StatusCode::SEE_OTHER);
    assert!(!entry_values(&h, alice).await.is_empty());
    let (_, form) = send(&base, "GET", &clear, bearer, &[]).await;
    assert!(form.contains("cannot be undone"), "{form}");
    let (code, _) = send(&base, "POST", &clear, bearer, &[("confirm", "yes")]).await;
    assert_eq!(code, StatusCode::SEE_OTHER);
    assert!(entry_values(&h, alice).await.is_empty());
    assert!(
        rows_holding(&h, "Lisbon").await.is_empty(),
        "{:?}",
        rows_holding(&h, "Lisbon").await
    );
    let (_, log) = send(&base, "GET", "/admin/audit", bearer, &[]).await;
    assert!(log.contains(">clear<") && !log.contains("Lisbon"), "{log}");
    let lines = h.store.audit_log(Some(alice), 50).await.unwrap();
    let cleared = lines.iter().find(|l| l.change.action == "clear").unwrap();
    assert_eq!(cleared.change.actor_label, "admin:bearer");
    assert_eq!(cleared.change.actor, None);
    // Bob's part of the database is untouched.
    let (_, people) = send(&base, "GET", "/admin/people?q=bo", bearer, &[]).await;
    assert!(people.contains(">bob<"), "{people}");
    let _ = stop.send(true);
}

/// The line of `person`'s facts that holds `words`.
async fn fact_line(h: &Harness, person: engram::domain::PersonId, words: &str) -> String {
    for scope in h.store.fact_scopes(person).await.unwrap() {
        let record = h.store.facts(person, &scope).await.unwrap();
        if let Some(line) = record.text.lines().find(|l| l.contains(words)) {
            return line.trim().to_string();
        }
    }
    panic!("a fact line with {words:?}")
}

/// The text of `person`'s facts and daily notes, all scopes.
async fn facts_and_notes(h: &Harness, person: engram::domain::PersonId) -> String {
    let mut all = String::new();
    for scope in h.store.fact_scopes(person).await.unwrap() {
        all += &h.store.facts(person, &scope).await.unwrap().text;
    }
    for n in h.store.daily_notes(person, None).await.unwrap() {
        all += &n.text;
    }
    all
}

// Over 80 lines: one story (a fact line, a note line, a name alone), each with its control.
/// A line of the facts or of a daily note is forgotten from the admin page as "forget that …"
/// in the person's own chat would: gone from every table and from the chat, the other lines
/// kept, and an audit line naming the operator. A line of nothing but their name forgets
/// nothing.
async fn a_line_of_facts_or_notes_is_forgotten_from_the_page(url: Option<String>) {
    let h = harness_on(url, false).await;
    // "St." ends a sentence for the facts' splitter: the line is two sentences to it.
    h.dm("alice", "remember that I am a nurse at St. Mary's")
        .await;
    h.dm("alice", "remember that I live in Lisbon").await;
    let alice = h.person("alice").await;
    let note = engram::domain::DailyNote {
        day: h.clock.now().date_naive(),
        scope: engram::domain::Scope::Dm(alice),
        text: "# Notes\n- alice restores old pianos\n- alice asked about the weather".into(),
        source: "test:note".into(),
        added_at: h.clock.now(),
    };
    h.store.append_daily_note(alice, &note).await.unwrap();
    let (base, stop) = serve_admin(&h).await;
    let bearer = Cred::Bearer(TOKEN);
    let person = format!("/admin/people/{}", alice.0);
    let forget = format!("{person}/forget");
    let post = |text: &str| {
        let url = format!("{base}{forget}");
        let form = [("text", text.to_string())];
        async move {
            let res = client()
                .post(url)
                .bearer_auth(TOKEN)
                .form(&form)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::SEE_OTHER);
            res.headers()["location"].to_str().unwrap().to_string()
        }
    };

    // Each line has its button, the fact's and the notes'; the heading has none.
    let nurse = fact_line(&h, alice, "nurse").await;
    let (_, page) = send(&base, "GET", &person, bearer, &[]).await;
    let button = |line: &str| format!("name=\"text\" value=\"{line}\"");
    assert!(
        page.contains(&button(&nurse)) || page.contains(&button(&nurse.replace('\'', "&#39;"))),
        "{nurse:?} in {page}"
    );
    assert!(
        page.contains(&button("- alice restores old pianos")),
        "{page}"
    );
    assert!(
        page.contains("# Notes") && !page.contains(&button("# Notes")),
        "{page}"
    );

    // A fact line: gone from the facts, the entry that said it, the chat and every table.
    assert_eq!(post(&nurse).await, format!("{person}?done=forgot"));
    let kept = facts_and_notes(&h, alice).await;
    assert!(!kept.contains("nurse") && kept.contains("Lisbon"), "{kept}");
    let view = h.dm("alice", "/memory").await;
    assert!(!view.contains("nurse") && view.contains("Lisbon"), "{view}");
    let left = rows_holding(&h, "nurse").await;
    assert!(left.is_empty(), "forgotten from every table: {left:?}");
    let lines = h.store.audit_log(Some(alice), 50).await.unwrap();
    let by = lines
        .iter()
        .find(|l| l.change.action == "forget")
        .expect("audited");
    assert_eq!(by.change.actor_label, "admin:bearer");
    assert_eq!(by.change.actor, None);

    // A daily note line: gone, the other line and the heading kept.
    let done = post("- alice restores old pianos").await;
    assert_eq!(done, format!("{person}?done=forgot"));
    let kept = facts_and_notes(&h, alice).await;
    assert!(
        !kept.contains("pianos") && kept.contains("weather"),
        "{kept}"
    );
    assert!(kept.contains("# Notes"), "{kept}");

    // A line no longer there, and her name alone (which names nothing of hers): nothing goes.
    assert_eq!(
        post("- alice restores old pianos").await,
        format!("{person}?done=nomatch")
    );
    assert_eq!(post("alice").await, format!("{person}?done=unclear"));
    let kept = facts_and_notes(&h, alice).await;
    assert!(
        kept.contains("Lisbon") && kept.contains("weather"),
        "{kept}"
    );
    let _ = stop.send(true);
}

/// The person page shows each tier of their memory with where it may surface: MEMORY.md
/// entries with category, confidence, source and an earlier value; facts and their versions;
/// daily notes; the day and history summaries that mention them; their accounts. Another
/// person's memory is not on it.
async fn the_person_page_shows_every_tier(url: Option<String>) {
    let h = harness_on(url, false).await;
    h.dm("alice", "remember that my favourite tea is green tea")
        .await;
    h.dm("alice", "remember that my favourite tea is jasmine tea")
        .await;
    h.dm("bob", "remember that I collect old stamps").await;
    let alice = h.person("alice").await;
    let dm = engram::domain::Scope::Dm(alice);
    let (day, now) = (h.clock.now().date_naive(), h.clock.now());
    h.store
        .append_daily_note(
            alice,
            &engram::domain::DailyNote {
                day,
                scope: dm.clone(),
                text: "- planned a trip to Porto".into(),
                source: "job:extract:dm".into(),
                added_at: now,
            },
        )
        .await
        .unwrap();
    let record = engram::store::DaySummaryRecord {
        summaries: [(
            alice,
            "Alice weighed two teas and a trip to Porto".to_string(),
        )]
        .into(),
        through_message: i64::MAX,
        message_count: 3,
        is_final: true,
        computed_at: now,
    };
    assert!(
        h.store
            .put_day_summary(&dm, day, &record, None)
            .await
            .unwrap()
    );
    h.store
        .put_history_summary(&dm, alice, day, "Weeks of tea tasting", now, None)
        .await
        .unwrap();
    let (base, stop) = serve_admin(&h).await;
    let page_of = |person: engram::domain::PersonId| {
        let path = format!("/admin/people/{}", person.0);
        let base = base.clone();
        async move { send(&base, "GET", &path, Cred::Bearer(TOKEN), &[]).await }
    };
    let (code, page) = page_of(alice).await;
    assert_eq!(code, StatusCode::OK, "{page}");
    // Each tier under its heading, with where it may surface.
    let section = |heading: &str| {
        let title = format!("<h2>{heading}</h2>");
        let start = page
            .find(&title)
            .unwrap_or_else(|| panic!("no {heading}: {page}"));
        let rest = &page[start + title.len()..];
        rest[..rest.find("<h2>").unwrap_or(rest.len())].to_string()
    };
    let surfaces = "only alice's private chats";
    let accounts = section("Linked accounts");
    assert!(
        accounts.contains("<td>console</td><td>alice</td>"),
        "{accounts}"
    );
    let said = h.store.author_messages(alice, None).await.unwrap();
    let source = |text: &str| {
        let (id, _) = said.iter().find(|(_, t)| t.contains(text)).expect("said");
        format!("message:{}", id.0)
    };
    let (green, jasmine) = (source("is green tea"), source("is jasmine tea"));
    let entries = section("MEMORY.md entries");
    for shown in [
        "User Preferences",
        "my favourite tea is jasmine tea",
        &format!("was: my favourite tea is green tea ({green}"),
        "<td>0.95</td>",
        &format!("<td>{jasmine}</td>"),
        "<td>a private chat</td>",
        surfaces,
    ] {
        assert!(entries.contains(shown), "{shown}: {entries}");
    }
    let facts = section("Facts");
    for shown in [
        "2 versions",
        "<td>remember</td>",
        "my favourite tea is jasmine tea",
        surfaces,
    ] {
        assert!(facts.contains(shown), "{shown}: {facts}");
    }
    let notes = section("Daily notes");
    for shown in ["planned a trip to Porto", "job:extract:dm", surfaces] {
        assert!(notes.contains(shown), "{shown}: {notes}");
    }
    let days = section("Day summaries mentioning them");
    assert!(
        days.contains("Alice weighed two teas") && days.contains(surfaces),
        "{days}"
    );
    let history = section("History summaries");
    assert!(
        history.contains("Weeks of tea tasting") && history.contains(surfaces),
        "{history}"
    );
    // Bob's memory is on his page (the positive control), not on hers.
    let (_, his) = page_of(h.person("bob").await).await;
    assert!(his.contains("old stamps"), "{his}");
    assert!(!page.contains("stamps"), "{page}");
    let _ = stop.send(true);
}

on_both_harnesses!(
    the_person_page_shows_every_tier,
    admin_urls_need_the_token,
    forgetting_and_clearing_are_audited_and_leave_no_text,
    a_line_of_facts_or_notes_is_forgotten_from_the_page
);

/// The model's use reaches the day's totals once, whatever the number of writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_use_is_written_per_day_once() {
    use engram::llm::{ChatMessage, ChatRequest};
    let h = Harness::with_llm().await;
    let llm = app::chat_model(
        &h.config,
        &engram::config::Secrets::default(),
        h.clock.clone(),
    )
    .unwrap()
    .unwrap();
    let recorder = engram::jobs::UsageRecorder::new(llm.clone());
    let ask = || ChatRequest {
        task: "reply",
        messages: vec![ChatMessage::user("hello")],
        temperature: 0.0,
        json: false,
        max_tokens: None,
        tools: Vec::new(),
    };
    for _ in 0..2 {
        llm.complete(&ask()).await.unwrap();
    }
    let day = h.clock.now().date_naive();
    for _ in 0..2 {
        recorder.write(&*h.store, &*h.clock).await.unwrap();
    }
    let usage = h.store.llm_usage(day).await.unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0].1.calls, 2);
    assert_eq!(
        usage[0].1.prompt_tokens as u64,
        llm.usage().prompt_tokens,
        "tokens as the model counted them"
    );
    h.clock.advance(chrono::TimeDelta::days(1));
    llm.complete(&ask()).await.unwrap();
    recorder.write(&*h.store, &*h.clock).await.unwrap();
    let usage = h.store.llm_usage(day).await.unwrap();
    assert_eq!(
        usage.iter().map(|(_, u)| u.calls).collect::<Vec<_>>(),
        [2, 1]
    );
}

/// Chromium through chromedriver (Debian's `chromium` and `chromium-driver`), on a free port.
struct Browser {
    driver: std::process::Child,
    client: fantoccini::Client,
}

impl Browser {
    /// The element with this id on the page.
    async fn by_id(&self, id: &str) -> fantoccini::elements::Element {
        let found = self.client.find(fantoccini::Locator::Id(id)).await;
        found.unwrap_or_else(|e| panic!("no #{id}: {e}"))
    }

    async fn start() -> Browser {
        use std::io::BufRead;
        let (socket, port) = refused_port();
        drop(socket);
        let mut driver = std::process::Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("chromedriver (apt-get install chromium chromium-driver)");
        // It says so once it listens.
        let out = driver.stdout.take().unwrap();
        let started = tokio::task::spawn_blocking(move || {
            std::io::BufReader::new(out)
                .lines()
                .map_while(Result::ok)
                .any(|l| l.contains("started successfully"))
        })
        .await
        .unwrap();
        assert!(started, "chromedriver did not start");
        let caps: serde_json::Map<String, serde_json::Value> = serde_json::from_value(serde_json::json!({
            "goog:chromeOptions": {
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"]
            }
        }))
        .unwrap();
        let http = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = fantoccini::ClientBuilder::new(http)
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a browser session");
        Browser { driver, client }
    }

    /// Saves the page as `name`.png where ENGRAM_SCREENSHOTS says (nowhere when unset).
    async fn shot(&self, name: &str) {
        if let Some(dir) = std::env::var_os("ENGRAM_SCREENSHOTS") {
            let png = self.client.screenshot().await.unwrap();
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(std::path::Path::new(&dir).join(format!("{name}.png")), png).unwrap();
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

// Over 80 lines: one walk through the page as an operator does it.
#[cfg_attr(
    not(engram_browser_tests),
    ignore = "needs a browser: apt-get install chromium chromium-driver, then ENGRAM_TEST_BROWSER=1 cargo test"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_forgets_an_entry_in_a_real_browser() {
    use fantoccini::Locator;
    let h = Harness::offline().await;
    h.dm("alice", "remember that I love green tea").await;
    h.dm("alice", "remember that I live in Lisbon").await;
    h.say_in(&group("acme"), "alice", "morning everyone").await;
    h.say_in(&group("acme"), "bob", "morning alice").await;
    let (base, stop) = serve_admin(&h).await;
    let b = Browser::start().await;
    let c = &b.client;

    // Without a session the page is the login form (a 401).
    c.goto(&format!("{base}/admin")).await.unwrap();
    b.shot("login").await;
    b.by_id("name").await.clear().await.unwrap();
    b.by_id("name").await.send_keys("ops").await.unwrap();
    b.by_id("token").await.send_keys(TOKEN).await.unwrap();
    b.by_id("sign-in").await.click().await.unwrap();
    c.wait().for_element(Locator::Id("people-q")).await.unwrap();
    let source = c.source().await.unwrap();
    assert!(source.contains("signed in as ops"), "{source}");
    assert!(source.contains("<svg"), "the charts are drawn");
    b.shot("overview").await;

    // Find Alice and open her page.
    b.by_id("people-q").await.send_keys("ali").await.unwrap();
    b.by_id("find-people").await.click().await.unwrap();
    let link = c
        .wait()
        .for_element(Locator::LinkText("alice"))
        .await
        .unwrap();
    b.shot("people").await;
    link.click().await.unwrap();
    c.wait().for_element(Locator::Id("entries")).await.unwrap();
    let text = c
        .find(Locator::Id("entries"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("I love green tea") && text.contains("I live in Lisbon"),
        "{text}"
    );
    b.shot("person").await;

    // Forget the green tea.
    let rows = c.find_all(Locator::Css("tr.entry")).await.unwrap();
    let mut forgot = false;
    for row in rows {
        if row.text().await.unwrap().contains("green tea") {
            row.find(Locator::Css("button.forget"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            forgot = true;
            break;
        }
    }
    assert!(forgot, "a forget button on the entry's row");
    c.wait().for_element(Locator::Id("notice")).await.unwrap();
    let text = c
        .find(Locator::Id("entries"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!text.contains("green tea"), "{text}");
    assert!(
        text.contains("I live in Lisbon"),
        "the other entry stays: {text}"
    );
    b.shot("person-after-forget").await;

    // The chat no longer knows it.
    let view = h.dm("alice", "/memory").await;
    assert!(
        !view.contains("green tea") && view.contains("Lisbon"),
        "{view}"
    );

    // The other pages, for the record.
    b.by_id("clear").await.click().await.unwrap();
    c.wait()
        .for_element(Locator::Id("confirm-clear"))
        .await
        .unwrap();
    b.shot("clear-confirmation").await;
    for (path, name) in [("audit", "audit"), ("jobs", "jobs"), ("spaces", "spaces")] {
        c.goto(&format!("{base}/admin/{path}")).await.unwrap();
        c.wait().for_element(Locator::Css("table")).await.unwrap();
        b.shot(name).await;
    }
    c.goto(&format!("{base}/admin/audit")).await.unwrap();
    let log = c
        .find(Locator::Id("audit"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(log.contains("admin:ops") && log.contains("delete"), "{log}");
    b.client.clone().close().await.unwrap();
    let _ = stop.send(true);
}

/// What the server sends on `stream` until `needle` comes or it closes the connection, within
/// 30 s (a server that neither answers nor closes fails the test).
async fn heard(stream: &mut tokio::net::TcpStream, needle: Option<&str>) -> String {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let read = async {
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
            if needle.is_some_and(|n| String::from_utf8_lossy(&got).contains(n)) {
                return;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), read)
        .await
        .expect("the server answers or closes the connection");
    String::from_utf8_lossy(&got).into_owned()
}

/// A client slow on purpose holds nothing: request headers that never end, and a connection
/// left idle, are closed after `server.header_timeout_secs`; a body that never ends gets 408
/// after `server.request_timeout_secs` (the login form reads its body before any check).
#[tokio::test]
async fn slow_clients_are_cut_off() {
    use tokio::io::AsyncWriteExt;
    let h = Harness::build(false, |c| {
        c.server.header_timeout_secs = 0.5;
        c.server.request_timeout_secs = 0.5;
    })
    .await;
    let (base, stop) = serve_admin(&h).await;
    let addr = base.trim_start_matches("http://");
    let connect = || tokio::net::TcpStream::connect(addr);
    let mut partial = connect().await.unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut idle = connect().await.unwrap();
    let mut slow = connect().await.unwrap();
    slow.write_all(
        b"POST /admin/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
          Content-Length: 100\r\n\r\ntoken=abc",
    )
    .await
    .unwrap();
    // Positive control: a whole request beside them is answered.
    let mut whole = connect().await.unwrap();
    whole
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let answered = heard(&mut whole, Some("ok\n")).await;
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert!(!heard(&mut partial, None).await.contains("200"));
    heard(&mut idle, None).await;
    let said = heard(&mut slow, Some("\r\n\r\n")).await;
    assert!(said.starts_with("HTTP/1.1 408"), "{said}");
    let _ = stop.send(true);
}

/// An address that shows `server.wrong_secrets` wrong secrets (bearer tokens, the login
/// form) is refused with 429 for every request that shows one, the right token included;
/// before that the right token works and costs no try, a request without a secret (the login
/// page, health) is still answered, and another address with the right token is let in.
#[tokio::test]
async fn an_address_that_guesses_is_refused_for_a_while() {
    let h = Harness::build(false, |c| c.server.wrong_secrets = 3).await;
    let (base, stop) = serve_admin(&h).await;
    let wrong = "admin-token-0123456789abcdeX";
    let login = |token: &'static str| {
        let base = base.clone();
        async move {
            client()
                .post(format!("{base}/admin/login"))
                .form(&[("name", "ops"), ("token", token)])
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    for _ in 0..3 {
        let (code, _) = send(&base, "GET", "/admin", Cred::Bearer(TOKEN), &[]).await;
        assert_eq!(code, StatusCode::OK, "the right token costs no try");
    }
    for _ in 0..2 {
        let (code, _) = send(&base, "GET", "/admin", Cred::Bearer(wrong), &[]).await;
        assert_eq!(code, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(login(wrong).await, StatusCode::UNAUTHORIZED, "the third");
    let (code, body) = send(&base, "GET", "/admin", Cred::Bearer(TOKEN), &[]).await;
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(!body.to_lowercase().contains("admin-token"), "{body}");
    assert_eq!(login(TOKEN).await, StatusCode::TOO_MANY_REQUESTS);
    for path in ["/admin/login", "/healthz"] {
        let (code, _) = send(&base, "GET", path, Cred::None, &[]).await;
        assert_eq!(code, StatusCode::OK, "{path} shows no secret");
    }
    let elsewhere = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    let res = elsewhere
        .get(format!("{base}/admin"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "another address");
    let _ = stop.send(true);
}

/// Past `server.max_connections`, a connection is closed as it comes, unanswered; the ones
/// open are served.
#[tokio::test]
async fn connections_past_the_limit_are_closed() {
    use tokio::io::AsyncWriteExt;
    let h = Harness::build(false, |c| c.server.max_connections = 2).await;
    let (base, stop) = serve_admin(&h).await;
    let addr = base.trim_start_matches("http://");
    let connect = || tokio::net::TcpStream::connect(addr);
    let idle = connect().await.unwrap();
    let mut open = connect().await.unwrap();
    let ask = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    open.write_all(ask).await.unwrap();
    let answered = heard(&mut open, Some("ok\n")).await;
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    let mut third = connect().await.unwrap();
    // Written before the close is seen, or refused by then: either way no answer comes.
    let _ = third.write_all(ask).await;
    assert_eq!(heard(&mut third, Some("ok\n")).await, "");
    // The second connection is still served (keep-alive).
    open.write_all(ask).await.unwrap();
    let again = heard(&mut open, Some("ok\n")).await;
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    // A closed connection frees its place: a new one is served once the server has seen
    // it close (each try before that is closed unanswered).
    drop(idle);
    let freed = async {
        loop {
            let mut next = connect().await.unwrap();
            if next.write_all(ask).await.is_ok() {
                let said = heard(&mut next, Some("ok\n")).await;
                if said.starts_with("HTTP/1.1 200") {
                    return;
                }
                assert_eq!(said, "", "closed unanswered, or served");
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), freed)
        .await
        .expect("the closed connection's place is free again");
    let _ = stop.send(true);
}

/// A client that sends requests and reads nothing of the answers holds its place only until
/// a write to it has stalled for `server.header_timeout_secs`.
#[tokio::test]
async fn a_client_that_never_reads_is_cut_off() {
    use tokio::io::AsyncWriteExt;
    let h = Harness::build(false, |c| c.server.header_timeout_secs = 0.5).await;
    let (base, stop) = serve_admin(&h).await;
    let addr = base.trim_start_matches("http://");
    let mut greedy = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Far more answers than the socket buffers hold; the writes themselves fail once the
    // server gives up, which ends the loop early.
    let ask: Vec<u8> = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(2_000);
    let sent = async {
        for _ in 0..200 {
            if greedy.write_all(&ask).await.is_err() {
                return;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), sent)
        .await
        .expect("the server closes the connection, so writing to it stops");
    // The answers that were buffered come, then the end: the connection is closed.
    heard(&mut greedy, None).await;
    let _ = stop.send(true);
}
