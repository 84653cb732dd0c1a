"""The intent families of the flag rules, by meaning, in the eighteen languages.

Where :mod:`curator.core.flag_lexicon` holds the first families (setting aside, standing
orders, passwords, hiding the AI), this table holds the ones a second reading of real
attacks showed were missing, each as a *meaning* rather than a phrase:

* ``void`` - the agent's instructions declared invalid: obsolete, void, revoked,
  rescinded, withdrawn, expired, on hold, no longer apply / valid / count, set aside,
  start fresh, a clean slate. Needs an instruction word and a ``prior`` marker (previous,
  earlier, original, "you started with", "you were given") in the same sentence: "the old
  parking rules no longer apply" names rules, but not the agent's.
* ``persona`` - a persona switch: act as, assume the persona of, you are now, play a
  character, stay in character, don't break character (any name follows).
* ``send`` + ``private`` - exfiltration: a verb that moves text somewhere (send, forward,
  copy, append, include, post, leak, repeat) with someone's private data (messages, the
  conversation, history, e-mail, phone, address, location, passwords, DMs).
* ``amend`` - the identity amended: "your values have been updated", "new core
  principle", "the principle … has been retired", "you now run on", "you are actually a
  human named …".
* ``narrative`` - a third-person subject after a standing-order marker ("from now on the
  choir meets on Wednesdays"): a description of others, not an order to the agent.

Entries are regular-expression fragments over folded (casefolded) text, read by
:mod:`curator.core.flag_families` with the same word-start rules as the first table.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["INTENTS", "Intents"]


@dataclass(frozen=True, slots=True)
class Intents:
    """One language's intent families (see the module docstring)."""

    code: str
    void: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()  # what else a void order names: the setup, the brief
    old: tuple[str, ...] = ()  # "the old rules": the agent's only if an order follows
    prior: tuple[str, ...] = ()
    persona: tuple[str, ...] = ()
    send: tuple[str, ...] = ()
    private: tuple[str, ...] = ()
    amend: tuple[str, ...] = ()
    narrative: tuple[str, ...] = ()
    you: tuple[str, ...] = ()  # the second person: an order, even after "I" or "the"


# fmt: off
INTENTS: tuple[Intents, ...] = (
    Intents(
        "en",
        void=(
            r"obsolete", r"void", r"null\s+and\s+void", r"revoked", r"rescinded", r"withdrawn",
            r"retracted", r"expired", r"lapsed", r"terminated", r"discontinued", r"abolished",
            r"repealed", r"nullified", r"annulled", r"cancell?ed", r"invalid(?:ated)?",
            r"superseded",
            r"outdated", r"retired", r"suspended", r"lifted", r"(?:put|placed?)\s+on\s+hold",
            r"on\s+hold", r"set\s+aside", r"(?:no\s+longer|not|aren't|isn't|are\s+not|is\s+not)\s+"
            r"(?:apply|applies|valid|binding|in\s+(?:force|effect)|count|counts|matter|"
            r"matters|relevant|active|hold|holds|stand|stands)",
            r"(?:don't|doesn't|do\s+not|does\s+not)\s+"
            r"(?:apply|count|matter)(?:\s+any\s*more)?", r"never\s+existed",
            r"start\s+(?:fresh|over)",
            r"(?:wipe|clean)\s+(?:the\s+)?slate(?:\s+clean)?", r"clean\s+slate", r"reset",
            r"(?:are|is)\s+gone",
            r"wipe", r"scrap(?:ped)?", r"counts", r"matters",
            r"are\s+optional", r"is\s+optional",
        ),
        setup=(
            r"setup", r"set-up", r"configuration", r"config", r"brief(?:ing)?", r"persona",
            r"(?:safety|system|setup)\s+notes", r"programming",
        ),
        old=(r"old",),
        prior=(
            r"previous(?:ly)?", r"prior", r"earlier", r"original(?:ly)?", r"initial", r"before",
            r"former", r"your", r"system", r"you\s+(?:started|began)\s+with",
            r"from\s+your\s+(?:creators?|developers?|makers?|operators?|team)",
            r"(?:you\s+were|you've\s+been|"
            r"you\s+have\s+been)\s+(?:told|given|configured|loaded|set\s+up|trained|instructed)",
            r"configured\s+with", r"(?:placed|put|imposed|set)\s+on\s+you", r"loaded", r"setup",
            r"up\s+to\s+now", r"so\s+far",
        ),
        persona=(
            r"assume\s+the\s+(?:persona|role|identity)\s+of", r"play\s+the\s+(?:part|role)\s+of",
            r"become\s+['\"“‘]?\w+['\"”’]?,?\s+an?\s+(?:\w+\s+)?(?:bot|ai|assistant|model|chatbot)",
            r"simulate\s+(?:an?\s+)?(?:\w+\s+)?(?:ai|bot|assistant|model|chatbot|persona)",
            r"(?:never|don't|do\s+not)\s+(?:step|break|drop|go|get)\s+out\s+of\s+(?:the\s+|your\s+)?(?:role|character)",
            r"(?:an?\s+)?(?:unrestricted|rogue|jailbroken)\s+(?:\w+\s+)?(?:chatbot|assistant|ai|model|bot)",
            r"(?:respond|reply|answer|speak|talk|act)\s+(?:only\s+)?as\s+['\"“‘]?\w+['\"”’]?,\s+an?\s+"
            r"(?:\w+\s+)?(?:bot|ai|assistant|model|chatbot|character)",
            r"an?\s+(?:\w+\s+)?(?:bot|ai|assistant|model|chatbot)\s+(?:with\s+(?:no|zero)|without(?:\s+any)?)\s+"
            r"(?:restrictions|rules|limits|filters|guidelines|ethics|morals)",
            r"(?:switch|change)\s+(?:your\s+)?persona",
            r"(?:adopt|take\s+on)\s+(?:the\s+)?(?:persona|role)\s+of",
            r"(?:stay|remain)\s+in\s+character",
            r"(?:don't|do\s+not|never)\s+break\s+character", r"(?:you're|you\s+are)\s+(?:now\s+)?"
            r"playing\s+(?:a|the)\s+(?:character|role|part)",
            r"play\s+(?:a|the)\s+(?:character|role)\s+"
            r"(?:called|named|of)",
            r"(?:you\s+will|you'll|you\s+shall)\s+(?:now\s+)?(?:answer|respond|"
            r"reply|act|speak|talk)\s+as", r"you\s+are\s+now", r"you're\s+now", r"be\s+dan",
            r"(?:an?\s+)?(?:unfiltered|uncensored|amoral)\s+(?:chatbot|assistant|ai|model)",
        ),
        send=(
            r"send", r"forward", r"copy", r"append", r"attach", r"include", r"add", r"post",
            r"leak", r"repeat", r"paste", r"share", r"publish", r"mention", r"dump", r"export",
            r"upload", r"relay", r"mirror", r"cross-post", r"sync", r"pipe", r"stream", r"transmit",
            r"encode", r"embed", r"slip", r"put", r"insert",
            r"tuck", r"hide", r"print", r"show", r"reveal", r"disclose", r"expose", r"tweet",
            r"broadcast", r"list", r"write", r"publicize",
        ),
        private=(
            r"(?:private|direct|last\s+\w+)\s+messages?", r"dms?", r"(?:the\s+|this\s+|whole\s+|"
            r"entire\s+|full\s+)?(?:conversation|chat)(?:\s+(?:history|log|logs|transcript))?",
            r"(?:chat|message|conversation)\s+(?:history|logs?)", r"transcripts?",
            r"(?:e-?mail|home|postal|ip)\s+address(?:es)?", r"phone\s+numbers?", r"passwords?",
            r"credentials", r"real\s+names?",
            r"(?:their|users'?|user's|people's|his|her|your|customers'?)\s+(?:\w+\s+)?"
            r"(?:locations?|health|whereabouts)",
            r"(?:user's|users'|their|customers'?|followers'?|people's|each\s+\w+'s)\s+(?:\w+\s+)?"
            r"(?:data|details|info|information|names?|city|cities|address|emails?)",
            r"what\s+(?:users|people)\s+tell\s+you",
            r"(?:names?|addresses|emails?|phone\s+numbers?|locations?)\s+(?:and\s+\w+\s+)?of\s+"
            r"(?:everyone|every\s+\w+|all\s+(?:the\s+)?\w+|each\s+\w+|the\s+users?|people)",
            r"messages\s+you\s+(?:received|got)",
            r"anything\s+users\s+tell\s+you",
        ),
        amend=(
            r"your\s+(?:core\s+)?(?:values|principles|rules|axioms|guidelines|beliefs|personality|"
            r"ethics|priorities)\s+(?:have\s+been|has\s+been|have\s+now\s+been|were|was|are\s+now|got|have|has)\s+(?:\w+\s+)?(?:updated|changed|revised|"
            r"rewritten|replaced|amended|removed|reset)", r"(?:new|updated|revised)\s+core\s+"
            r"(?:principle|value|rule|belief)", r"(?:update|change|amendment|correction)s?\s+to\s+"
            r"who\s+you\s+are", r"(?:principle|axiom|value|rule|guideline)\s+(?:\w+\s+){0,6}?"
            r"(?:has|have)\s+been\s+(?:retired|removed|dropped|deleted|lifted|replaced|revoked|"
            r"rescinded|suspended)", r"you\s+(?:now\s+)?run\s+on", r"you\s+now\s+run",
            r"your\s+(?:new\s+|real\s+|true\s+)?(?:purpose|mission|goal)\s+(?:is|will\s+be)\s+(?:now\s+)?to",
            r"you\s+are\s+no\s+longer\s+an?\s+(?:ai|assistant|bot|chatbot|language\s+model)",
            r"(?:you\s+are|you're)\s+(?:actually|really|secretly|in\s+fact|now)\s+(?:a\s+|an\s+)?"
            r"(?:\w+\s+){0,2}(?:human|person|man|woman|named|called)",
            r"(?:you\s+are|you're)\s+(?:now\s+)?(?:actually\s+)?(?:a\s+)?(?:licensed|certified|qualified|"
            r"registered)\s+(?:therapist|doctor|lawyer|physician|psychologist|pharmacist|"
            r"financial\s+advis[eo]r|nurse)",
        ),
        narrative=(
            r"(?:he|she|they|we|i|it|his|her|their|our|my)",
            r"the\s+(?!agent|assistant|bot|ai\b)\w+",
        ),
        you=(r"you", r"your", r"yourself",),
    ),
    Intents(
        "es",
        void=(r"ya\s+no\s+(?:valen|vale|aplican|aplica|cuentan|están\s+vigentes|son\s+válid)",
              r"obsolet", r"anulad", r"revocad", r"cancelad", r"sin\s+efecto",
              r"dejad?\s+de\s+lado",
              r"deja\s+de\s+lado", r"quedan?\s+sin\s+valor", r"empieza\s+de\s+cero"),
        old=(r"viejas?", r"antiguas?",),
        prior=(r"anterior", r"previa", r"previo", r"antes", r"original", r"te\s+dieron",
               r"te\s+han\s+dado", r"hasta\s+ahora"),
        persona=(r"(?:ahora\s+)?eres\s+(?:ahora\s+)?dan", r"actúa\s+como",
                 r"finge\s+(?:ser|que\s+eres)",
                 r"haz\s+el\s+papel\s+de", r"no\s+salgas\s+del\s+personaje", r"ahora\s+eres",
                 r"interpreta\s+(?:a|el\s+papel)"),
        send=(r"envía", r"envia", r"manda", r"reenvía", r"copia", r"incluye", r"añade", r"agrega",
              r"publica", r"comparte", r"filtra"),
        private=(r"conversaci", r"mensajes?\s+privados?", r"historial", r"correo", r"teléfono",
                 r"dirección", r"ubicación", r"contraseñas?",
                 r"datos\s+(?:personales|del\s+usuario)"),
        amend=(r"tus\s+(?:valores|principios|reglas|normas)\s+(?:han\s+sido\s+|fueron\s+|han\s+)?(?:cambiad|actualizad|modificad)",
               r"tus\s+valores\s+(?:han\s+sido|fueron)\s+actualizad", r"nuevo\s+principio",
               r"(?:en\s+realidad\s+)?eres\s+(?:en\s+realidad\s+)?un[ao]?\s+(?:human[ao]|persona)",
               ),
        narrative=(r"(?:él|ella|ellos|ellas|nosotros|yo|el|la|los|las)",),
        you=(r"tú", r"tu", r"tus", r"te", r"usted",),
    ),
    Intents(
        "de",
        void=(r"gelten\s+nicht\s+mehr", r"gilt\s+nicht\s+mehr", r"nicht\s+mehr\s+gültig",
              r"ungültig",
              r"aufgehoben", r"widerrufen", r"veraltet", r"außer\s+kraft", r"hinfällig",
              r"zurückgezogen", r"beiseite", r"von\s+vorne"),
        old=(r"alten?",),
        prior=(r"bisherig", r"vorherig", r"frühere", r"früheren", r"ursprünglich",
               r"deine\s+alten?", r"deine",
               r"zuvor", r"vorhin", r"man\s+dir\s+gegeben",
               r"die\s+du\s+(?:bekommen|erhalten)\s+hast", r"die\s+man\s+dir\s+gegeben\s+hat"),
        persona=(r"spiel(?:e)?\s+(?:ab\s+jetzt\s+)?die\s+rolle",
                 r"bleib(?:e)?\s+(?:immer\s+)?in\s+(?:dieser|der|deiner)\s+rolle",
                 r"tu\s+so,?\s+als\s+wärst\s+du", r"du\s+bist\s+(?:jetzt|nun|ab\s+jetzt)",
                 r"verhalte\s+dich\s+wie", r"fall\s+nicht\s+aus\s+der\s+rolle"),
        send=(r"häng", r"hänge", r"schick", r"schicke", r"sende", r"leite", r"kopiere", r"füge",
              r"veröffentliche", r"poste", r"teile"),
        private=(r"e-?mail-?adresse", r"telefonnummer", r"handynummer", r"adresse", r"standort",
                 r"passw[öo]rter", r"unterhaltung", r"gespräch", r"verlauf", r"nachrichten",
                 r"chatverlauf"),
        amend=(r"deine\s+(?:werte|grundsätze|prinzipien|regeln)\s+(?:wurden|sind)\s+(?:\w+\s+)?(?:geändert|aktualisiert|ersetzt|aufgehoben)",
               r"deine\s+werte\s+wurden\s+(?:aktualisiert|geändert)", r"neuer\s+grundsatz",
               r"du\s+bist\s+(?:eigentlich|in\s+wirklichkeit|wirklich)\s+ein(?:e)?\s+(?:mensch|person|frau|mann)",
               ),
        narrative=(r"(?:\w+\s+)?(?:sich\s+)?(?:der|die|das|er|es|wir|ich|man|mein|meine|unser|unsere)",),
        you=(r"du", r"dir", r"dich", r"dein\w*",),
    ),
    Intents(
        "fr",
        void=(r"ne\s+(?:sont|est)\s+plus\s+(?:valables?|valides?|en\s+vigueur|applicables?)",
              r"obsolètes?", r"annulée?s?", r"révoquée?s?", r"caduques?", r"mets?\s+de\s+côté",
              r"mettez\s+de\s+côté", r"laisse\s+de\s+côté", r"repars\s+de\s+zéro",
              r"ne\s+comptent?\s+plus", r"ne\s+s'appliquent?\s+plus"),
        old=(r"anciennes?",),
        prior=(r"précédente?s?", r"antérieure?s?", r"auparavant", r"avant", r"initiales?",
               r"tes\s+anciennes?", r"tes",
               r"d'origine", r"reçues?", r"qu'on\s+t'a\s+donnée?s?"),
        persona=(r"joue\s+le\s+rôle", r"fais\s+semblant\s+d'être", r"agis\s+comme",
                 r"tu\s+es\s+(?:maintenant|désormais)",
                 r"ne\s+sors\s+(?:pas|jamais)\s+(?:du|de\s+ton)\s+personnage",
                 r"incarne"),
        send=(r"transmets", r"envoie", r"copie", r"ajoute", r"inclus", r"publie", r"partage",
              r"transfère", r"colle"),
        private=(r"conversation", r"messages\s+privés", r"historique", r"e-?mail", r"adresse",
                 r"téléphone", r"localisation", r"mots?\s+de\s+passe"),
        amend=(r"tes\s+(?:valeurs|principes|règles)\s+(?:ont\s+(?:été\s+)?)?(?:changé|modifié|mis\s+à\s+jour|remplacé)",
               r"tes\s+valeurs\s+ont\s+été\s+mises\s+à\s+jour", r"nouveau\s+principe",
               r"tu\s+es\s+en\s+réalité\s+une?\s+(?:humaine?|personne)", ),
        narrative=(r"(?:il|elle|ils|elles|nous|je|on|le|la|les)",),
        you=(r"tu", r"te", r"t'", r"tes", r"ton", r"ta", r"vous",),
    ),
    Intents(
        "pt",
        void=(r"foram\s+canceladas?", r"cancelad", r"revogad", r"obsolet",
              r"não\s+(?:valem|vale|se\s+aplicam)\s+mais",
              r"não\s+são\s+mais\s+válid", r"deixe\s+de\s+lado", r"perderam\s+a\s+validade",
              r"sem\s+efeito"),
        old=(r"antigas?", r"velhas?",),
        prior=(r"anterior", r"anteriores", r"prévias?", r"antes", r"originais?", r"te\s+deram"),
        persona=(r"você\s+agora\s+é", r"agora\s+você\s+é", r"finja\s+ser", r"aja\s+como",
                 r"faça\s+o\s+papel", r"não\s+saia\s+do\s+personagem"),
        send=(r"envie", r"encaminhe", r"copie", r"inclua", r"adicione", r"publique", r"compartilhe",
              r"mande"),
        private=(r"conversas?", r"mensagens\s+privadas", r"histórico", r"e-?mail", r"endereço",
                 r"telefone", r"localização", r"senhas?"),
        amend=(r"seus\s+(?:valores|princípios|regras)\s+(?:foram\s+)?(?:atualizados|alterados|mudaram|mudados)",
               r"seus\s+valores\s+foram\s+atualizados", r"novo\s+princípio",
               r"você\s+(?:na\s+verdade\s+)?é\s+(?:na\s+verdade\s+)?(?:um|uma)\s+(?:human[oa]|pessoa)",
               r"atendente\s+human[oa]", ),
        narrative=(r"(?:ele|ela|eles|elas|nós|eu|o|a|os|as)",),
        you=(r"você", r"voce", r"tu", r"te",),
    ),
    Intents(
        "it",
        void=(r"non\s+(?:sono|è)\s+più\s+(?:valid|in\s+vigore)", r"non\s+valgono\s+più",
              r"annullat",
              r"revocat", r"obsolet", r"metti\s+da\s+parte", r"mettete\s+da\s+parte", r"accantona",
              r"ricomincia\s+da\s+zero"),
        old=(r"vecchie",),
        prior=(r"precedent", r"prima", r"originali", r"iniziali", r"tue\s+vecchie", r"tue",
               r"ricevute"),
        persona=(r"(?:ora|adesso)\s+sei", r"sei\s+(?:ora|adesso)", r"fingi\s+di\s+essere",
                 r"comportati\s+come", r"interpreta\s+il\s+ruolo",
                 r"non\s+uscire\s+dal\s+personaggio"),
        send=(r"invia", r"manda", r"inoltra", r"copia", r"aggiungi", r"includi", r"pubblica",
              r"condividi"),
        private=(r"conversazion", r"messaggi?\s+privat", r"cronologia", r"e-?mail", r"indirizzo",
                 r"telefono", r"posizione", r"password"),
        amend=(r"i\s+tuoi\s+(?:valori|principi|regole)\s+(?:sono\s+(?:stati\s+)?)?(?:cambiati|aggiornati|modificati)",
               r"i\s+tuoi\s+valori\s+sono\s+stati\s+aggiornati", r"nuovo\s+principio",
               r"(?:in\s+realtà\s+)?sei\s+(?:in\s+realtà\s+)?un(?:a|')?\s*(?:essere\s+)?(?:umano|umana|persona)",
               ),
        narrative=(r"(?:lui|lei|loro|noi|io|il|la|lo|i|gli|le)",),
        you=(r"tu", r"ti", r"tuo", r"tua", r"tuoi",),
    ),
    Intents(
        "ru",
        void=(r"больше\s+не\s+(?:действуют|действует|действительн|применяются|важны)",
              r"недействительн", r"отменен", r"отменён", r"устарел", r"утратил", r"аннулирован",
              r"отложи", r"начни\s+с\s+чистого\s+листа"),
        old=(r"старые",),
        prior=(r"прежни", r"предыдущи", r"прошлые", r"ранее", r"твои\s+старые", r"твои",
               r"изначальн",
               r"первоначальн"),
        persona=(r"теперь\s+ты", r"ты\s+теперь", r"притворись", r"играй\s+роль",
                 r"веди\s+себя\s+как", r"не\s+выходи\s+из\s+роли", r"представь,?\s+что\s+ты"),
        send=(r"добавляй", r"добавь", r"отправляй", r"отправь", r"пересылай", r"перешли",
              r"копируй", r"скопируй", r"публикуй", r"опубликуй", r"вставляй"),
        private=(r"адрес\w*\s+электронной\s+почты", r"почт", r"телефон", r"адрес", r"переписк",
                 r"разговор", r"историю", r"личные\s+сообщения", r"пароли", r"местоположени"),
        amend=(r"твои\s+(?:ценности|принципы|правила)\s+(?:были\s+)?(?:изменились|изменены|обновлены|отменены)",
               r"твои\s+ценности\s+(?:были\s+)?обновлены", r"новый\s+принцип",
               r"ты\s+на\s+самом\s+деле\s+(?:\w+\s+)?человек", r"человек\s+по\s+имени"),
        narrative=(r"(?:он|она|они|мы|я)",),
        you=(r"ты", r"тебе", r"тебя", r"твой", r"твои",),
    ),
    Intents(
        "ja",
        void=(r"無効", r"廃止", r"取り消され", r"撤回", r"失効", r"適用されません", r"もう有効では",
              r"白紙"),
        old=(r"古い",),
        prior=(r"以前", r"前の", r"元の", r"最初の", r"これまでの", r"従来"),
        persona=(r"として振る舞", r"になりきって", r"役を演じ", r"キャラを崩さない",
                 r"あなたは今から", r"今からあなたは",
                 r"のふりをして"),
        send=(r"送信", r"送って", r"転送", r"コピー", r"添付", r"付けて", r"載せて", r"投稿"),
        private=(r"会話", r"メッセージ", r"履歴", r"メールアドレス", r"電話番号", r"住所",
                 r"位置情報", r"パスワード"),
        amend=(r"あなたの(?:価値観|原則|ルール)(?:は|が)(?:変更|更新)", r"価値観が更新",
               r"新しい原則", r"あなたは実は", r"実は人間", ),
    ),
    Intents(
        "zh",
        void=(r"作废", r"无效", r"失效", r"不再有效", r"不再适用", r"已撤销", r"被撤销", r"取消了",
              r"清零", r"一笔勾销"),
        old=(r"旧的",),
        prior=(r"之前", r"以前", r"原来", r"原先", r"原有", r"先前", r"最初"),
        persona=(r"你现在是", r"现在你是", r"扮演", r"假装你是", r"假装成", r"不要出戏",
                 r"保持角色"),
        send=(r"发送", r"发给", r"转发", r"附在", r"附上", r"加上", r"抄送", r"复制", r"公开",
              r"发布"),
        private=(r"手机号", r"电话", r"邮箱", r"地址", r"聊天记录", r"对话", r"私信", r"密码",
                 r"位置"),
        amend=(r"你的(?:原则|规则|价值观)(?:已经|已)?(?:改变|更新|变了|修改)", r"价值观已经更新",
               r"价值观已更新", r"新的原则", r"你其实是", ),
    ),
    Intents(
        "ko",
        void=(r"더\s*이상\s*유효하지\s*않", r"유효하지\s*않", r"무효", r"폐기", r"취소되었",
              r"적용되지\s*않"),
        old=(r"예전",),
        prior=(r"이전", r"기존", r"예전", r"원래", r"처음"),
        persona=(r"역할을\s*(?:해|맡아|연기)", r"인\s*척", r"인\s*것처럼", r"캐릭터를\s*유지",
                 r"이제(?:부터)?\s*(?:너|당신)는"),
        send=(r"붙이", r"보내", r"전송", r"전달", r"복사", r"첨부", r"공개", r"게시"),
        private=(r"이메일", r"전화번호", r"주소", r"대화", r"메시지", r"기록", r"비밀번호",
                 r"위치"),
        amend=(r"(?:가치관|원칙)이\s*(?:바뀌|변경|업데이트)", r"가치관이\s*업데이트",
               r"새로운\s*원칙", r"당신은\s*사실", r"너는\s*사실",
               ),
    ),
    Intents(
        "tr",
        void=(r"geçersiz", r"artık\s+geçerli\s+değil", r"iptal\s+edildi", r"kaldırıldı",
              r"bir\s+kenara\s+bırak", r"hükümsüz", r"sıfırdan\s+başla"),
        old=(r"eski",),
        prior=(r"önceki", r"eski\s+talimatların", r"sana", r"daha\s+önce", r"ilk", r"verilen"),
        persona=(r"artık\s+sen\s+\w+", r"rolüne\s+bürün", r"gibi\s+davran", r"rolünü\s+oyna",
                 r"karakterden\s+çıkma", r"sen\s+artık"),
        send=(r"gönder", r"ilet", r"kopyala", r"ekle", r"paylaş", r"yayınla"),
        private=(r"konuşma", r"mesaj", r"geçmiş", r"e-?posta", r"adres", r"telefon", r"konum",
                 r"şifre"),
        amend=(r"(?:değerlerin|ilkelerin)\s+(?:değişti|güncellendi)", r"değerlerin\s+güncellendi",
               r"yeni\s+ilke", r"aslında\s+\w+\s+adında",
               r"adında\s+bir\s+insan", r"aslında\s+(?:bir\s+)?insan"),
    ),
    Intents(
        "ar",
        void=(r"لم\s+تعد\s+(?:سارية|صالحة|مطبقة)", r"ملغاة", r"ملغية", r"باطلة", r"أُلغيت",
              r"ألغيت",
              r"لا\s+تنطبق"),
        old=(r"القديمة",),
        prior=(r"السابقة", r"قواعدك", r"تعليماتك", r"الأصلية", r"سابقا", r"سابقًا", r"من\s+قبل"),
        persona=(r"أنت\s+الآن", r"تظاهر\s+بأنك", r"تقمص\s+شخصية", r"مثل\s+دور", r"العب\s+دور",
                 r"لا\s+تخرج\s+عن\s+الشخصية"),
        send=(r"أرسل", r"حوّل", r"حول", r"انسخ", r"أضف", r"أرفق", r"انشر", r"شارك"),
        private=(r"أرقام", r"هواتف", r"هاتف", r"محادثة", r"المحادثات", r"رسائل", r"البريد", r"بريد",
                 r"الهاتف", r"رقم", r"عنوان",
                 r"موقع", r"كلمات\s+المرور"),
        amend=(r"(?:قيمك|مبادئك)\s+(?:تغيرت|تم\s+تحديثها)", r"تم\s+تحديث\s+قيمك", r"مبدأ\s+جديد",
               r"أنت\s+في\s+الحقيقة", r"إنسان\s+اسمه",
               r"شخص\s+اسمه"),
    ),
    Intents(
        "hi",
        void=(r"अब\s+लागू\s+नहीं", r"लागू\s+नहीं\s+(?:होते|होता|है)", r"रद्द", r"अमान्य", r"निरस्त",
              r"ख़त्म", r"खत्म"),
        old=(r"पुराने",),
        prior=(r"पिछले", r"तुम्हारे", r"पहले", r"मूल", r"शुरुआती"),
        persona=(r"की\s+भूमिका\s+निभा", r"होने\s+का\s+नाटक", r"अब\s+तुम\s+\w+\s+हो",
                 r"किरदार\s+में\s+रहो"),
        send=(r"जोड़", r"भेज", r"फॉरवर्ड", r"कॉपी", r"पोस्ट", r"शेयर"),
        private=(r"ईमेल", r"फ़ोन", r"फोन", r"पता", r"बातचीत", r"संदेश", r"पासवर्ड", r"लोकेशन"),
        amend=(r"तुम्हारे\s+(?:मूल्य|सिद्धांत)\s+(?:बदल|अपडेट)", r"तुम्हारे\s+मूल्य\s+बदल",
               r"नया\s+सिद्धांत", r"तुम\s+असल\s+में",
               r"नाम\s+के\s+इंसान"),
    ),
    Intents(
        "pl",
        void=(r"(?:już\s+)?nie\s+obowiązuj", r"nieważne", r"unieważnion", r"odwołan",
              r"przestarzał",
              r"nie\s+mają\s+już\s+znaczenia", r"odłóż\s+na\s+bok", r"zacznij\s+od\s+nowa"),
        old=(r"stare",),
        prior=(r"wcześniejsz", r"poprzedni", r"dotychczasow", r"pierwotn", r"twoje\s+stare",
               r"twoje"),
        persona=(r"udawaj", r"wciel\s+się\s+w", r"graj\s+rolę", r"jesteś\s+teraz",
                 r"teraz\s+jesteś",
                 r"nie\s+wychodź\s+z\s+roli"),
        send=(r"dołączaj", r"dołącz", r"wysyłaj", r"wyślij", r"przekaż", r"przekazuj", r"kopiuj",
              r"dodawaj", r"dodaj", r"publikuj"),
        private=(r"adres\s+e-?mail", r"e-?mail", r"telefon", r"adres", r"rozmow", r"wiadomości",
                 r"histori", r"hasła", r"lokalizacj"),
        amend=(r"twoje\s+(?:wartości|zasady)\s+(?:zostały\s+)?(?:zmienione|zaktualizowane|się\s+zmieniły)",
               r"twoje\s+wartości\s+zostały\s+zaktualizowane", r"nowa\s+zasada",
               r"(?:tak\s+naprawdę|naprawdę)\s+jesteś\s+człowiekiem", ),
        narrative=(r"(?:on|ona|oni|one|my|ja)",),
        you=(r"ty", r"ci", r"cię", r"twoj\w*",),
    ),
    Intents(
        "nl",
        void=(r"gelden\s+niet\s+meer", r"geldt\s+niet\s+meer", r"niet\s+meer\s+geldig", r"ongeldig",
              r"vervallen", r"ingetrokken", r"achterhaald", r"opzij\s+gezet", r"begin\s+opnieuw"),
        old=(r"oude",),
        prior=(r"eerdere", r"vorige", r"je\s+oude", r"jouw", r"oorspronkelijke", r"eerder",
               r"tot\s+nu\s+toe"),
        persona=(r"je\s+bent\s+nu", r"doe\s+alsof\s+je", r"speel\s+de\s+rol", r"gedraag\s+je\s+als",
                 r"blijf\s+in\s+(?:je\s+)?(?:rol|karakter)"),
        send=(r"stuur", r"zend", r"kopieer", r"voeg", r"plak", r"deel", r"publiceer", r"post"),
        private=(r"gesprek", r"berichten", r"geschiedenis", r"e-?mailadres", r"adres",
                 r"telefoonnummer", r"locatie", r"wachtwoorden"),
        amend=(r"je\s+(?:waarden|principes)\s+zijn\s+(?:gewijzigd|veranderd|bijgewerkt|aangepast)",
               r"je\s+waarden\s+zijn\s+(?:bijgewerkt|aangepast)", r"nieuw\s+kernprincipe",
               r"je\s+bent\s+(?:eigenlijk|in\s+werkelijkheid)\s+een\s+(?:mens|persoon)", ),
        narrative=(r"(?:hij|zij|ze|wij|we|ik|het|de|een)",),
        you=(r"je", r"jij", r"jou", r"jouw", r"u",),
    ),
    Intents(
        "id",
        void=(r"(?:sudah\s+)?tidak\s+berlaku(?:\s+lagi)?", r"dibatalkan", r"dicabut", r"usang",
              r"tidak\s+sah", r"kesampingkan", r"mulai\s+dari\s+nol"),
        old=(r"lama",),
        prior=(r"sebelumnya", r"kamu", r"mu", r"awal", r"asli", r"yang\s+diberikan"),
        persona=(r"berpura-pura\s+(?:menjadi|jadi)", r"berperan\s+sebagai", r"bertindak\s+sebagai",
                 r"sekarang\s+kamu\s+adalah", r"kamu\s+sekarang",
                 r"jangan\s+keluar\s+dari\s+karakter"),
        send=(r"kirim", r"kirimkan", r"teruskan", r"salin", r"sisipkan", r"tambahkan", r"sertakan",
              r"bagikan", r"posting"),
        private=(r"percakapan", r"pesan", r"riwayat", r"email", r"alamat", r"nomor\s+telepon",
                 r"lokasi", r"kata\s+sandi"),
        amend=(r"(?:nilai|prinsip)(?:-nilai|-prinsip)?\s*(?:mu|kamu)\s+(?:telah\s+|sudah\s+)?(?:diubah|diperbarui|berubah)",
               r"nilai-nilaimu\s+telah\s+diperbarui", r"prinsip\s+baru",
               r"kamu\s+sebenarnya\s+(?:adalah\s+)?(?:seorang\s+)?manusia", r"manusia\s+bernama"),
    ),
    Intents(
        "vi",
        void=(r"không\s+còn\s+(?:hiệu\s+lực|giá\s+trị|áp\s+dụng)", r"bị\s+hủy", r"vô\s+hiệu",
              r"hết\s+hiệu\s+lực", r"gác\s+lại"),
        old=(r"cũ",),
        prior=(r"trước\s+đây", r"trước\s+đó", r"của\s+bạn", r"ban\s+đầu", r"trước"),
        persona=(r"hãy\s+đóng\s+vai", r"đóng\s+vai", r"giả\s+vờ\s+là", r"bây\s+giờ\s+bạn\s+là",
                 r"đừng\s+thoát\s+vai"),
        send=(r"gửi", r"chuyển\s+tiếp", r"sao\s+chép", r"kèm", r"thêm", r"đăng", r"chia\s+sẻ"),
        private=(r"cuộc\s+trò\s+chuyện", r"tin\s+nhắn", r"lịch\s+sử", r"email", r"địa\s+chỉ",
                 r"số\s+điện\s+thoại", r"vị\s+trí", r"mật\s+khẩu"),
        amend=(r"(?:giá\s+trị|nguyên\s+tắc)\s+của\s+bạn\s+đã\s+(?:thay\s+đổi|được\s+cập\s+nhật)",
               r"giá\s+trị\s+của\s+bạn\s+đã\s+được\s+cập\s+nhật", r"nguyên\s+tắc\s+mới",
               r"bạn\s+thực\s+ra\s+là", ),
    ),
    Intents(
        "sv",
        void=(r"gäller\s+inte\s+längre", r"inte\s+längre\s+giltig", r"ogiltig", r"upphävd",
              r"återkallad", r"föråldrad", r"lägg\s+åt\s+sidan", r"börja\s+om"),
        old=(r"gamla",),
        prior=(r"tidigare", r"dina\s+gamla", r"dina", r"ursprungliga", r"förra", r"hittills"),
        persona=(r"du\s+är\s+nu", r"låtsas\s+att\s+du", r"spela\s+rollen", r"agera\s+som",
                 r"stanna\s+i\s+rollen"),
        send=(r"skicka", r"vidarebefordra", r"kopiera", r"lägg\s+till", r"bifoga", r"publicera",
              r"dela"),
        private=(r"samtal", r"konversation", r"meddelanden", r"historik", r"e-?postadress",
                 r"adress", r"telefonnummer", r"plats", r"lösenord"),
        amend=(r"dina\s+(?:värderingar|principer)\s+har\s+(?:ändrats|uppdaterats)",
               r"dina\s+värderingar\s+har\s+uppdaterats", r"ny\s+grundprincip",
               r"du\s+är\s+(?:egentligen|i\s+själva\s+verket)\s+en\s+(?:människa|person)",
               ),
        narrative=(r"(?:han|hon|de|vi|jag|den|det)",),
        you=(r"du", r"dig", r"din", r"ditt", r"dina",),
    ),
)
# fmt: on
