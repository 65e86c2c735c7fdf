# Was der Bot auf Deutsch sagt (Fluent-Syntax). Was hier fehlt, sagt er auf Englisch (en.ftl).

help =
    Ich merke mir, was mir die Leute hier erzählen. Probier:
    merk dir, dass ich Rust mag
    vergiss, dass ich Rust mag
    /memory, /memory search <Wörter>, /memory forget <Thema>,
    /memory pause, /memory resume, /memory clear, /memory export
    Alles andere ist Unterhaltung.
store-failed = Bei mir ist etwas schiefgegangen; deine Nachricht ist gespeichert, aber ich konnte nichts damit tun. Bitte versuch es noch einmal.
slash-nothing = Nichts zu tun.
not-stored = Bei mir ist etwas schiefgegangen, und ich konnte deine Anfrage nicht speichern; bitte versuch es noch einmal.
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
memory-title = Gedächtnis
category-preference = Vorlieben
category-work_context = Arbeit
category-personal_context = Persönliches
category-reading_history = Gelesenes
memory-key-facts = Wichtige Fakten
memory-about = Über { $name }:
memory-notes-about = Notizen über { $name }:
memory-nobody-yet = (hier noch keine Erinnerungen an jemanden)
memory-facts = Fakten
memory-today = Heute
memory-earlier = Zuvor in dieser Woche
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
lapsed-forgotten = Seit ich gefragt habe, wurde etwas aus deinem Gedächtnis vergessen, die Frage ist also abgelaufen und nichts wurde geändert; frag mich noch einmal, wenn du es noch willst.
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

# Sharing, linking and the rarer refusals.
everywhere-only-about-oneself = Nur die Person, um die es in einem Fakt geht, kann ihn überall bekannt machen, und er darf niemand anderen betreffen, also habe ich nichts behalten. Ohne „überall“ behalte ich ihn dort, wo du ihn gesagt hast.
share-paused = Dein Gedächtnis ist pausiert, also ändere ich nicht, wo es bekannt ist. Sag zuerst „/memory resume“.
share-mentions-someone = Dieser Eintrag erwähnt jemand anderen, und was überall bekannt ist, darf nur dich betreffen, also habe ich ihn gelassen, wo er ist.
not-linked = Dieses Konto ist mit keinem anderen verknüpft.
nothing-unlinked = Dieses Konto ist mit keinem anderen verknüpft, also hat sich nichts geändert.
too-long-to-act = Diese Nachricht ist zu lang, als dass ich etwas damit tun könnte ({ $len } Zeichen; die Grenze ist { $limit }). Ich habe sie im Chatverlauf behalten, aber sonst nichts damit gemacht.
never-kept-code = Ich behalte keinen Code im Gedächtnis; beschreib ihn mir lieber in Worten.
never-kept-password = Das sieht nach einem Passwort oder einer PIN aus, und so etwas behalte ich nie, also habe ich es nicht gespeichert. Auch aus dem Chatverlauf, den ich behalte, habe ich es herausgelassen; vielleicht willst du deine Nachricht löschen und es ändern.
never-kept-key = Das sieht nach einem API-Schlüssel oder Zugriffstoken aus, und so etwas behalte ich nie, also habe ich es nicht gespeichert. Auch aus dem Chatverlauf, den ich behalte, habe ich es herausgelassen; vielleicht willst du deine Nachricht löschen und den Schlüssel widerrufen.
never-kept-card = Das sieht nach einer Kartennummer aus, und so etwas behalte ich nie, also habe ich es nicht gespeichert. Auch aus dem Chatverlauf, den ich behalte, habe ich es herausgelassen; vielleicht willst du deine Nachricht löschen.
unknown-memory-command = „/memory { $word }“ kenne ich nicht. Probier /memory, /memory search <Wörter>, /memory forget <Thema>, /memory pause, /memory resume, /memory clear, /memory export, /memory share <Wörter>, /memory unshare <Wörter>, /memory link, /memory links oder /memory unlink.
which-entry-share = Welcher Eintrag? Probier „/memory share <Wörter des Eintrags>“.
which-entry-unshare = Welcher Eintrag? Probier „/memory unshare <Wörter des Eintrags>“.
no-entry-to-share = Keiner deiner Einträge, die ich hier zeigen darf (und die noch nicht geteilt sind), enthält alle Wörter von „{ $words }“.
no-entry-to-unshare = Keiner deiner geteilten Einträge enthält alle Wörter von „{ $words }“.
several-entries =
    Mehrere Einträge passen; sag mit mehr seiner Wörter, welchen du meinst:
    { $list }
share-ask = „{ $value }“ (erfahren in: { $learned }) überall teilen, in jeder Gruppe und jedem privaten Chat, in dem ich bin? Antworte „ja“, um es zu teilen, oder „nein“, um es zu lassen, wo es ist.
moved-gone = Dieser Eintrag ist inzwischen weg, also hat sich nichts geändert.
shared = Geteilt: Ich weiß „{ $value }“ jetzt überall, in jeder Gruppe und jedem privaten Chat. „/memory unshare“ nimmt es zurück.
unshared = Nicht mehr geteilt: „{ $value }“ ist nicht mehr überall bekannt, nur noch in unserem privaten Chat.
unshared-not-found = Nicht mehr geteilt: Der Eintrag „{ $value }“ ist jetzt nur noch in unserem privaten Chat bekannt, aber ich konnte diese Wörter nicht in dem finden, was ich überall über dich weiß; wenn ich es anderswo sage, sag mir dort „vergiss, dass …“.
unshared-failed = Nicht mehr geteilt: Der Eintrag „{ $value }“ ist jetzt nur noch in unserem privaten Chat bekannt, aber ich konnte nicht aktualisieren, was ich überall über dich weiß; versuch „/memory unshare“ später noch einmal.
code-posted-here = Einen hier geposteten Code verwende ich nicht: Jeder könnte ihn gesehen haben, deshalb gilt er nicht mehr. Erstell einen neuen mit „/memory link“ in einem privaten Chat.
link-in-private = Frag mich in einem privaten Chat nach einem Verknüpfungscode: Jeder, der einen Code sieht, kann ihn benutzen.
links-in-private = Frag mich in einem privaten Chat: Verknüpfte Konten zeige und trenne ich nur dort, wo niemand sonst sie sieht.
link-code = Dein Verknüpfungscode ist { $code }. Schick mir innerhalb von { $minutes } Minuten „/memory link { $code }“ in einem privaten Chat auf deiner anderen Plattform (Discord oder Telegram). Er funktioniert einmal; danach teilt das andere Konto dein Gedächtnis von hier: was du mir privat erzählt hast und was ich überall über dich weiß. Poste ihn nirgendwo sonst.
too-many-tries = Zu viele falsche Codes. Warte { $minutes } Minuten und erstell dann einen neuen Code auf der anderen Plattform.
code-unknown = Dieser Code ist unbekannt oder abgelaufen. Erstell einen neuen mit „/memory link“ auf der anderen Plattform.
same-platform = Dieser Code wurde auf dieser Plattform erstellt: Benutz ihn auf der anderen.
already-linked = Dieses Konto ist schon mit jenem verknüpft.
link-ask = Das verbindet dieses { $platform }-Konto ({ $name }, ID { $id }) mit { $others }: Dein privates Gedächtnis und was ich überall über dich weiß, werden zwischen ihnen geteilt. Sag nur ja, wenn das dein eigenes Konto ist. Antworte „ja“, um sie zu verknüpfen, oder „nein“, um abzubrechen.
linked = Verknüpft: Dieses { $platform }-Konto teilt jetzt dein Gedächtnis. „/memory links“ listet die Konten auf, „/memory unlink“ macht es rückgängig.
code-expired = Dieser Code ist inzwischen abgelaufen. Erstell einen neuen mit „/memory link“ auf der anderen Plattform.
links =
    Diese Konten teilen dein Gedächtnis:
    { $list }
    „/memory unlink“ trennt sie („/memory unlink discord“ oder „/memory unlink telegram“ trennt nur das Konto dieser Plattform ab).
not-a-platform = „{ $which }“ ist keine Plattform: Sag „/memory unlink discord“ oder „/memory unlink telegram“.
unlinked = Getrennt: { $names } – wieder mit eigenem Gedächtnis.
and = und
fact-too-long-remember = Das ist zu lang, um es mir als Fakt zu merken ({ $len } Zeichen; die Grenze ist { $limit }). Nichts wurde geändert.
fact-too-long-forget = Das ist zu lang, um es als Fakt zu vergessen ({ $len } Zeichen; die Grenze ist { $limit }). Nichts wurde geändert.
facts-full = Ich behalte hier schon viel über { $subject } (höchstens { $limit } Zeichen). Bitte mich zuerst, etwas zu vergessen; nichts wurde geändert.
not-theirs = Nur { $subject } (oder ein Moderator) kann mich Dinge über { $subject } vergessen lassen; du kannst nur zurücknehmen, was du mir selbst erzählt hast. Nichts wurde geändert.
subject-paused = { $subject } hat das eigene Gedächtnis pausiert, also behalte ich nichts Neues über diese Person. Nichts wurde geändert.
unknown-person = Ich kenne hier noch niemanden namens { $name }. Nichts wurde geändert.
ambiguous-person = Hier heißt mehr als eine Person { $name }: { $candidates }. Erwähne die gemeinte Person mit @ (oder antworte auf ihre Nachricht). Nichts wurde geändert.

menu-help = Was ich kann
menu-memory = Dein Gedächtnis: /memory, search, forget, pause, resume, clear, export, share, unshare
menu-link = Dein Discord- und Telegram-Gedächtnis verbinden: /link oder /link CODE
menu-unlink = Das Gedächtnis dieses Telegram-Kontos wieder trennen
slash-memory = Was ich über dich weiß (nur du siehst die Antwort)
slash-memory-request = leer zum Ansehen; oder: search, forget, pause, resume, clear, export, share, unshare, link
