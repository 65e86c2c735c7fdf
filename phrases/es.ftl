# Lo que dice el bot en español (sintaxis Fluent). Lo que falte aquí lo dice en inglés (en.ftl).

help =
    Recuerdo lo que la gente de aquí me cuenta. Prueba:
    recuerda que me encanta Rust
    olvida que me encanta Rust
    /memory, /memory search <palabras>, /memory forget <tema>,
    /memory pause, /memory resume, /memory clear, /memory export
    Todo lo demás es conversación.
store-failed = Algo salió mal de mi lado; tu mensaje está guardado, pero no pude hacer lo que pediste. Inténtalo de nuevo, por favor.
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
