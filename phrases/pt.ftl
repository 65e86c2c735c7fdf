# O que o bot diz em português (sintaxe Fluent). O que faltar aqui ele diz em inglês (en.ftl).

help =
    Eu lembro do que as pessoas daqui me contam. Experimente:
    lembre que eu adoro Rust
    esqueça que eu adoro Rust
    /memory, /memory search <palavras>, /memory forget <assunto>,
    /memory pause, /memory resume, /memory clear, /memory export
    Todo o resto é conversa.
store-failed = Algo deu errado do meu lado; sua mensagem está salva, mas não consegui fazer o que você pediu. Tente de novo, por favor.
already-knew = Eu já sabia disso.
paused = Memória pausada: nada de novo sobre você é coletado ou escrito, nem por mim nem por quem me conta sobre você. O que eu já sei fica até você apagar. Diga "/memory resume" para ligar de novo.
resumed = A memória está ligada de novo.
clear-ask = Isso apaga tudo o que eu tenho sobre você, em todo lugar: suas entradas do MEMORY.md e o histórico delas, notas diárias, o que eu sei sobre você, o que outros me contaram sobre você e você sobre outros, e cada mensagem sua que guardei, com minhas respostas (a plataforma mantém a própria cópia). Responda "sim" para confirmar ou "não" para manter.
cleared = Pronto, apaguei tudo o que eu tinha sobre você.
forget-what = Esquecer o quê? Tente "/memory forget <assunto>".
nothing-changed = Ok, nada foi alterado.
too-fast = Estou recebendo mais mensagens do que consigo responder agora. A sua está salva; pergunte de novo em uns { $seconds } segundos.
budget-spent = Este lugar já usou o orçamento de hoje do meu modelo de linguagem, então só posso conversar depois da meia-noite UTC. Sua mensagem está salva, e "lembre" e "esqueça" continuam funcionando.
addressed-only = Sim? Diga "{ $bot } help" para ver o que eu sei fazer.
known-everywhere = { $said } Vou saber disso em todo lugar, em cada grupo e conversa privada ("/memory unshare" desfaz).
capture-paused = Sua memória está pausada, então não salvei isso. Diga "/memory resume" para ligar de novo.
capture-too-long = Isso é longo demais para lembrar (o limite é { $limit } caracteres). Nada foi alterado.
captured-word-for-word = Entendi, vou lembrar disso (ao pé da letra: meu modelo de linguagem não está disponível).
captured = Entendi, vou lembrar disso.
told-private = Entendi, vou guardar isso como o que você me contou sobre { $name }, só na nossa conversa privada.
told-public = Entendi, vou guardar isso como o que você me contou sobre { $name }. { $name } pode ver e apagar.
forgotten = Pronto, esqueci isso.
forget-not-found = Não encontrei isso no que eu sei, então nada mudou.
forget-not-found-offline = Não encontrei essas palavras no que eu sei, então nada mudou. Tente as mesmas palavras que você usou quando me contou.
forgot-everything-none = Eu não tinha nada sobre { $who } aqui, então nada mudou.
forgot-everything = Pronto, esqueci tudo o que guardo aqui sobre { $who }.
you = você
recall-nothing = Ainda não sei nada sobre { $who }.
recall = Isto é o que eu sei sobre { $who }:
    { $memory }
confirm-changes =
    { $text }

    Antes de mudar sua memória: devo
    { $list }
    Responda "sim" para fazer ou "não" para deixar como está.
memory-told-heading = O que outros me contaram sobre você
memory-told-note = (As palavras deles, não as suas: "/memory forget <palavras>" apaga uma.)
memory-paused-note = (A memória está pausada: nada de novo é coletado. /memory resume liga de novo.)
memory-empty = Não tenho notas sobre você que eu possa mostrar aqui.
memory-only-here = (Só o que pode ser mostrado neste canal; peça numa conversa privada para ver tudo.)
nothing-to-forget = Não tenho nada sobre "{ $topic }" que eu possa mostrar aqui, então nada mudou.
forget-ask =
    Isto corresponde:
    { $list }
    Responda "sim" para esquecer ou "não" para manter.
someone-says = { $by } diz: { $text }
forgot-entries = Pronto, esqueci { $n } { $n ->
        [one] entrada
       *[other] entradas
    }.
changed-entries = Pronto: { $n } { $n ->
        [one] entrada alterada
       *[other] entradas alteradas
    }.
search-nothing = Nada na sua memória corresponde a "{ $query }".
lapsed = Perguntei isso há mais de { $minutes } minutos, então expirou e nada foi alterado; pergunte de novo se ainda quiser.
remember-what = Lembrar o quê? Diga depois do comando, por ex. "lembre que eu adoro Rust".
forget-what-fact = Esquecer o quê? Diga depois do comando, por ex. "esqueça que eu adoro Rust".
capture-what = Lembrar o quê? Diga depois da frase, por ex. "lembre que eu prefiro respostas curtas".
busy = A memória está ocupada com outras mudanças agora; tente de novo.
no-model =
    Não tenho um modelo de linguagem configurado, então ainda não posso conversar (defina llm.base_url). Esta é a memória que eu teria usado ({ $tokens } de { $budget } tokens):

    { $memory }
model-failing =
    Meu modelo de linguagem está falhando agora, então isto é o que eu lembro:

    { $memory }
model-unreachable =
    Não consegui falar com meu modelo de linguagem, então isto é o que eu lembro:

    { $memory }
