# Ce que dit le bot en français (syntaxe Fluent). Ce qui manque ici est dit en anglais (en.ftl).

help =
    Je retiens ce que les gens d'ici me racontent. Essaie :
    souviens-toi que j'aime Rust
    oublie que j'aime Rust
    /memory, /memory search <mots>, /memory forget <sujet>,
    /memory pause, /memory resume, /memory clear, /memory export
    Tout le reste, c'est de la conversation.
store-failed = Quelque chose s'est mal passé de mon côté ; ton message est enregistré, mais je n'ai pas pu donner suite. Réessaie, s'il te plaît.
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
