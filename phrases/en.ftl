# What the bot says in English: every fixed text of the chat (confirmations, refusals, help,
# errors), in Fluent's syntax (https://projectfluent.org). English is the fallback: a message a
# language's file lacks is said in English. Variables ($name) are filled by the bot; lists
# ($list) come one item per line.

help =
    I remember things about the people here. Try:
    remember that I love Rust
    remember this about @bob: he plays chess (kept as what you told me)
    forget that I love Rust
    forget everything about me
    what do you know about me / about @bob
    note that / keep in mind … (goes into your MEMORY.md)
    remember everywhere that … (known in every group and chat; /memory unshare <words> undoes)
    /memory, /memory search <words>, /memory forget <topic>,
    /memory pause, /memory resume, /memory clear, /memory export,
    /memory share <words>, /memory unshare <words>
    /memory link (join your Discord and Telegram memory), /memory links, /memory unlink
    Anything else is conversation.
store-failed = Something went wrong on my side; your message is saved, but I couldn't act on it. Please try again.
slash-nothing = Nothing to do.
not-stored = Something went wrong on my side and I could not keep your request; please try again.
already-knew = I already knew that.
everywhere-only-about-oneself = Only the person a fact is about can have it known everywhere, and it may be about no one else, so I kept nothing. Without "everywhere" I keep it where you said it.
paused = Memory paused: nothing new about you is collected, summarized, extracted or written, by me or by anyone telling me about you. What I already know stays until you remove it. Say "/memory resume" to turn it back on.
resumed = Memory is back on.
clear-ask = This removes everything I have about you, everywhere: your MEMORY.md entries and their history, daily notes, what I know about you (with its history), what others told me about you and what you told me about others, and every message of yours I kept, with my replies to them (the platform keeps its own copy). Reply "yes" to confirm or "no" to keep it.
cleared = Done, I've cleared everything I had about you.
forget-what = Forget what? Try "/memory forget <topic>".
nothing-changed = OK, nothing was changed.
share-paused = Your memory is paused, so I'm not changing where it is known. Say "/memory resume" first.
share-mentions-someone = That entry mentions someone else, and what is known everywhere may only be about you, so I left it where it is.
not-linked = This account is not linked to another one.
nothing-unlinked = This account is not linked to another one, so nothing changed.
too-fast = I'm getting more messages than I can answer right now. Yours is saved; ask me again in about { $seconds } seconds.
budget-spent = This place has used today's budget for my language model, so I can't chat until midnight UTC. Your message is saved, and remember/forget still work.
addressed-only = Yes? Say "{ $bot } help" to see what I can do.
too-long-to-act = That message is too long for me to act on ({ $len } characters; the limit is { $limit }). I kept it in the chat history, but did nothing else with it.
known-everywhere = { $said } I'll know it everywhere, in every group and private chat ("/memory unshare" takes it back).
never-kept-code = I don't keep code in memory; tell me about it in words instead.
never-kept-password = That looks like a password or PIN, and I never keep those, so I didn't save it. I also left it out of the chat history I keep; you may want to delete your message and change it.
never-kept-key = That looks like an API key or access token, and I never keep those, so I didn't save it. I also left it out of the chat history I keep; you may want to delete your message and revoke the key.
never-kept-card = That looks like a card number, and I never keep those, so I didn't save it. I also left it out of the chat history I keep; you may want to delete your message.
capture-paused = Your memory is paused, so I didn't save that. Say "/memory resume" to turn it back on.
capture-too-long = That is too long to remember (the limit is { $limit } characters). Nothing was changed.
captured-word-for-word = Got it, I'll remember that (noted word for word: my language model is not available).
captured = Got it, I'll remember that.
told-private = Got it, I'll keep that as what you told me about { $name }, here in our private chat only.
told-public = Got it, I'll keep that as what you told me about { $name }. { $name } can see it and remove it.
forgotten = Done, I've forgotten that.
forget-not-found = I didn't find that in what I know, so nothing changed.
forget-not-found-offline = I didn't find that wording in what I know, so nothing changed. Try the exact words you used when you told me.
forgot-everything-none = I had nothing about { $who } here, so nothing changed.
forgot-everything = Done, I've forgotten everything about { $who } that I keep here.
# "you" in "forget everything about you" and "what do you know about you".
you = you
recall-nothing = I don't know anything about { $who } yet.
recall = Here's what I know about { $who }:
    { $memory }
confirm-changes =
    { $text }

    Before I change your memory: should I
    { $list }
    Reply "yes" to do it or "no" to keep it as it is.
# The headings of MEMORY.md as /memory shows it (/memory export keeps the file's own).
memory-title = User Memory
category-preference = User Preferences
category-work_context = Work Context
category-personal_context = Personal Context
category-reading_history = Reading History
memory-key-facts = Key Facts
# An offline answer's memory (the labels of each person's part).
memory-about = About { $name }:
memory-notes-about = Notes about { $name }:
memory-nobody-yet = (no memory about anyone here yet)
memory-facts = Facts
memory-today = Today
memory-earlier = Earlier this week
memory-told-heading = What others told me about you
memory-told-note = (Their words, not yours: "/memory forget <words>" removes one.)
memory-paused-note = (Memory is paused: nothing new is collected. /memory resume turns it back on.)
memory-empty = I have no notes about you that I may show here.
memory-only-here = (Only what may be shown in this channel; ask me in a private chat for all of it.)
nothing-to-forget = I have nothing about "{ $topic }" that I may show here, so nothing changed.
forget-ask =
    This matches:
    { $list }
    Reply "yes" to forget it, or "no" to keep it.
someone-says = { $by } says: { $text }
forgot-entries = Done, I've forgotten { $n } { $n ->
        [one] entry
       *[other] entries
    }.
changed-entries = Done: { $n } { $n ->
        [one] entry
       *[other] entries
    } changed.
search-nothing = Nothing in your memory matches "{ $query }".
unknown-memory-command = I don't know "/memory { $word }". Try /memory, /memory search <words>, /memory forget <topic>, /memory pause, /memory resume, /memory clear, /memory export, /memory share <words>, /memory unshare <words>, /memory link, /memory links or /memory unlink.
which-entry-share = Which entry? Try "/memory share <words of the entry>".
which-entry-unshare = Which entry? Try "/memory unshare <words of the entry>".
no-entry-to-share = None of your entries that I may show here has all of "{ $words }" (and is not shared already).
no-entry-to-unshare = None of your shared entries has all of "{ $words }".
several-entries =
    Several entries match; say which one with more of its words:
    { $list }
share-ask = Share "{ $value }" (learned in { $learned }) everywhere, in every group and private chat where I am? Reply "yes" to share it or "no" to keep it where it is.
moved-gone = That entry is gone meanwhile, so nothing changed.
shared = Shared: I'll know "{ $value }" everywhere, in every group and private chat. "/memory unshare" takes it back.
unshared = Unshared: "{ $value }" is no longer known everywhere, only in our private chat.
unshared-not-found = Unshared: the entry "{ $value }" is known only in our private chat now, but I couldn't find those words in what I know about you everywhere; if I say it elsewhere, tell me "forget that …" there.
unshared-failed = Unshared: the entry "{ $value }" is known only in our private chat now, but I couldn't update what I know about you everywhere; try "/memory unshare" again later.
lapsed = I asked that more than { $minutes } minutes ago, so it has lapsed and nothing was changed; ask me again if you still want it.
lapsed-forgotten = Something in your memory was forgotten since I asked, so that has lapsed and nothing was changed; ask me again if you still want it.
code-posted-here = I won't use a code posted here: anyone could have seen it, so it no longer works. Make a new one with "/memory link" in a private chat.
link-in-private = Ask me for a link code in a private chat: anyone who sees a code can use it.
links-in-private = Ask me in a private chat: linked accounts are listed and unlinked only there, where nobody else sees them.
link-code = Your link code is { $code }. Within { $minutes } minutes, send "/memory link { $code }" to me in a private chat on your other platform (Discord or Telegram). It works once; that account then shares your memory from here: what you told me in private and what I know about you everywhere. Never post it anywhere else.
too-many-tries = Too many wrong codes. Wait { $minutes } minutes, then make a new code on the other platform.
code-unknown = That code is unknown or has expired. Make a new one with "/memory link" on the other platform.
same-platform = That code was made on this platform: use it on the other one.
already-linked = This account is already linked to that one.
link-ask = This joins this { $platform } account ({ $name }, id { $id }) with { $others }: your private memory and what I know about you everywhere will be shared between them. Only say yes if that is your own account. Reply "yes" to link them or "no" to cancel.
linked = Linked: this { $platform } account now shares your memory. "/memory links" lists the accounts, "/memory unlink" undoes it.
code-expired = That code has expired meanwhile. Make a new one with "/memory link" on the other platform.
links =
    These accounts share your memory:
    { $list }
    "/memory unlink" separates them ("/memory unlink discord" or "/memory unlink telegram" cuts that one).
not-a-platform = "{ $which }" is not a platform: say "/memory unlink discord" or "/memory unlink telegram".
unlinked = Unlinked: { $names } has its own memory again.
# Joins the accounts cut off by /memory unlink: "Alice on discord and Al on telegram".
and = and
remember-what = Remember what? Say it after the command, e.g. "remember that I love Rust".
forget-what-fact = Forget what? Say it after the command, e.g. "forget that I love Rust".
capture-what = Remember what? Say it after the phrase, e.g. "remember that I prefer short answers".
fact-too-long-remember = That is too long to remember as a fact ({ $len } characters; the limit is { $limit }). Nothing was changed.
fact-too-long-forget = That is too long to forget as a fact ({ $len } characters; the limit is { $limit }). Nothing was changed.
facts-full = I already keep a lot about { $subject } here ({ $limit } characters at most). Ask me to forget something first; nothing was changed.
not-theirs = Only { $subject } (or a moderator) can make me forget things about { $subject }; you can take back only what you told me yourself. Nothing was changed.
subject-paused = { $subject } has paused their memory, so I'm not keeping anything new about them. Nothing was changed.
unknown-person = I don't know anyone called { $name } here yet. Nothing was changed.
ambiguous-person = More than one person here goes by { $name }: { $candidates }. Mention the one you mean with @ (or reply to their message). Nothing was changed.
busy = Memory is busy with other updates right now; please try again.
no-model =
    I have no language model configured, so I can't chat yet (set llm.base_url). Here is the memory I would have used ({ $tokens } tokens of { $budget }):

    { $memory }
model-failing =
    My language model is failing right now, so here is what I remember instead:

    { $memory }
model-unreachable =
    I couldn't reach my language model, so here is what I remember instead:

    { $memory }

# Command menus (Telegram's menu, Discord's slash command), one per language the client uses.
# Discord allows 100 characters in each.
menu-help = What I can do
menu-memory = Your memory: /memory, search, forget, pause, resume, clear, export, share, unshare
menu-link = Join your Discord and Telegram memory: /link or /link CODE
menu-unlink = Separate this Telegram account's memory again
slash-memory = What I remember about you (only you see the answer)
slash-memory-request = empty to view; or: search, forget, pause, resume, clear, export, share, unshare, link, unlink
