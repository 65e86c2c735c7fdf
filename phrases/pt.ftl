# O que o bot diz em português (sintaxe Fluent). O que faltar aqui ele diz em inglês (en.ftl).

help =
    Eu lembro do que as pessoas daqui me contam. Experimente:
    lembre que eu adoro Rust
    esqueça que eu adoro Rust
    /memory, /memory search <palavras>, /memory forget <assunto>,
    /memory pause, /memory resume, /memory clear, /memory export
    Todo o resto é conversa.
store-failed = Algo deu errado do meu lado; sua mensagem está salva, mas não consegui fazer o que você pediu. Tente de novo, por favor.
slash-nothing = Nada a fazer.
not-stored = Algo deu errado do meu lado e não consegui guardar o seu pedido; por favor, tente de novo.
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
memory-title = Memória
category-preference = Preferências
category-work_context = Trabalho
category-personal_context = Vida pessoal
category-reading_history = Leituras
memory-key-facts = Fatos principais
memory-about = Sobre { $name }:
memory-notes-about = Notas sobre { $name }:
memory-nobody-yet = (ainda não há memória sobre ninguém aqui)
memory-facts = Fatos
memory-today = Hoje
memory-earlier = No início desta semana
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
lapsed-forgotten = Algo da sua memória foi esquecido desde que perguntei, então expirou e nada foi alterado; pergunte de novo se ainda quiser.
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

# Sharing, linking and the rarer refusals.
everywhere-only-about-oneself = Só a pessoa de quem um fato trata pode torná-lo conhecido em todo lugar, e ele não pode ser sobre mais ninguém, então não guardei nada. Sem "em todo lugar", eu guardo onde você disse.
share-paused = Sua memória está pausada, então não vou mudar onde ela é conhecida. Diga "/memory resume" primeiro.
share-mentions-someone = Essa entrada menciona outra pessoa, e o que é conhecido em todo lugar só pode ser sobre você, então deixei onde está.
not-linked = Esta conta não está vinculada a nenhuma outra.
nothing-unlinked = Esta conta não está vinculada a nenhuma outra, então nada mudou.
too-long-to-act = Essa mensagem é longa demais para eu fazer algo com ela ({ $len } caracteres; o limite é { $limit }). Guardei no histórico da conversa, mas não fiz mais nada com ela.
never-kept-code = Não guardo código na memória; me conte sobre ele com palavras.
never-kept-password = Isso parece uma senha ou PIN, e eu nunca guardo essas coisas, então não salvei. Também deixei isso fora do histórico de conversa que eu guardo; talvez você queira apagar sua mensagem e trocar a senha.
never-kept-key = Isso parece uma chave de API ou um token de acesso, e eu nunca guardo essas coisas, então não salvei. Também deixei isso fora do histórico de conversa que eu guardo; talvez você queira apagar sua mensagem e revogar a chave.
never-kept-card = Isso parece um número de cartão, e eu nunca guardo essas coisas, então não salvei. Também deixei isso fora do histórico de conversa que eu guardo; talvez você queira apagar sua mensagem.
unknown-memory-command = Não conheço "/memory { $word }". Tente /memory, /memory search <palavras>, /memory forget <assunto>, /memory pause, /memory resume, /memory clear, /memory export, /memory share <palavras>, /memory unshare <palavras>, /memory link, /memory links ou /memory unlink.
which-entry-share = Qual entrada? Tente "/memory share <palavras da entrada>".
which-entry-unshare = Qual entrada? Tente "/memory unshare <palavras da entrada>".
no-entry-to-share = Nenhuma das suas entradas que posso mostrar aqui (e que ainda não estão compartilhadas) tem todas as palavras de "{ $words }".
no-entry-to-unshare = Nenhuma das suas entradas compartilhadas tem todas as palavras de "{ $words }".
several-entries =
    Várias entradas correspondem; diga qual, com mais palavras dela:
    { $list }
share-ask = Compartilhar "{ $value }" (aprendido em: { $learned }) em todo lugar, em cada grupo e conversa privada onde estou? Responda "sim" para compartilhar ou "não" para deixar onde está.
moved-gone = Essa entrada sumiu nesse meio-tempo, então nada mudou.
shared = Compartilhado: vou saber "{ $value }" em todo lugar, em cada grupo e conversa privada. "/memory unshare" desfaz.
unshared = Compartilhamento desfeito: "{ $value }" não é mais conhecido em todo lugar, só na nossa conversa privada.
unshared-not-found = Compartilhamento desfeito: a entrada "{ $value }" agora só é conhecida na nossa conversa privada, mas não encontrei essas palavras no que eu sei sobre você em todo lugar; se eu disser isso em outro lugar, me diga lá "esqueça que …".
unshared-failed = Compartilhamento desfeito: a entrada "{ $value }" agora só é conhecida na nossa conversa privada, mas não consegui atualizar o que eu sei sobre você em todo lugar; tente "/memory unshare" de novo mais tarde.
code-posted-here = Não vou usar um código postado aqui: qualquer um pode ter visto, então ele não funciona mais. Crie um novo com "/memory link" numa conversa privada.
link-in-private = Me peça um código de vinculação numa conversa privada: qualquer um que veja um código pode usá-lo.
links-in-private = Me peça numa conversa privada: só mostro e desvinculo as contas vinculadas lá, onde ninguém mais as vê.
link-code = Seu código de vinculação é { $code }. Em até { $minutes } minutos, me envie "/memory link { $code }" numa conversa privada na sua outra plataforma (Discord ou Telegram). Ele funciona uma vez; depois essa conta passa a compartilhar sua memória daqui: o que você me contou no privado e o que eu sei sobre você em todo lugar. Nunca o poste em nenhum outro lugar.
too-many-tries = Códigos errados demais. Espere { $minutes } minutos e depois crie um novo código na outra plataforma.
code-unknown = Esse código é desconhecido ou expirou. Crie um novo com "/memory link" na outra plataforma.
same-platform = Esse código foi criado nesta plataforma: use-o na outra.
already-linked = Esta conta já está vinculada àquela.
link-ask = Isso junta esta conta do { $platform } ({ $name }, id { $id }) com { $others }: sua memória privada e o que eu sei sobre você em todo lugar serão compartilhados entre elas. Só diga sim se essa conta for sua. Responda "sim" para vinculá-las ou "não" para cancelar.
linked = Vinculado: esta conta do { $platform } agora compartilha sua memória. "/memory links" lista as contas, "/memory unlink" desfaz.
code-expired = Esse código expirou nesse meio-tempo. Crie um novo com "/memory link" na outra plataforma.
links =
    Estas contas compartilham sua memória:
    { $list }
    "/memory unlink" separa as contas ("/memory unlink discord" ou "/memory unlink telegram" desvincula só a conta dessa plataforma).
not-a-platform = "{ $which }" não é uma plataforma: diga "/memory unlink discord" ou "/memory unlink telegram".
unlinked = Desvinculado: { $names }, de novo com memória própria.
and = e
fact-too-long-remember = Isso é longo demais para lembrar como um fato ({ $len } caracteres; o limite é { $limit }). Nada foi alterado.
fact-too-long-forget = Isso é longo demais para esquecer como um fato ({ $len } caracteres; o limite é { $limit }). Nada foi alterado.
facts-full = Já guardo muita coisa sobre { $subject } aqui (no máximo { $limit } caracteres). Peça para eu esquecer algo primeiro; nada foi alterado.
not-theirs = Só { $subject } (ou um moderador) pode me fazer esquecer coisas sobre { $subject }; você só pode retirar o que você mesmo me contou. Nada foi alterado.
subject-paused = { $subject } pausou a própria memória, então não estou guardando nada de novo sobre essa pessoa. Nada foi alterado.
unknown-person = Ainda não conheço ninguém chamado { $name } aqui. Nada foi alterado.
ambiguous-person = Mais de uma pessoa aqui se chama { $name }: { $candidates }. Mencione a pessoa certa com @ (ou responda à mensagem dela). Nada foi alterado.

menu-help = O que eu sei fazer
menu-memory = Sua memória: /memory, search, forget, pause, resume, clear, export, share, unshare
menu-link = Unir sua memória do Discord e do Telegram: /link ou /link CÓDIGO
menu-unlink = Separar de novo a memória desta conta do Telegram
slash-memory = O que eu lembro sobre você (só você vê a resposta)
slash-memory-request = vazio para ver; ou: search, forget, pause, resume, clear, export, share, unshare, link, unlink
