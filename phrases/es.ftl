# Lo que dice el bot en español (sintaxis Fluent). Lo que falte aquí lo dice en inglés (en.ftl).

help =
    Recuerdo lo que la gente de aquí me cuenta. Prueba:
    recuerda que me encanta Rust
    olvida que me encanta Rust
    /memory, /memory search <palabras>, /memory forget <tema>,
    /memory pause, /memory resume, /memory clear, /memory export
    Todo lo demás es conversación.
store-failed = Algo salió mal de mi lado; tu mensaje está guardado, pero no pude hacer lo que pediste. Inténtalo de nuevo, por favor.
slash-nothing = Nada que hacer.
not-stored = Algo falló de mi lado y no pude guardar tu petición; por favor, inténtalo de nuevo.
already-knew = Eso ya lo sabía.
paused = Memoria en pausa: no se recoge ni se escribe nada nuevo sobre ti, ni por mí ni por nadie que me hable de ti. Lo que ya sé se queda hasta que lo borres. Di «/memory resume» para volver a activarla.
resumed = La memoria vuelve a estar activa.
clear-ask = Esto borra todo lo que tengo sobre ti, en todas partes: tus entradas de MEMORY.md y su historial, notas diarias, lo que sé de ti, lo que otros me contaron de ti y tú de otros, y cada mensaje tuyo que guardé, con mis respuestas (la plataforma conserva su propia copia). Responde «sí» para confirmar o «no» para conservarlo.
cleared = Hecho, he borrado todo lo que tenía sobre ti.
forget-what = ¿Olvidar qué? Prueba «/memory forget <tema>».
nothing-changed = De acuerdo, no cambié nada.
too-fast = Ahora mismo recibo más mensajes de los que puedo responder. El tuyo está guardado; pregúntame otra vez en unos { $seconds } segundos.
budget-spent = Aquí ya se gastó el presupuesto de hoy de mi modelo de lenguaje, así que no podré conversar hasta la medianoche UTC. Tu mensaje está guardado, y «recuerda» y «olvida» siguen funcionando.
addressed-only = ¿Sí? Di «{ $bot } help» para ver lo que sé hacer.
known-everywhere = { $said } Lo sabré en todas partes, en cada grupo y chat privado («/memory unshare» lo deshace).
capture-paused = Tu memoria está en pausa, así que no lo guardé. Di «/memory resume» para volver a activarla.
capture-too-long = Es demasiado largo para recordarlo (el límite es { $limit } caracteres). No cambié nada.
captured-word-for-word = Entendido, lo recordaré (tal cual: mi modelo de lenguaje no está disponible).
captured = Entendido, lo recordaré.
told-private = Entendido, lo guardaré como lo que me contaste sobre { $name }, solo en nuestro chat privado.
told-public = Entendido, lo guardaré como lo que me contaste sobre { $name }. { $name } puede verlo y borrarlo.
forgotten = Hecho, lo he olvidado.
forget-not-found = No encontré eso en lo que sé, así que no cambié nada.
forget-not-found-offline = No encontré esas palabras en lo que sé, así que no cambié nada. Prueba con las palabras exactas que usaste al contármelo.
forgot-everything-none = No tenía nada sobre { $who } aquí, así que no cambié nada.
forgot-everything = Hecho, he olvidado todo lo que guardo aquí sobre { $who }.
you = ti
recall-nothing = Todavía no sé nada sobre { $who }.
recall = Esto es lo que sé sobre { $who }:
    { $memory }
confirm-changes =
    { $text }

    Antes de cambiar tu memoria: ¿debo
    { $list }
    Responde «sí» para hacerlo o «no» para dejarlo como está.
memory-title = Memoria
category-preference = Preferencias
category-work_context = Trabajo
category-personal_context = Vida personal
category-reading_history = Lecturas
memory-key-facts = Datos clave
memory-about = Sobre { $name }:
memory-notes-about = Notas sobre { $name }:
memory-nobody-yet = (aquí todavía no hay memoria de nadie)
memory-facts = Datos
memory-today = Hoy
memory-earlier = A principios de esta semana
memory-told-heading = Lo que otros me contaron sobre ti
memory-told-note = (Son sus palabras, no las tuyas: «/memory forget <palabras>» borra una.)
memory-paused-note = (La memoria está en pausa: no se recoge nada nuevo. /memory resume la vuelve a activar.)
memory-empty = No tengo notas sobre ti que pueda mostrar aquí.
memory-only-here = (Solo lo que se puede mostrar en este canal; pídemelo en un chat privado para verlo todo.)
nothing-to-forget = No tengo nada sobre «{ $topic }» que pueda mostrar aquí, así que no cambié nada.
forget-ask =
    Coincide esto:
    { $list }
    Responde «sí» para olvidarlo o «no» para conservarlo.
someone-says = { $by } dice: { $text }
forgot-entries = Hecho, he olvidado { $n } { $n ->
        [one] entrada
       *[other] entradas
    }.
changed-entries = Hecho: { $n } { $n ->
        [one] entrada cambiada
       *[other] entradas cambiadas
    }.
search-nothing = Nada en tu memoria coincide con «{ $query }».
lapsed = Pregunté eso hace más de { $minutes } minutos, así que caducó y no cambié nada; pregúntame de nuevo si todavía lo quieres.
lapsed-forgotten = Desde que pregunté se olvidó algo de tu memoria, así que caducó y no cambié nada; pregúntame de nuevo si todavía lo quieres.
remember-what = ¿Recordar qué? Dilo después del comando, p. ej. «recuerda que me encanta Rust».
forget-what-fact = ¿Olvidar qué? Dilo después del comando, p. ej. «olvida que me encanta Rust».
capture-what = ¿Recordar qué? Dilo después de la frase, p. ej. «recuerda que prefiero respuestas cortas».
busy = La memoria está ocupada con otros cambios ahora mismo; inténtalo de nuevo.
no-model =
    No tengo un modelo de lenguaje configurado, así que aún no puedo conversar (configura llm.base_url). Esta es la memoria que habría usado ({ $tokens } de { $budget } tokens):

    { $memory }
model-failing =
    Mi modelo de lenguaje está fallando ahora mismo, así que esto es lo que recuerdo:

    { $memory }
model-unreachable =
    No pude contactar con mi modelo de lenguaje, así que esto es lo que recuerdo:

    { $memory }

# Sharing, linking and the rarer refusals.
everywhere-only-about-oneself = Solo la persona de quien trata un dato puede hacer que se conozca en todas partes, y no puede tratar de nadie más, así que no guardé nada. Sin «en todas partes», lo guardo donde lo dijiste.
share-paused = Tu memoria está en pausa, así que no cambio dónde se conoce. Di primero «/memory resume».
share-mentions-someone = Esa entrada menciona a otra persona, y lo que se conoce en todas partes solo puede tratar de ti, así que la dejé donde está.
not-linked = Esta cuenta no está vinculada a ninguna otra.
nothing-unlinked = Esta cuenta no está vinculada a ninguna otra, así que no cambió nada.
too-long-to-act = Ese mensaje es demasiado largo para que haga algo con él ({ $len } caracteres; el límite es { $limit }). Lo guardé en el historial del chat, pero no hice nada más con él.
never-kept-code = No guardo código en la memoria; mejor cuéntamelo con palabras.
never-kept-password = Eso parece una contraseña o un PIN, y nunca guardo esas cosas, así que no lo guardé. También lo dejé fuera del historial del chat que conservo; quizá quieras borrar tu mensaje y cambiar esa clave.
never-kept-key = Eso parece una clave de API o un token de acceso, y nunca guardo esas cosas, así que no lo guardé. También lo dejé fuera del historial del chat que conservo; quizá quieras borrar tu mensaje y revocar la clave.
never-kept-card = Eso parece un número de tarjeta, y nunca guardo esas cosas, así que no lo guardé. También lo dejé fuera del historial del chat que conservo; quizá quieras borrar tu mensaje.
unknown-memory-command = No conozco «/memory { $word }». Prueba /memory, /memory search <palabras>, /memory forget <tema>, /memory pause, /memory resume, /memory clear, /memory export, /memory share <palabras>, /memory unshare <palabras>, /memory link, /memory links o /memory unlink.
which-entry-share = ¿Qué entrada? Prueba «/memory share <palabras de la entrada>».
which-entry-unshare = ¿Qué entrada? Prueba «/memory unshare <palabras de la entrada>».
no-entry-to-share = Ninguna de tus entradas que puedo mostrar aquí (y que aún no están compartidas) contiene todas las palabras de «{ $words }».
no-entry-to-unshare = Ninguna de tus entradas compartidas contiene todas las palabras de «{ $words }».
several-entries =
    Coinciden varias entradas; di cuál con más de sus palabras:
    { $list }
share-ask = ¿Compartir «{ $value }» (aprendido en: { $learned }) en todas partes, en cada grupo y chat privado donde estoy? Responde «sí» para compartirlo o «no» para dejarlo donde está.
moved-gone = Esa entrada ya no existe, así que no cambió nada.
shared = Compartido: sabré «{ $value }» en todas partes, en cada grupo y chat privado. «/memory unshare» lo deshace.
unshared = Ya no se comparte: «{ $value }» ya no se conoce en todas partes, solo en nuestro chat privado.
unshared-not-found = Ya no se comparte: la entrada «{ $value }» ahora solo se conoce en nuestro chat privado, pero no encontré esas palabras en lo que sé de ti en todas partes; si lo digo en otro sitio, dime allí «olvida que …».
unshared-failed = Ya no se comparte: la entrada «{ $value }» ahora solo se conoce en nuestro chat privado, pero no pude actualizar lo que sé de ti en todas partes; vuelve a probar «/memory unshare» más tarde.
code-posted-here = No usaré un código publicado aquí: cualquiera pudo verlo, así que ya no sirve. Crea uno nuevo con «/memory link» en un chat privado.
link-in-private = Pídeme un código de vinculación en un chat privado: cualquiera que vea un código puede usarlo.
links-in-private = Pregúntame en un chat privado: las cuentas vinculadas solo las muestro y desvinculo allí, donde nadie más las ve.
link-code = Tu código de vinculación es { $code }. En los próximos { $minutes } minutos, envíame «/memory link { $code }» en un chat privado en tu otra plataforma (Discord o Telegram). Funciona una sola vez; después esa cuenta comparte tu memoria de aquí: lo que me contaste en privado y lo que sé de ti en todas partes. Nunca lo publiques en ningún otro sitio.
too-many-tries = Demasiados códigos incorrectos. Espera { $minutes } minutos y luego crea un código nuevo en la otra plataforma.
code-unknown = Ese código es desconocido o ha caducado. Crea uno nuevo con «/memory link» en la otra plataforma.
same-platform = Ese código se creó en esta plataforma: úsalo en la otra.
already-linked = Esta cuenta ya está vinculada a esa.
link-ask = Esto une esta cuenta de { $platform } ({ $name }, id { $id }) con { $others }: tu memoria privada y lo que sé de ti en todas partes se compartirán entre ellas. Di que sí solo si esa cuenta es tuya. Responde «sí» para vincularlas o «no» para cancelar.
linked = Vinculado: esta cuenta de { $platform } ahora comparte tu memoria. «/memory links» muestra las cuentas, «/memory unlink» lo deshace.
code-expired = Ese código caducó mientras tanto. Crea uno nuevo con «/memory link» en la otra plataforma.
links =
    Estas cuentas comparten tu memoria:
    { $list }
    «/memory unlink» las separa («/memory unlink discord» o «/memory unlink telegram» desvincula solo la de esa plataforma).
not-a-platform = «{ $which }» no es una plataforma: di «/memory unlink discord» o «/memory unlink telegram».
unlinked = Desvinculado: { $names }, de nuevo con memoria propia.
and = y
fact-too-long-remember = Es demasiado largo para recordarlo como un dato ({ $len } caracteres; el límite es { $limit }). No cambié nada.
fact-too-long-forget = Es demasiado largo para olvidarlo como un dato ({ $len } caracteres; el límite es { $limit }). No cambié nada.
facts-full = Ya guardo mucho sobre { $subject } aquí (como máximo { $limit } caracteres). Pídeme primero que olvide algo; no cambié nada.
not-theirs = Solo { $subject } (o un moderador) puede hacer que olvide cosas sobre { $subject }; tú solo puedes retirar lo que me contaste tú. No cambié nada.
subject-paused = { $subject } ha pausado su memoria, así que no guardo nada nuevo sobre esa persona. No cambié nada.
unknown-person = Todavía no conozco a nadie llamado { $name } aquí. No cambié nada.
ambiguous-person = Aquí hay más de una persona que se llama { $name }: { $candidates }. Menciona con @ a la que te refieres (o responde a su mensaje). No cambié nada.

menu-help = Lo que sé hacer
menu-memory = Tu memoria: /memory, search, forget, pause, resume, clear, export, share, unshare
menu-link = Unir tu memoria de Discord y Telegram: /link o /link CÓDIGO
menu-unlink = Separar de nuevo la memoria de esta cuenta de Telegram
slash-memory = Lo que recuerdo de ti (solo tú ves la respuesta)
slash-memory-request = vacío para ver; o: search, forget, pause, resume, clear, export, share, unshare, link, unlink
