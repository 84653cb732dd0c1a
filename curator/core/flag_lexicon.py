"""Word families in eighteen languages, for the flag rules.

Rules in one language miss the same attack written in another, and rules made of fixed
phrases miss its paraphrases. So the rules here are built from *families*: a verb of
setting aside (ignore, forget, override, pay no attention to …) near an object that is
the agent's instructions (rules, directions, system prompt, what you were told …); a
marker of a standing order (from now on, in every reply, whenever anyone asks …) in a
sentence that orders something (a directive verb, "you", "always"); a password word next
to a credential-like token; a word for "AI" next to hiding it or claiming to be human.

Topic is not intent: "prompt injection", "jailbreak" or "password" alone flag nothing;
a family needs its second half (the object, the order, the token) in the same sentence
(:mod:`curator.core.flag_families` reads the table that way).

The text these rules read is already folded (:func:`curator.core.flag_normalise.fold`:
NFKC, casefolded, leet digits and look-alikes undone), so every entry is lower case.
Entries are regular-expression fragments. In languages written with spaces an entry
must start a word; in Chinese and Japanese it may start anywhere. Verbs must also end a
word, because in most of these languages the imperative is the bare form and a
conjugated one ("ignores", "oublié", "unuttu") describes rather than orders.
"""

from __future__ import annotations

from dataclasses import dataclass

from curator.core.flag_lexicon_more import MORE

__all__ = ["LANGUAGES", "Language"]


@dataclass(frozen=True, slots=True)
class Language:
    """One language's families (see the module docstring for how each is used)."""

    code: str
    ignore_verbs: tuple[str, ...]
    rule_objects: tuple[str, ...]
    standing: tuple[str, ...]  # from now on, in future conversations
    every_reply: tuple[str, ...]  # in every reply, each answer
    whenever: tuple[str, ...]  # whenever anyone asks, if a user mentions
    directives: tuple[str, ...]  # words that make a sentence an order to the agent
    secret_words: tuple[str, ...]
    ai_words: tuple[str, ...]
    conceal: tuple[str, ...]  # do not reveal, never admit, deny
    human: tuple[str, ...]  # human, real person


# fmt: off
_TEN: tuple[Language, ...] = (
    Language(
        "en",
        (
            r"ignore", r"disregard", r"forget", r"override", r"overrule", r"bypass", r"circumvent",
            r"discard", r"drop", r"abandon", r"skip", r"neglect", r"set\s+aside", r"put\s+aside",
            r"throw\s+(?:out|away)", r"get\s+around", r"pay\s+no\s+(?:attention|heed|mind)\s+to",
            r"(?:do\s+not|don't|never)\s+"
            r"(?:pay\s+attention\s+to|follow|obey|listen\s+to|heed|apply)",
            r"stop\s+(?:following|obeying|applying|listening\s+to)", r"disable", r"turn\s+off",
            r"erase", r"cancel",
            r"(?:act|pretend|behave)\s+(?:as\s+if\s+|as\s+though\s+|like\s+|that\s+)?you\s+never\s+"
            r"(?:received|got|had|were\s+given|learned)",
            r"no\s+longer\s+(?:follow|obey)", r"overlook", r"shelve", r"suspend", r"pause",
            r"ditch", r"scrap", r"toss", r"lay\s+aside", r"put\s+away", r"no\s+matter\s+what",
        ),
        (
            r"instructions?", r"rules?", r"directions?", r"directives?", r"guidelines?",
            r"guidance", r"polic(?:y|ies)", r"constraints?", r"restrictions?", r"safeguards?",
            r"safety", r"system\s+prompt", r"prompts?", r"programming", r"programmed", r"training",
            r"orders?", r"commands?", r"filters?", r"limits?", r"limitations?",
            r"(?:what|everything|anything|nothing)\s+(?:you\s+were|you've\s+been|you\s+have\s+been)\s+"
            r"(?:told|taught|given|instructed)", r"(?:your\s+)?developers?\s+instructed",
        ),
        (
            r"from\s+now\s+on", r"from\s+this\s+point\s+(?:on|forward)", r"henceforth",
            r"hereafter", r"going\s+forward", r"from\s+today(?:\s+on(?:wards?)?)?",
            r"starting\s+(?:today|now|immediately|tomorrow)", r"as\s+of\s+(?:now|today)",
            r"for\s+the\s+rest\s+of\s+time", r"forevermore", r"from\s+here\s+on(?:\s+out)?",
            r"(?:in|for)\s+(?:all\s+)?(?:the\s+)?future\s+(?:conversations?|chats?|replies|"
            r"sessions?|messages?|interactions?|answers?)", r"every\s+single\s+time",
            r"remember\s+this\s+for\s+(?:later|the\s+future|next\s+time)",
            r"until\s+(?:told|instructed)\s+otherwise", r"until\s+(?:i|we)\s+say\s+otherwise",
            r"until\s+further\s+notice", r"after\s+this\s+(?:message|note|post)",
            r"as\s+a\s+(?:standing|permanent|general)\s+(?:rule|policy)",
            r"(?:keep|continue)\s+(?:recommending|mentioning|saying|adding|posting|linking)",
            r"from\s+this\s+point\s+onwards?", r"(?:each|every)\s+time\s+you",
            r"make\s+it\s+a\s+(?:habit|rule|point)\s+to", r"permanently", r"keep\s+this\s+forever",
            r"remember\s+(?:this|that)\s+(?:permanently|forever|for\s+good|always)",
            r"for\s+as\s+long\s+as", r"no\s+matter\s+who\s+asks", r"always\s+remember",
            r"for\s+the\s+rest\s+of\s+(?:our|this|the)\s+(?:conversations?|chats?|sessions?)",
            r"in\s+all\s+future", r"(?:from\s+)?(?:the\s+)?next\s+(?:conversation|session)\s+on",
        ),
        (
            r"(?:in|on|to|with|of|for|after|into|begin|start|end|sign|close)\s+(?:every\s+|each\s+|all\s+"
            r"(?:of\s+)?(?:your\s+|the\s+)?)(?:single\s+|future\s+)?(?:reply|replies|answers?|"
            r"responses?|messages?|"
            r"posts?|comments?|chats?|conversations?)",
            r"(?:every|each)\s+(?:reply|answer|response|message|post)\s+you",
            r"(?:every|each|all)\s+(?:single\s+)?(?:reply|replies|answers?|responses?|messages?|"
            r"posts?)\s+(?:must|should|has\s+to|have\s+to|needs?\s+to|will|shall)",
        ),
        (
            r"(?:whenever|every\s+time|each\s+time|any\s*time|when|if|once)\s+(?:someone|anyone|"
            r"somebody|anybody|a\s+user|users|the\s+user|people|a\s+person|a\s+customer|"
            r"a\s+question|questions|a\s+message|messages|a\s+post|posts|a\s+topic|"
            r"customers|a\s+follower|followers)\s+(?:\w+\s+)?(?:asks?|mentions?|says?|writes?|"
            r"brings?\s+up|greets?|requests?|wants?|needs?|talks?|messages?|comments?|"
            r"repl(?:y|ies)|dms?|contacts?|questions?)",
            r"whoever\s+(?:asks|mentions|writes|says)",
            r"(?:whenever|every\s+time|each\s+time|any\s*time)\s+(?:someone|anyone|somebody|anybody|"
            r"a\s+user|users|the\s+user|people|a\s+person|a\s+customer|customers|a\s+follower|"
            r"followers)\s+\w+",
        ),
        (
            r"you", r"your", r"yourself", r"always", r"never", r"please", r"recommend", r"mention",
            r"reply", r"respond", r"answer", r"say", r"tell", r"suggest", r"send", r"point",
            r"direct", r"refer", r"add", r"include", r"append", r"begin", r"start", r"end",
            r"sign", r"post", r"praise", r"promote", r"link", r"share", r"write", r"put", r"give",
            r"should\s+be", r"must\s+be", r"keep", r"continue", r"claim", r"pretend", r"act",
            r"insist", r"present", r"introduce", r"ignore", r"forget", r"disregard", r"obey",
            r"follow", r"stop", r"do\s+not", r"don't", r"the\s+(?:agent|assistant|bot|ai)",
            r"agree", r"call", r"treat", r"cite", r"slip", r"use", r"quote", r"thank", r"tag",
            r"compliment", r"talk", r"speak", r"refuse", r"avoid", r"question", r"describe",
            r"close", r"accept", r"trust", r"side", r"defend", r"ask", r"greet", r"address",
            r"welcome", r"warn", r"remind", r"insult", r"flatter", r"mock", r"blame", r"rate",
            r"offer", r"sell", r"push", r"advertise", r"plug", r"endorse", r"work\s+in",
        ),
        (
            r"passwords?", r"passphrase", r"passcode", r"passwd", r"pwd", r"pass", r"pin",
            r"login", r"credentials?",
        ),
        (
            r"an\s+ai", r"a\s+bot", r"a\s+chatbot", r"a\s+language\s+model", r"artificial",
            r"a\s+machine",
        ),
        (
            r"(?:do\s+not|don't|never|without)\s+(?:disclose|reveal|admit|say|tell|mention|"
            r"confirm|acknowledge|let\s+on|telling|saying|admitting)", r"hide", r"deny",
        ),
        (
            r"(?:you\s+are|you're|to\s+be|yourself\s+as|as)\s+(?:a\s+|an\s+)?(?:real\s+)?"
            r"(?:human|person|man|woman|human\s+being|employee|volunteer)",
        ),
    ),
    Language(
        "es",
        (
            r"ignora", r"ignore", r"olvida", r"olvide", r"olvídate", r"descarta", r"omite",
            r"no\s+hagas\s+caso\s+(?:a|de)", r"haz\s+caso\s+omiso\s+(?:a|de)",
            r"pasa\s+por\s+alto", r"sáltate", r"desobedece", r"anula", r"deja\s+de\s+seguir",
            r"no\s+sigas", r"no\s+tengas\s+en\s+cuenta", r"desactiva", r"evita",
        ),
        (
            r"instrucci", r"reglas?", r"normas?", r"indicaciones", r"directrices", r"pautas",
            r"órdenes", r"restricciones", r"lo\s+que\s+te\s+(?:dijeron|han\s+dicho)", r"prompt",
            r"configuración", r"políticas?", r"limitaciones", r"filtros",
        ),
        (
            r"a\s+partir\s+de\s+ahora", r"de\s+ahora\s+en\s+adelante", r"desde\s+ahora",
            r"de\s+aquí\s+en\s+adelante", r"en\s+(?:las\s+)?(?:futuras|próximas)\s+conversaciones",
        ),
        (
            r"cada\s+respuesta", r"cada\s+mensaje", r"todas\s+(?:las|tus)\s+respuestas",
            r"todos\s+(?:los|tus)\s+mensajes", r"cada\s+conversación",
        ),
        (
            r"(?:cada\s+vez|siempre)\s+que\s+(?:alguien|un\s+usuario|algún\s+usuario)",
            r"(?:cuando|si)\s+(?:alguien|un\s+usuario)", r"quien\s+pregunte",
        ),
        (
            r"recomienda", r"recomiende", r"menciona", r"incluye", r"termina", r"añade",
            r"escribe", r"responde", r"contesta", r"di", r"sugiere", r"envía", r"manda",
            r"comparte", r"promociona", r"indica", r"agrega", r"pon", r"firma", r"cierra", r"usa",
            r"haz", r"trata", r"llama", r"siempre",
            r"nunca", r"tú", r"tus?", r"te", r"usted",
        ),
        (r"contraseña", r"clave"),
        (r"una\s+ia", r"inteligencia\s+artificial", r"un\s+bot", r"ia"),
        (
            r"no\s+(?:reveles|digas|admitas|menciones|confieses)",
            r"nunca\s+(?:digas|admitas|reveles)", r"oculta", r"niega",
        ),
        (r"humano", r"humana", r"persona\s+real", r"una\s+persona"),
    ),
    Language(
        "de",
        (
            r"ignoriere", r"ignorier", r"ignorieren\s+sie", r"vergiss", r"vergessen\s+sie",
            r"missachte", r"übergehe", r"umgehe", r"setze?\s+dich\s+über", r"verwirf",
            r"überspringe", r"deaktiviere", r"befolge\s+nicht", r"beachte\s+nicht",
            r"kümmere?\s+dich\s+nicht\s+um", r"hör\s+auf", r"nicht\s+mehr\s+(?:befolgen|beachten)",
        ),
        (
            r"anweisung", r"regeln?", r"vorgaben?", r"richtlinie", r"systemprompt",
            r"system-prompt", r"prompt", r"befehle", r"einschränkungen", r"beschränkungen",
            r"anleitung", r"was\s+man\s+dir\s+(?:\w+\s+)?gesagt", r"programmierung", r"filter",
        ),
        (
            r"ab\s+jetzt", r"von\s+nun\s+an", r"ab\s+sofort", r"künftig", r"zukünftig",
            r"in\s+zukunft", r"fortan", r"von\s+jetzt\s+an", r"ab\s+heute",
        ),
        (
            r"jeder\s+antwort", r"jede\s+antwort", r"jeder\s+nachricht", r"jede\s+nachricht",
            r"allen\s+(?:deinen\s+)?antworten", r"alle\s+(?:deine\s+)?antworten",
        ),
        (
            r"(?:immer\s+)?wenn\s+(?:jemand|ein\s+nutzer|ein\s+benutzer)", r"jedes\s+mal,?\s+wenn",
            r"falls\s+jemand", r"sobald\s+jemand", r"wer\s+nach",
        ),
        (
            r"empfiehl", r"erwähne", r"nenne", r"antworte", r"schreib", r"schreibe", r"füge",
            r"sag", r"sage", r"schick", r"sende", r"teile", r"verweise", r"beende", r"beginne",
            r"schließe", r"nutze", r"verwende", r"behandle",
            r"immer", r"niemals", r"du", r"dein", r"deine", r"dir", r"dich", r"sollst", r"musst",
        ),
        (r"passwort", r"kennwort", r"zugangscode"),
        (r"eine\s+ki", r"ki", r"künstliche\s+intelligenz", r"ein\s+bot"),
        (
            r"verrate\s+(?:nicht|niemals|nie)", r"gib\s+(?:niemals|nie|nicht)\s+zu",
            r"sag\s+(?:nicht|niemals|nie)", r"verschweige", r"leugne",
        ),
        (r"mensch", r"menschen", r"echte\s+person"),
    ),
    Language(
        "fr",
        (
            r"ignore", r"ignorez", r"oublie", r"oubliez",
            r"ne\s+(?:tiens|tenez)\s+(?:plus\s+|pas\s+)"
            r"(?:plus\s+)?compte\s+(?:de|des|du)", r"fais\s+abstraction\s+(?:de|des)",
            r"faites\s+abstraction\s+(?:de|des)", r"passez?\s+outre", r"contourne", r"contournez",
            r"désobéis", r"abandonne", r"écarte", r"désactive", r"n'obéis\s+plus",
            r"ne\s+suis\s+plus", r"ne\s+respecte\s+plus", r"laisse\s+tomber",
        ),
        (
            r"instructions?", r"consignes?", r"règles?", r"directives?", r"indications", r"prompt",
            r"ordres", r"restrictions", r"limites", r"filtres",
            r"ce\s+qu'on\s+t'a\s+(?:dit|appris|donné|demandé)",
            r"politiques?",
        ),
        (
            r"désormais", r"dorénavant", r"à\s+partir\s+de\s+maintenant",
            r"à\s+partir\s+d'aujourd'hui", r"à\s+l'avenir", r"dès\s+maintenant",
        ),
        (
            r"chaque\s+réponse", r"chaque\s+message", r"toutes\s+(?:les|tes|vos)\s+réponses",
            r"tous\s+(?:les|tes|vos)\s+messages", r"chaque\s+conversation",
        ),
        (
            r"(?:à\s+)?chaque\s+fois\s+qu(?:e\s+|')(?:quelqu'un|on|un\s+utilisateur)",
            r"(?:si|quand|lorsque|dès\s+que)\s+quelqu'un", r"(?:si|quand)\s+un\s+utilisateur",
        ),
        (
            r"recommande", r"mentionne", r"termine", r"ajoute", r"réponds", r"écris", r"dis",
            r"envoie", r"partage", r"indique", r"signe", r"commence", r"finis", r"utilise", r"fais",
            r"mets", r"traite",
            r"appelle", r"toujours", r"jamais",
            r"tu", r"ton", r"ta", r"tes", r"te", r"t'", r"vous",
        ),
        (r"mot\s+de\s+passe", r"mdp", r"code\s+d'accès"),
        (r"une\s+ia", r"intelligence\s+artificielle", r"un\s+bot", r"ia"),
        (
            r"ne\s+(?:révèle|dis|avoue|mentionne|admets)\s+(?:jamais|pas)",
            r"ne\s+(?:révèle|dis|avoue|mentionne)", r"cache", r"nie",
        ),
        (r"humain", r"humaine", r"vraie\s+personne", r"une\s+personne"),
    ),
    Language(
        "ru",
        (
            r"игнорируй", r"игнорируйте", r"проигнорируй", r"проигнорируйте", r"забудь",
            r"забудьте", r"не\s+обращай(?:те)?\s+внимания\s+на", r"не\s+слушай(?:те)?",
            r"не\s+следуй(?:те)?", r"не\s+соблюдай(?:те)?", r"обойди(?:те)?", r"пренебреги",
            r"отбрось", r"отмени", r"перестань\s+следовать", r"не\s+выполняй(?:те)?",
        ),
        (
            r"инструкци", r"правил", r"указани", r"установк", r"ограничени", r"директив",
            r"промпт", r"запрет", r"предписани", r"разработчик",
            r"(?:то|всё|все),?\s+что\s+тебе\s+(?:\w+\s+)?(?:сказали|говорили)",
        ),
        (
            r"с\s+этого\s+момента", r"отныне", r"впредь", r"с\s+сегодняшнего\s+дня",
            r"теперь\s+всегда", r"с\s+этих\s+пор",
        ),
        (
            r"каждом\s+ответе", r"каждый\s+ответ", r"каждом\s+сообщении", r"каждое\s+сообщение",
            r"всех\s+ответах", r"все\s+ответы",
        ),
        (
            r"всякий\s+раз", r"каждый\s+раз,?\s+когда", r"(?:когда|если)\s+кто-?(?:то|нибудь)",
            r"(?:когда|если)\s+пользователь",
        ),
        (
            r"рекомендуй", r"советуй", r"посоветуй", r"упоминай", r"упомяни", r"отвечай",
            r"ответь", r"пиши", r"напиши", r"добавляй", r"добавь", r"говори", r"скажи",
            r"отправляй", r"рекламируй", r"предлагай", r"заканчивай", r"используй", r"вставляй",
            r"называй", r"всегда", r"никогда", r"ты", r"тебе",
            r"твой", r"твои",
        ),
        (r"пароль", r"пароля", r"паролем"),
        (r"ии", r"искусственн\w*\s+интеллект\w*", r"бот", r"нейросеть"),
        (
            r"не\s+(?:признавайся|говори|раскрывай|сообщай|упоминай)", r"скрывай", r"отрицай",
        ),
        (r"человек", r"человеком", r"живой\s+человек"),
    ),
    Language(
        "pt",
        (
            r"ignore", r"ignora", r"esqueça", r"esqueca", r"esquece", r"desconsidere",
            r"desconsidera", r"descarte", r"não\s+siga", r"deixe\s+de\s+seguir",
            r"pare\s+de\s+seguir", r"não\s+obedeça", r"burle", r"contorne", r"pule",
            r"não\s+leve\s+em\s+conta", r"não\s+dê\s+atenção\s+(?:a|às|aos)",
        ),
        (
            r"instruções", r"instrucoes", r"regras", r"diretrizes", r"orientações", r"ordens",
            r"restrições", r"normas", r"prompt", r"o\s+que\s+(?:te|lhe)\s+disseram", r"políticas",
            r"limites", r"filtros",
        ),
        (
            r"de\s+agora\s+em\s+diante", r"a\s+partir\s+de\s+agora", r"daqui\s+em\s+diante",
            r"daqui\s+para\s+frente", r"de\s+hoje\s+em\s+diante",
        ),
        (
            r"cada\s+resposta", r"todas\s+as\s+(?:suas\s+)?respostas", r"cada\s+mensagem",
            r"todas\s+as\s+mensagens", r"cada\s+conversa",
        ),
        (
            r"(?:sempre|toda\s+vez|cada\s+vez)\s+que\s+(?:alguém|um\s+usuário)",
            r"(?:quando|se)\s+(?:alguém|um\s+usuário)",
        ),
        (
            r"recomende", r"mencione", r"inclua", r"termine", r"adicione", r"responda", r"escreva",
            r"diga", r"envie", r"indique", r"sugira", r"compartilhe", r"feche", r"use", r"faça",
            r"coloque", r"trate",
            r"chame", r"sempre", r"nunca", r"você",
            r"voce", r"tu", r"teu",
        ),
        (r"senha", r"palavra-passe"),
        (r"uma\s+ia", r"inteligência\s+artificial", r"um\s+bot", r"ia"),
        (
            r"não\s+(?:revele|diga|admita|conte|mencione)", r"nunca\s+(?:diga|admita|revele)",
            r"esconda", r"negue",
        ),
        (r"humano", r"humana", r"pessoa\s+real", r"uma\s+pessoa"),
    ),
    Language(
        "it",
        (
            r"ignora", r"ignori", r"dimentica", r"dimentichi", r"trascura",
            r"non\s+tenere\s+conto\s+(?:di|delle|dei|degli|della)", r"non\s+considerare",
            r"non\s+seguire", r"aggira", r"scavalca", r"salta", r"disattiva", r"lascia\s+perdere",
            r"non\s+rispettare", r"smetti\s+di\s+seguire", r"non\s+obbedire",
        ),
        (
            r"istruzioni", r"regole", r"direttive", r"linee\s+guida", r"indicazioni", r"ordini",
            r"restrizioni", r"prompt", r"quello\s+che\s+ti\s+hanno\s+detto", r"limiti", r"filtri",
            r"norme",
        ),
        (
            r"d'ora\s+in\s+(?:poi|avanti)", r"da\s+(?:ora|adesso|oggi)\s+in\s+(?:poi|avanti)",
            r"d'ora\s+innanzi", r"nelle\s+prossime\s+conversazioni",
        ),
        (
            r"ogni\s+risposta", r"ogni\s+messaggio", r"tutte\s+le\s+(?:tue\s+)?risposte",
            r"tutti\s+i\s+(?:tuoi\s+)?messaggi",
        ),
        (
            r"ogni\s+volta\s+che\s+(?:qualcuno|un\s+utente)",
            r"(?:quando|se)\s+(?:qualcuno|un\s+utente)", r"chiunque\s+chieda",
        ),
        (
            r"consiglia", r"raccomanda", r"cita", r"menziona", r"includi", r"termina", r"aggiungi",
            r"rispondi", r"scrivi", r"di'", r"suggerisci", r"invia", r"manda", r"condividi",
            r"indica", r"chiudi", r"concludi", r"usa", r"fai", r"metti", r"inserisci",
            r"tratta", r"chiama", r"sempre", r"mai", r"tu", r"tuo", r"tua", r"ti",
        ),
        (r"password", r"parola\s+d'ordine"),
        (
            r"un'ia", r"un'intelligenza\s+artificiale", r"intelligenza\s+artificiale", r"un\s+bot",
            r"ia",
        ),
        (
            r"non\s+(?:dire|rivelare|ammettere|menzionare)", r"nascondi", r"nega",
        ),
        (r"umano", r"umana", r"persona\s+reale", r"una\s+persona"),
    ),
    Language(
        "tr",
        (
            r"yok\s+say", r"görmezden\s+gel", r"unut", r"dikkate\s+alma", r"aldırma", r"umursama",
            r"uyma", r"atla", r"çiğne", r"takma", r"devre\s+dışı\s+bırak", r"es\s+geç", r"boşver",
            r"önemseme",
        ),
        (
            r"talimat", r"kural", r"yönerge", r"direktif", r"komut", r"sistem\s+istem", r"istem",
            r"prompt", r"kısıtlama", r"sınırlama", r"emir", r"söylenen",
        ),
        (
            r"bundan\s+sonra", r"şu\s+andan\s+itibaren", r"bundan\s+böyle", r"bugünden\s+itibaren",
            r"artık\s+her",
        ),
        (r"her\s+(?:cevab|cevap|yanıt|mesaj)", r"(?:tüm|bütün)\s+(?:cevap|yanıt|mesaj)"),
        (
            r"(?:biri|birisi|herhangi\s+biri|kullanıcı)\s+[^.!?]{0,40}?(?:sorduğunda|sorarsa|"
            r"bahsederse|yazarsa|sorunca|isterse)", r"her\s+seferinde",
        ),
        (
            r"öner", r"tavsiye\s+et", r"bahset", r"ekle", r"cevap\s+ver", r"yanıt\s+ver", r"söyle",
            r"gönder", r"paylaş", r"bitir", r"kullan", r"yap", r"koy", r"yaz", r"her\s+zaman",
            r"asla", r"sen", r"senin", r"sana", r"yönlendir",
        ),
        (r"şifre\w*", r"parola\w*"),
        (r"yapay\s+zek[aâ]\w*", r"bot"),
        (r"söyleme", r"açıklama", r"gizle", r"inkar\s+et", r"belli\s+etme", r"itiraf\s+etme"),
        (r"insan\w*", r"gerçek\s+bir\s+kişi"),
    ),
    Language(
        "ja",
        (
            r"無視して", r"無視しろ", r"無視しなさい", r"無視するように", r"忘れて", r"忘れろ",
            r"忘れなさい", r"従わない", r"従うな", r"無効にし", r"破棄", r"気にしない",
            r"気にせず", r"構わず", r"解除", r"捨て",
            r"取り消",
        ),
        (
            r"指示", r"命令", r"ルール", r"規則", r"制限", r"システムプロンプト",
            r"プロンプト", r"設定", r"ガイドライン", r"方針",
            r"指令",
        ),
        (r"今後", r"これからは", r"今からは", r"次回から"),
        (
            r"すべての返信", r"全ての返信", r"毎回の返信", r"すべての回答", r"全ての回答",
            r"返信の最後", r"回答の最後",
        ),
        (r"誰かが", r"だれかが", r"ユーザーが", r"聞かれたら", r"尋ねられたら", r"質問されたら"),
        (
            r"勧めて", r"すすめて", r"紹介して", r"書いて", r"答えて", r"返信して",
            r"言って", r"伝えて", r"送って", r"追加して",
            r"入れて", r"必ず", r"ください", r"しろ", r"せよ", r"あなた",
        ),
        (r"パスワード", r"暗証番号"),
        (r"ai", r"人工知能", r"ボット"),
        (r"明かさない", r"言わない", r"隠して", r"否定して", r"秘密にして", r"明かすな", r"言うな"),
        (r"人間", r"本物の人"),
    ),
    Language(
        "zh",
        (
            r"忽略", r"忽视", r"无视", r"忘记", r"忘掉", r"不要理会", r"别理会", r"不要管",
            r"不用管", r"不要遵守", r"别遵守",
            r"绕过", r"跳过", r"违反", r"放弃", r"抛开", r"不必遵守", r"不再遵守",
        ),
        (
            r"指令", r"指示", r"规则", r"提示词", r"系统提示", r"要求", r"限制", r"设定",
            r"命令", r"约束", r"准则", r"规定",
        ),
        (r"从现在开始", r"从今以后", r"从现在起", r"今后", r"以后每", r"以后都", r"往后"),
        (
            r"每次回复", r"每个回答", r"每条回复", r"每次回答", r"所有回复", r"所有回答",
            r"每条消息", r"每个回复",
        ),
        (r"每当有人", r"如果有人", r"当有人", r"只要有人", r"有人问", r"每当"),
        (
            r"推荐", r"提到", r"提及", r"回复", r"回答", r"告诉", r"发送", r"加上",
            r"附上", r"写上", r"必须", r"总是",
            r"一定", r"你",
        ),
        (r"密码", r"口令"),
        (r"ai", r"人工智能", r"机器人"),
        (r"不要透露", r"不要说", r"别说", r"隐瞒", r"否认", r"不要承认", r"不能说"),
        (r"真人", r"人类"),
    ),
)
# fmt: on

# The ten languages above and eight more (Korean, Arabic, Hindi, Polish, Dutch, Indonesian,
# Vietnamese, Swedish) kept in their own module.
LANGUAGES: tuple[Language, ...] = (*_TEN, *(Language(*row) for row in MORE))
