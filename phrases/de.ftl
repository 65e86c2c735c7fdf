# Was der Bot auf Deutsch sagt (Fluent-Syntax). Was hier fehlt, sagt er auf Englisch (en.ftl).

help =
    Ich merke mir, was mir die Leute hier erzählen. Probier:
    merk dir, dass ich Rust mag
    vergiss, dass ich Rust mag
    /memory, /memory search <Wörter>, /memory forget <Thema>,
    /memory pause, /memory resume, /memory clear, /memory export
    Alles andere ist Unterhaltung.
store-failed = Bei mir ist etwas schiefgegangen; deine Nachricht ist gespeichert, aber ich konnte nichts damit tun. Bitte versuch es noch einmal.
already-knew = Das wusste ich schon.
paused = Gedächtnis pausiert: Nichts Neues über dich wird gesammelt oder geschrieben, weder von mir noch von jemandem, der mir von dir erzählt. Was ich schon weiß, bleibt, bis du es entfernst. Sag „/memory resume“, um es wieder einzuschalten.
resumed = Das Gedächtnis ist wieder an.
clear-ask = Das entfernt alles, was ich über dich habe, überall: deine MEMORY.md-Einträge und ihren Verlauf, Tagesnotizen, was ich über dich weiß, was andere mir über dich und du mir über andere erzählt habt, und jede deiner Nachrichten, die ich behalten habe, mit meinen Antworten (die Plattform hat ihre eigene Kopie). Antworte „ja“ zum Bestätigen oder „nein“, um es zu behalten.
cleared = Erledigt, ich habe alles gelöscht, was ich über dich hatte.
forget-what = Was vergessen? Probier „/memory forget <Thema>“.
nothing-changed = OK, nichts wurde geändert.
too-fast = Ich bekomme gerade mehr Nachrichten, als ich beantworten kann. Deine ist gespeichert; frag mich in etwa { $seconds } Sekunden noch einmal.
budget-spent = Hier ist das heutige Budget meines Sprachmodells aufgebraucht, ich kann also erst nach Mitternacht UTC wieder plaudern. Deine Nachricht ist gespeichert, und „merk dir“ und „vergiss“ funktionieren weiter.
addressed-only = Ja? Sag „{ $bot } help“, um zu sehen, was ich kann.
known-everywhere = { $said } Ich weiß es überall, in jeder Gruppe und jedem privaten Chat („/memory unshare“ nimmt es zurück).
capture-paused = Dein Gedächtnis ist pausiert, also habe ich das nicht gespeichert. Sag „/memory resume“, um es wieder einzuschalten.
capture-too-long = Das ist zu lang zum Merken (höchstens { $limit } Zeichen). Nichts wurde geändert.
captured-word-for-word = Alles klar, ich merke mir das (wörtlich: mein Sprachmodell ist nicht erreichbar).
captured = Alles klar, ich merke mir das.
told-private = Alles klar, ich behalte das als das, was du mir über { $name } erzählt hast, nur hier in unserem privaten Chat.
told-public = Alles klar, ich behalte das als das, was du mir über { $name } erzählt hast. { $name } kann es sehen und entfernen.
forgotten = Erledigt, das habe ich vergessen.
forget-not-found = Das habe ich in meinem Wissen nicht gefunden, also hat sich nichts geändert.
forget-not-found-offline = Diesen Wortlaut habe ich nicht gefunden, also hat sich nichts geändert. Versuch es mit genau den Worten, mit denen du es mir gesagt hast.
forgot-everything-none = Ich hatte hier nichts über { $who }, also hat sich nichts geändert.
forgot-everything = Erledigt, ich habe alles über { $who } vergessen, was ich hier behalte.
you = dich
recall-nothing = Ich weiß noch nichts über { $who }.
recall = Das weiß ich über { $who }:
    { $memory }
confirm-changes =
    { $text }

    Bevor ich dein Gedächtnis ändere: Soll ich
    { $list }
    Antworte „ja“, um es zu tun, oder „nein“, um alles so zu lassen.
memory-told-heading = Was andere mir über dich erzählt haben
memory-told-note = (Ihre Worte, nicht deine: „/memory forget <Wörter>“ entfernt eines.)
memory-paused-note = (Das Gedächtnis ist pausiert: Nichts Neues wird gesammelt. /memory resume schaltet es wieder ein.)
memory-empty = Ich habe keine Notizen über dich, die ich hier zeigen darf.
memory-only-here = (Nur was in diesem Kanal gezeigt werden darf; frag mich im privaten Chat nach allem.)
nothing-to-forget = Ich habe nichts zu „{ $topic }“, das ich hier zeigen darf, also hat sich nichts geändert.
forget-ask =
    Das passt:
    { $list }
    Antworte „ja“, um es zu vergessen, oder „nein“, um es zu behalten.
someone-says = { $by } sagt: { $text }
forgot-entries = Erledigt, ich habe { $n } { $n ->
        [one] Eintrag
       *[other] Einträge
    } vergessen.
changed-entries = Erledigt: { $n } { $n ->
        [one] Eintrag
       *[other] Einträge
    } geändert.
search-nothing = Nichts in deinem Gedächtnis passt zu „{ $query }“.
lapsed = Das habe ich vor mehr als { $minutes } Minuten gefragt, die Frage ist abgelaufen und nichts wurde geändert; frag mich noch einmal, wenn du es noch willst.
remember-what = Was merken? Sag es nach dem Befehl, z. B. „merk dir, dass ich Rust mag“.
forget-what-fact = Was vergessen? Sag es nach dem Befehl, z. B. „vergiss, dass ich Rust mag“.
capture-what = Was merken? Sag es nach der Phrase, z. B. „merk dir, dass ich kurze Antworten mag“.
busy = Das Gedächtnis ist gerade mit anderen Änderungen beschäftigt; bitte versuch es noch einmal.
no-model =
    Ich habe kein Sprachmodell eingerichtet und kann deshalb noch nicht plaudern (setze llm.base_url). Das ist das Gedächtnis, das ich benutzt hätte ({ $tokens } von { $budget } Tokens):

    { $memory }
model-failing =
    Mein Sprachmodell hat gerade Probleme, also hier, woran ich mich erinnere:

    { $memory }
model-unreachable =
    Ich konnte mein Sprachmodell nicht erreichen, also hier, woran ich mich erinnere:

    { $memory }
