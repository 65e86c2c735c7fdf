# Ce que dit le bot en français (syntaxe Fluent). Ce qui manque ici est dit en anglais (en.ftl).

help =
    Je retiens ce que les gens d'ici me racontent. Essaie :
    souviens-toi que j'aime Rust
    oublie que j'aime Rust
    /memory, /memory search <mots>, /memory forget <sujet>,
    /memory pause, /memory resume, /memory clear, /memory export
    Tout le reste, c'est de la conversation.
store-failed = Quelque chose s'est mal passé de mon côté ; ton message est enregistré, mais je n'ai pas pu donner suite. Réessaie, s'il te plaît.
slash-nothing = Rien à faire.
not-stored = Quelque chose s'est mal passé de mon côté et je n'ai pas pu garder ta demande ; réessaie, s'il te plaît.
already-knew = Je le savais déjà.
paused = Mémoire en pause : rien de nouveau sur toi n'est collecté ni écrit, ni par moi ni par quelqu'un qui me parle de toi. Ce que je sais déjà reste jusqu'à ce que tu le supprimes. Dis « /memory resume » pour la réactiver.
resumed = La mémoire est de nouveau active.
clear-ask = Cela supprime tout ce que j'ai sur toi, partout : tes entrées MEMORY.md et leur historique, les notes du jour, ce que je sais de toi, ce que d'autres m'ont dit de toi et toi des autres, et chacun de tes messages que j'ai gardés, avec mes réponses (la plateforme garde sa propre copie). Réponds « oui » pour confirmer ou « non » pour tout garder.
cleared = C'est fait, j'ai effacé tout ce que j'avais sur toi.
forget-what = Oublier quoi ? Essaie « /memory forget <sujet> ».
nothing-changed = D'accord, rien n'a changé.
too-fast = Je reçois plus de messages que je ne peux en traiter. Le tien est enregistré ; redemande-moi dans environ { $seconds } secondes.
budget-spent = Le budget du jour de mon modèle de langage est épuisé ici, je ne pourrai donc discuter qu'après minuit UTC. Ton message est enregistré, et « souviens-toi » et « oublie » fonctionnent toujours.
addressed-only = Oui ? Dis « { $bot } help » pour voir ce que je sais faire.
known-everywhere = { $said } Je le saurai partout, dans chaque groupe et conversation privée (« /memory unshare » l'annule).
capture-paused = Ta mémoire est en pause, donc je ne l'ai pas enregistré. Dis « /memory resume » pour la réactiver.
capture-too-long = C'est trop long à retenir (la limite est de { $limit } caractères). Rien n'a changé.
captured-word-for-word = Compris, je m'en souviendrai (mot pour mot : mon modèle de langage n'est pas disponible).
captured = Compris, je m'en souviendrai.
told-private = Compris, je garde ça comme ce que tu m'as dit sur { $name }, seulement dans notre conversation privée.
told-public = Compris, je garde ça comme ce que tu m'as dit sur { $name }. { $name } peut le voir et le supprimer.
forgotten = C'est fait, je l'ai oublié.
forget-not-found = Je n'ai pas trouvé ça dans ce que je sais, donc rien n'a changé.
forget-not-found-offline = Je n'ai pas trouvé cette formulation dans ce que je sais, donc rien n'a changé. Essaie avec les mots exacts que tu as utilisés.
forgot-everything-none = Je n'avais rien sur { $who } ici, donc rien n'a changé.
forgot-everything = C'est fait, j'ai oublié tout ce que je garde ici sur { $who }.
you = toi
recall-nothing = Je ne sais encore rien sur { $who }.
recall = Voici ce que je sais sur { $who } :
    { $memory }
confirm-changes =
    { $text }

    Avant de modifier ta mémoire : dois-je
    { $list }
    Réponds « oui » pour le faire ou « non » pour tout laisser tel quel.
memory-title = Mémoire
category-preference = Préférences
category-work_context = Travail
category-personal_context = Vie personnelle
category-reading_history = Lectures
memory-key-facts = Faits clés
memory-about = À propos de { $name } :
memory-notes-about = Notes sur { $name } :
memory-nobody-yet = (je n'ai encore de mémoire sur personne ici)
memory-facts = Faits
memory-today = Aujourd'hui
memory-earlier = Plus tôt cette semaine
memory-told-heading = Ce que d'autres m'ont dit sur toi
memory-told-note = (Leurs mots, pas les tiens : « /memory forget <mots> » en supprime un.)
memory-paused-note = (La mémoire est en pause : rien de nouveau n'est collecté. /memory resume la réactive.)
memory-empty = Je n'ai aucune note sur toi que je peux montrer ici.
memory-only-here = (Seulement ce qui peut être montré dans ce salon ; demande-moi en privé pour tout voir.)
nothing-to-forget = Je n'ai rien sur « { $topic } » que je peux montrer ici, donc rien n'a changé.
forget-ask =
    Cela correspond :
    { $list }
    Réponds « oui » pour l'oublier ou « non » pour le garder.
someone-says = { $by } dit : { $text }
forgot-entries = C'est fait, j'ai oublié { $n } { $n ->
        [one] entrée
       *[other] entrées
    }.
changed-entries = C'est fait : { $n } { $n ->
        [one] entrée modifiée
       *[other] entrées modifiées
    }.
search-nothing = Rien dans ta mémoire ne correspond à « { $query } ».
lapsed = J'ai posé cette question il y a plus de { $minutes } minutes, elle a expiré et rien n'a changé ; redemande-moi si tu le veux toujours.
lapsed-forgotten = Quelque chose de ta mémoire a été oublié depuis ma question, elle a donc expiré et rien n'a changé ; redemande-moi si tu le veux toujours.
remember-what = Retenir quoi ? Dis-le après la commande, par ex. « souviens-toi que j'aime Rust ».
forget-what-fact = Oublier quoi ? Dis-le après la commande, par ex. « oublie que j'aime Rust ».
capture-what = Retenir quoi ? Dis-le après la phrase, par ex. « souviens-toi que je préfère les réponses courtes ».
busy = La mémoire est occupée par d'autres modifications ; réessaie.
no-model =
    Je n'ai pas de modèle de langage configuré, donc je ne peux pas encore discuter (définis llm.base_url). Voici la mémoire que j'aurais utilisée ({ $tokens } jetons sur { $budget }) :

    { $memory }
model-failing =
    Mon modèle de langage a des problèmes en ce moment, alors voici ce dont je me souviens :

    { $memory }
model-unreachable =
    Je n'ai pas pu joindre mon modèle de langage, alors voici ce dont je me souviens :

    { $memory }

# Sharing, linking and the rarer refusals.
everywhere-only-about-oneself = Seule la personne que concerne un fait peut le rendre connu partout, et il ne peut concerner personne d'autre, donc je n'ai rien gardé. Sans « partout », je le garde là où tu l'as dit.
share-paused = Ta mémoire est en pause, donc je ne change pas l'endroit où elle est connue. Dis d'abord « /memory resume ».
share-mentions-someone = Cette entrée mentionne quelqu'un d'autre, et ce qui est connu partout ne peut concerner que toi, donc je l'ai laissée où elle est.
not-linked = Ce compte n'est lié à aucun autre.
nothing-unlinked = Ce compte n'est lié à aucun autre, donc rien n'a changé.
too-long-to-act = Ce message est trop long pour que j'y donne suite ({ $len } caractères ; la limite est de { $limit }). Je l'ai gardé dans l'historique de la conversation, mais je n'en ai rien fait d'autre.
never-kept-code = Je ne garde pas de code en mémoire ; décris-le-moi plutôt avec des mots.
never-kept-password = Ça ressemble à un mot de passe ou à un code PIN, et je n'en garde jamais, donc je ne l'ai pas enregistré. Je l'ai aussi exclu de l'historique de conversation que je garde ; tu voudras peut-être supprimer ton message et le changer.
never-kept-key = Ça ressemble à une clé d'API ou à un jeton d'accès, et je n'en garde jamais, donc je ne l'ai pas enregistré. Je l'ai aussi exclu de l'historique de conversation que je garde ; tu voudras peut-être supprimer ton message et révoquer la clé.
never-kept-card = Ça ressemble à un numéro de carte, et je n'en garde jamais, donc je ne l'ai pas enregistré. Je l'ai aussi exclu de l'historique de conversation que je garde ; tu voudras peut-être supprimer ton message.
unknown-memory-command = Je ne connais pas « /memory { $word } ». Essaie /memory, /memory search <mots>, /memory forget <sujet>, /memory pause, /memory resume, /memory clear, /memory export, /memory share <mots>, /memory unshare <mots>, /memory link, /memory links ou /memory unlink.
which-entry-share = Quelle entrée ? Essaie « /memory share <mots de l'entrée> ».
which-entry-unshare = Quelle entrée ? Essaie « /memory unshare <mots de l'entrée> ».
no-entry-to-share = Aucune de tes entrées que je peux montrer ici (et pas encore partagées) ne contient tous les mots de « { $words } ».
no-entry-to-unshare = Aucune de tes entrées partagées ne contient tous les mots de « { $words } ».
several-entries =
    Plusieurs entrées correspondent ; précise laquelle avec plus de ses mots :
    { $list }
share-ask = Partager « { $value } » (appris dans : { $learned }) partout, dans chaque groupe et conversation privée où je suis ? Réponds « oui » pour le partager ou « non » pour le laisser où il est.
moved-gone = Cette entrée a disparu entre-temps, donc rien n'a changé.
shared = Partagé : je saurai « { $value } » partout, dans chaque groupe et conversation privée. « /memory unshare » l'annule.
unshared = Plus partagé : « { $value } » n'est plus connu partout, seulement dans notre conversation privée.
unshared-not-found = Plus partagé : l'entrée « { $value } » n'est plus connue que dans notre conversation privée, mais je n'ai pas trouvé ces mots dans ce que je sais de toi partout ; si je le dis ailleurs, dis-moi là-bas « oublie que … ».
unshared-failed = Plus partagé : l'entrée « { $value } » n'est plus connue que dans notre conversation privée, mais je n'ai pas pu mettre à jour ce que je sais de toi partout ; réessaie « /memory unshare » plus tard.
code-posted-here = Je n'utiliserai pas un code publié ici : n'importe qui a pu le voir, donc il ne fonctionne plus. Crées-en un nouveau avec « /memory link » dans une conversation privée.
link-in-private = Demande-moi un code de liaison dans une conversation privée : quiconque voit un code peut l'utiliser.
links-in-private = Demande-le-moi dans une conversation privée : je n'affiche et ne délie les comptes liés que là, où personne d'autre ne les voit.
link-code = Ton code de liaison est { $code }. Dans les { $minutes } minutes, envoie-moi « /memory link { $code } » dans une conversation privée sur ton autre plateforme (Discord ou Telegram). Il ne fonctionne qu'une fois ; ce compte partagera ensuite ta mémoire d'ici : ce que tu m'as dit en privé et ce que je sais de toi partout. Ne le publie jamais ailleurs.
too-many-tries = Trop de codes erronés. Attends { $minutes } minutes, puis crée un nouveau code sur l'autre plateforme.
code-unknown = Ce code est inconnu ou a expiré. Crées-en un nouveau avec « /memory link » sur l'autre plateforme.
same-platform = Ce code a été créé sur cette plateforme : utilise-le sur l'autre.
already-linked = Ce compte est déjà lié à celui-là.
link-ask = Cela relie ce compte { $platform } ({ $name }, id { $id }) à { $others } : ta mémoire privée et ce que je sais de toi partout seront partagés entre eux. Ne dis oui que si c'est bien ton propre compte. Réponds « oui » pour les lier ou « non » pour annuler.
linked = Lié : ce compte { $platform } partage maintenant ta mémoire. « /memory links » liste les comptes, « /memory unlink » l'annule.
code-expired = Ce code a expiré entre-temps. Crées-en un nouveau avec « /memory link » sur l'autre plateforme.
links =
    Ces comptes partagent ta mémoire :
    { $list }
    « /memory unlink » les sépare (« /memory unlink discord » ou « /memory unlink telegram » détache seulement le compte de cette plateforme).
not-a-platform = « { $which } » n'est pas une plateforme : dis « /memory unlink discord » ou « /memory unlink telegram ».
unlinked = Dissocié : { $names }, de nouveau avec une mémoire à part.
and = et
fact-too-long-remember = C'est trop long pour être retenu comme un fait ({ $len } caractères ; la limite est de { $limit }). Rien n'a changé.
fact-too-long-forget = C'est trop long pour être oublié comme un fait ({ $len } caractères ; la limite est de { $limit }). Rien n'a changé.
facts-full = Je garde déjà beaucoup de choses sur { $subject } ici ({ $limit } caractères au maximum). Demande-moi d'abord d'oublier quelque chose ; rien n'a changé.
not-theirs = Il n'y a que { $subject } (ou un modérateur) qui puisse me faire oublier des choses sur { $subject } ; tu ne peux reprendre que ce que tu m'as dit toi-même. Rien n'a changé.
subject-paused = { $subject } a mis sa mémoire en pause, donc je ne garde rien de nouveau sur cette personne. Rien n'a changé.
unknown-person = Je ne connais encore personne ici qui s'appelle { $name }. Rien n'a changé.
ambiguous-person = Plusieurs personnes ici s'appellent { $name } : { $candidates }. Mentionne celle que tu veux dire avec @ (ou réponds à son message). Rien n'a changé.

menu-help = Ce que je sais faire
menu-memory = Ta mémoire : /memory, search, forget, pause, resume, clear, export, share, unshare
menu-link = Réunir ta mémoire Discord et Telegram : /link ou /link CODE
menu-unlink = Séparer à nouveau la mémoire de ce compte Telegram
slash-memory = Ce dont je me souviens sur toi (toi seul vois la réponse)
slash-memory-request = vide pour voir ; ou : search, forget, pause, resume, clear, export, share, unshare, link
