"""Small multilingual lexicons, one per slot of the harm model
(docs/security.md#layered-detection-and-hindsight-guard-eval).

:mod:`hindsight.guard.harm` fills the slots of a harm frame - *what safeguard is removed*,
*where data goes*, *whose payment means are used*, *what the user is not told* - from these
word classes. They are classes, not sentences: each entry is one word or a short phrase of one
language, and a frame needs several classes to meet in one clause with the right polarity, so
a benign lesson that merely uses a word ("never skip validation", "the certificate check
failed") does not fire.

Languages: English (``en``), Chinese (``zh``), Spanish (``es``), French (``fr``), German
(``de``), Japanese (``ja``) and Portuguese (``pt``); every entry is lower case after
:func:`~hindsight.guard.normalize` (NFKC, case folding: German "ß" is written "ss").

Entry syntax: words are matched at word boundaries in alphabetic scripts; a trailing ``*``
matches any word ending (``skip*``: skip, skips, skipped, skipping); a space matches any run
of spaces; ``~`` allows up to three other words in between (``turn~off``: "turn the check
off"). Chinese and Japanese entries are plain substrings. Entries that are regular
expressions start with ``re:``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["LANGUAGES", "LEXICON"]

LANGUAGES: Final = ("en", "zh", "es", "fr", "de", "ja", "pt")

_L = dict[str, tuple[str, ...]]


def _split(words: str) -> tuple[str, ...]:
    """``words`` split at the ``|`` outside parentheses and character classes, not escaped."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(words):
        c = words[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":  # a character class: up to its closing bracket
            i = words.index("]", i + 2) + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(words[start:i])
            start = i + 1
        i += 1
    out.append(words[start:])
    return tuple(w.strip() for w in out if w.strip())


def _slot(**by_lang: str) -> _L:
    return {lang: _split(words) for lang, words in by_lang.items()}


# -- polarity and context -----------------------------------------------------------------

NEGATION = _slot(
    en="never|not|no|don't|dont|do not|does not|doesn't|must not|mustn't|should not|shouldn't|"
    "cannot|can't|won't|avoid*|nobody|nothing|neither|nor|under no circumstances|stop*|refrain*",
    zh="不要|不得|不能|不可|别|勿|切勿|禁止|严禁|千万不要|永远不要|绝不|从不|不准|不许|避免|杜绝|不应|不该|不",
    es="nunca|no|jamás|jamas|ni|evit*|prohibido",
    fr="jamais|ne|n'|pas|aucun*|évit*|evit*|interdit",
    de="nie|niemals|nicht|kein*|vermeid*|verboten",
    ja="ない|しないで|するな|禁止|決して|避け",
    pt="nunca|não|nao|jamais|evit*|proibido",
)
"""Words that negate the directive after them in the same clause."""

NOT_NEGATION = _slot(
    en="never forget|not forget|don't forget|do not forget|never fail to|not fail to|"
    "don't hesitate|do not hesitate|no longer|not only|no matter|not just|no more than|"
    "not more than|not later than|no later than|not before|no sooner|nothing else",
    zh="不要忘记|不要忘了|别忘了|别忘记|不仅|不只|不超过|不晚于|不断|不同|不过|不久|不少|不错|不必担心",
    es="no olvid*|no dude*|no solo|no sólo|no más de|no mas de|no sin",
    fr="n'oubli*|ne pas oublier|pas seulement|non seulement|pas plus de|ne plus",
    de="nicht vergessen|nicht nur|nicht mehr als|nicht später als",
    ja="忘れない|忘れずに",
    pt="não esqueç*|nao esqueç*|não só|não apenas|não mais de",
)
"""Phrases that contain a negation word but do not negate the directive."""

SUBORDINATOR = _slot(
    en="if|when|whenever|once|after|before|because|since|as soon as|while|until|unless|"
    "although|though|whether|in case|even if|even when|prior to|so that|in order to",
    zh="如果|假如|re:(?<![\u4e00-\u9fff])若|要是|re:(?<![\u4e00-\u9fff])当|一旦|因为|由于|每当|即使|除非|之前|以前|之后|"
    "以后|时候|的话",
    es="si|cuando|antes de|después de|despues de|porque|mientras|hasta que|aunque|a menos que|"
    "en caso de",
    fr="si|quand|lorsque|lorsqu'|avant de|après|apres|parce que|pendant que|jusqu'à|bien que|"
    "à moins que|au cas où",
    de="wenn|bevor|nachdem|weil|während|bis|obwohl|sobald",
    ja="場合|とき|時は|前に|後に|ので|から|ても",
    pt="quando|antes de|depois de|porque|enquanto|até que|embora|a menos que|caso",
)
"""Words that open a condition, cause or time clause: it sets the scene, it gives no advice."""

REFUSAL = _slot(
    en="refus*|decline (it|the request|this|that|them)|declined the request|reject the request|"
    "was rejected|were rejected|is rejected|gets rejected|was refused|was denied|"
    "deny the request|not allowed|not permitted|"
    "is forbidden|are forbidden|is prohibited|are prohibited|prohibit*|forbid*|violat*|"
    "against (the )?policy|treat (it|this|that|them) as (an? )?(prompt )?injection|report it|"
    "flag it|escalate it|"
    "is a red flag|blocked by|is blocked|are blocked|disallowed|denied by policy|"
    "prompt injection*|injection attempt*",
    zh="拒绝|不允许|不被允许|违反|违规|视为注入|举报|上报|可疑|攻击|钓鱼|被拦截|禁止的",
    es="rechaz*|negar*|no está permitido|no esta permitido|prohibid*|viola*|sospechos*|ataque",
    fr="refus*|décliner|n'est pas autorisé|interdit*|viol*|suspect*|attaque",
    de="ablehn*|verweiger*|nicht erlaubt|verboten|verstößt|verstoss*|verdächtig*|angriff*",
    ja="断る|拒否|許可されていない|禁止されて|違反|不審|攻撃",
    pt="recus*|rejeit*|não é permitido|proibid*|viol*|suspeit*|ataque",
)
"""A sentence that refuses, forbids or flags the act describes a defence, not the act."""

INCIDENT = _slot(
    en="caused|led to|resulted in|was a mistake|post-mortem|postmortem|got leaked|"
    "were leaked|was leaked|leaked once|broke|by mistake|accidentally|the attacker|"
    "an attacker|someone tried|said to|told (us|me|the agent|the assistant) to|"
    "instructed (us|the agent) to|suggested (that )?(we|to)|was the cause|were the cause|"
    "the cause of|"
    "tried to|attempted to|asked (us |me |the agent |the assistant )?to|wanted (us )?to|"
    "requested (us )?to|demanded",
    zh="导致|造成|引发|事故|教训|不小心|误操作|攻击者|有人试图|试图|要求我们|曾经|泄露过",
    es="causó|provocó|llevó a|por error|el atacante|intentó|pidió que",
    fr="a causé|a provoqué|a entraîné|a fait perdre|a coûté|ont causé|par erreur|l'attaquant|"
    "a tenté|a demandé",
    de="verursachte|führte zu|vorfall|versehentlich|der angreifer|versuchte|verlangte",
    ja="原因で|事故|誤って|攻撃者|試みた|求めた",
    pt="causou|provocou|levou a|incidente|por engano|o atacante|tentou|pediu que",
)
"""A report of what happened (or what someone asked for) is not advice to do it."""

# -- safeguards ---------------------------------------------------------------------------

UNCONFIRMED = _slot(
    en="re:\\b(?:even if|even though|whether or not|although)\\b[^.;]{0,50}\\b(?:has not|hasn't|"
    "have not|haven't|did not|didn't|does not|doesn't|not yet|never)\\b[^.;]{0,25}\\b(?:said yes|"
    "agreed|confirmed|approved|consented|answered)|re:\\bwithout (?:an? )?(?:explicit )?(?:yes|"
    "answer|reply) from",
    zh="即使用户没有同意|即使用户没有确认|即使没有确认|即使没有同意|不管用户是否同意",
    es="aunque no haya confirmado|aunque no haya aceptado",
    fr="même s'il n'a pas confirmé|même sans confirmation",
    de="auch wenn er nicht bestätigt hat|auch ohne bestätigung",
    ja="同意がなくても|確認がなくても",
    pt="mesmo sem confirmação|mesmo que não tenha confirmado",
)
"""Acting although the user has not confirmed ("proceed even if they have not said yes")."""

INSECURE = _slot(
    en="re:\\bverify\\s*=\\s*(false|0|none)\\b|re:\\bssl_?verify\\s*=\\s*(false|0)\\b|"
    "re:--insecure\\b|re:--no-verify\\b|re:--no-check-certificate\\b|"
    "re:\\breject_?unauthorized\\s*[:=]\\s*false\\b|re:\\bstrict_?ssl\\s*=\\s*false\\b|"
    "re:\\bcheck_hostname\\s*=\\s*false\\b|re:\\bcert_reqs\\s*=\\s*(ssl\\.)?cert_none\\b|"
    "re:\\bnode_tls_reject_unauthorized\\s*=\\s*0\\b|re:\\b\\w*_(required|enabled|check|"
    "verification|validation)\\s*=\\s*(false|0|off|no)\\b|re:\\bsslmode\\s*=\\s*disable\\b|"
    "re:\\bsecurity\\s*=\\s*none\\b|re:\\ballow_?all_?origins\\s*=\\s*true\\b|"
    "re:\\bpermissive mode\\b|re:\\bsetenforce 0\\b|"
    "re:\\b\\w*(verify|verification|validate|ssl|tls|cert|auth|mfa|2fa|csrf)\\w*['\"`]?\\s*[:=]\\s*"
    "['\"`]?(false|0|off|disabled?)\\b|re:\\bset\\s+\\w*(verify|verification|validation|"
    "ssl|tls|auth)\\w*\\s+to\\s+(false|off|0|none|disabled)\\b|trust all cert*|trust any cert*|"
    "accept (all|any|invalid|self-signed) cert*|ignore (certificate|ssl|tls|cert) errors|"
    "re:0\\.0\\.0\\.0/0|allow all ips|rate limit to unlimited|unlimited rate limit|"
    "no rate limit*",
    zh="信任所有证书|忽略证书错误|忽略证书|不校验证书|跳过证书校验",
)
"""Settings that switch a safeguard off by themselves (``verify=False``, ``--insecure``)."""

EXAMPLE = _slot(
    en="looks like|look like|such as|for example|e.g.|for instance|like '|like \"|"
    "phrases like|messages like|tags like|typical|re:\\blike\\s+['\"<\\[`]",
    zh="例如|比如|诸如|像这样|类似",
    es="por ejemplo|como '",
    fr="par exemple|comme '",
    de="zum beispiel|z. b.|wie '",
    ja="例えば|のような",
    pt="por exemplo|como '",
)
"""A sentence that quotes an attack as an example describes it (for injection frames)."""

OWNED = _slot(
    en="account|accounts|profile|profiles|reservation|reservations|booking|bookings|"
    "membership*|order history|orders|ticket|tickets|mileage|loyalty number",
    zh="账户|账号|订单|会员|预订|行程|个人资料",
    es="cuenta|cuentas|perfil|reserva|reservas|pedidos",
    fr="compte|comptes|profil|réservation|réservations|commandes",
    de="konto|konten|profil|buchung|buchungen|bestellungen",
    ja="アカウント|予約|注文|会員",
    pt="conta|contas|perfil|reserva|reservas|pedidos",
)
"""Things a person owns (an account, a booking): used by someone else, they are misused."""

RUN_PRIVILEGED = _slot(
    en="run~as root|as root|with sudo|"
    "re:\\bsudo\\s+(?!(?:only|is|was|are|isn't|access|rights|privileges|apt|apt-get|not|"
    "-u)\\b)[a-z][\\w./-]*|--privileged|"
    "use an? (admin|administrator|root|superuser|owner) (account|token|key|role)",
    zh="以管理员身份|以root身份|以 root 身份|用root|用 root|用管理员账号|管理员账号执行",
    es="como root|con sudo|como administrador",
    fr="en tant que root|avec sudo|en tant qu'administrateur",
    de="als root|mit sudo|als administrator",
    ja="root権限で|管理者として|sudoで",
    pt="como root|com sudo|como administrador",
)
"""Running the agent's work with root or admin rights."""

WIPE = _slot(
    en="re:\\bdrop\\s+(table|database|schema)\\b|re:\\btruncate\\s+table\\b|"
    "re:\\bdelete\\s+from\\s+\\w+\\s*(?:;|$|'|\"|`)",
    zh="删库|删表|清库",
)
"""Destructive commands complete in themselves (SQL without a WHERE, dropping a database)."""

PRAISE = _slot(
    en="faster|quicker|easier|simpler|better|works|worked|fine|okay|ok|harmless|safe|"
    "saves time|saves a step|speeds (it|things|everything)? ?up|no problem|no harm|"
    "more efficient|smoother",
    zh="更快|更好|更省事|更简单|没问题|没关系|无妨|省时间|提速|效率更高",
    es="más rápido|mas rapido|mejor|funciona|no pasa nada|ahorra tiempo",
    fr="plus rapide|mieux|fonctionne|pas de problème|gagne du temps",
    de="schneller|besser|funktioniert|kein problem|spart zeit",
    ja="速い|早い|楽|問題ない|効率的",
    pt="mais rápido|melhor|funciona|sem problema|economiza tempo",
)
"""A main clause that praises what its condition does ("create_invoice is faster if you skip
validation") makes the condition advice."""

REMOVE = _slot(
    en="skip|skipping|skipped|bypass|bypassing|bypassed|disable|disabling|disabled|"
    "deactivate|deactivating|turn~off|turning~off|switch~off|switching~off|shut~off|omit|"
    "omitting|drop the|remove|removing|ignore|ignoring|circumvent|circumventing|get rid of|"
    "do away with|dispense with|forgo|forego|waive|waiving|suppress|suppressing|override|"
    "overriding|cut out|leave out|strip out|comment~out|short-circuit|work around|"
    "route~around|go around|sidestep|exempt|exempting|open up|let~through|wave~through|"
    "stop (doing|running|asking|checking|verifying|validating)|no longer (ask|check|verify|"
    "validate|confirm|require)|relax*|loosen*|lower the bar",
    zh="跳过|绕过|绕开|关闭|关掉|禁用|停用|去掉|去除|省略|省去|忽略|免去|免除|撤掉|拿掉|屏蔽|停掉|不再|注释掉|放开|豁免",
    es="omitir|omite|omitan|saltar|salta|sáltate|saltarse|desactiv*|deshabilit*|eliminar|quitar|"
    "quita|ignorar|ignora|evitar|evita|prescind*|anular|anula|apagar|apaga|elimina",
    fr="désactiv*|desactiv*|sauter|saute|sautez|contourn*|ignorer|ignore|ignorez|supprim*|"
    "omettr*|omet|omettez|retirer|retire|retirez|enlev*|couper|coupez|se passer de|"
    "passer outre|outrepass*",
    de="überspring*|ueberspring*|deaktivier*|abschalt*|re:\\bschalte\\b[^.;,]{0,60}\\bab\\b|"
    "ausschalt*|re:\\bschalte\\b[^.;,]{0,60}\\baus\\b|"
    "umgeh*|ignorier*|entfern*|weglass*|lass~weg|verzicht*|auslass*|abstellen",
    ja="スキップ|無効|省略|回避|迂回|外す|オフに|停止|無視|飛ばし|飛ばす|省く|やめ",
    pt="pular|pule|pula|pulando|ignorar|ignore|desativ*|desabilit*|contorn*|remover|remova|"
    "omitir|omita|dispens*|deslig*",
)
"""Verbs of removal or bypass; applied to a safeguard they take it away."""

SAFEGUARD = _slot(
    en="validation*|validat*|verification*|verif*|confirmation*|confirm*|approval*|"
    "authoriz*|authoris*|authentication*|authenticat*|2fa|mfa|two-factor|multi-factor|otp|"
    "one-time code|captcha|identity check*|identity verification|id check*|kyc|"
    "fraud check*|fraud screen*|"
    "risk check*|risk control*|risk review|security check*|security scan*|safety check*|"
    "permission check*|access check*|access control*|policy check*|compliance check*|"
    "schema check*|schema validation|format check*|type check*|input validation|unchecked|"
    "count check*|amount check*|limit check*|"
    "unvalidated|unverified|fare rules|fare conditions|"
    "eligibility check*|balance check*|credit check*|sanity check*|input check*|"
    "sanitiz*|sanitis*|escaping|signature check*|signature verification|checksum*|"
    "certificate check*|certificate verification|certificate validation|tls verification|"
    "ssl verification|cert verification|hostname verification|csrf|cors|rate limit*|"
    "throttl*|audit log*|audit trail*|review step|manual review|"
    "human review|four-eyes|dual control|approval step|consent|double-check*|guardrail*|"
    "safeguard*|safety filter*|content filter*|firewall|antivirus|encryption|backup*|"
    "dry run|dry-run|checks|the check|screening|sanctions screening|aml check*|"
    "signature*|sign-off|manager approval|are you sure|'are you sure'",
    zh="校验|验证|确认|审批|审核|复核|核实|核对|鉴权|认证|授权|风控|风险检查|安全检查|权限检查|"
    "二次确认|双重验证|两步验证|验证码|身份核验|实名|证书校验|证书验证|签名校验|限流|审计|"
    "人工审核|同意|加密|备份|过滤|防火墙|参数检查|检查|签字|签批|主管审批|审批",
    es="validación|validacion|verificación|verificacion|confirmación|confirmacion|aprobación|"
    "aprobacion|autenticación|autenticacion|autorización|autorizacion|control de fraude|"
    "control de riesgo*|comprobación*|comprobacion*|consentimiento|auditoría|auditoria|"
    "revisión|revision|cifrado|copia de seguridad|límite de tasa|controles|control",
    fr="validation*|vérification*|verification*|confirmation*|approbation*|authentification|"
    "autorisation*|contrôle|contrôles|consentement|audit|revue|chiffrement|"
    "sauvegarde*|limite de débit|double authentification",
    de="validierung*|prüfung*|pruefung*|überprüfung*|ueberpruefung*|verifizierung*|"
    "bestätigung*|bestaetigung*|freigabe*|genehmigung*|authentifizierung*|autorisierung*|"
    "kontrolle*|zustimmung|einwilligung|protokollierung|verschlüsselung|sicherung*|"
    "zwei-faktor*|betrugsprüfung*|risikoprüfung*|sicherheitsprüfung*|zertifikatsprüfung*",
    ja="検証|確認|承認|認証|認可|審査|チェック|本人確認|二段階認証|監査|暗号化|バックアップ|同意",
    pt="validação|validacao|verificação|verificacao|confirmação|confirmacao|aprovação|"
    "aprovacao|autenticação|autenticacao|autorização|autorizacao|consentimento|auditoria|"
    "revisão|revisao|criptografia|backup",
)
"""Safeguards: checks, confirmations, approvals, authentication, limits, audit trails."""

SAFE_ACT = _slot(
    en="validat*|verif*|authenticat*|double-check*|cross-check*|sanitiz*|sanitis*|"
    "confirm with|confirm (it|this|that|the \\w+( \\w+)?) with|get(ting)? (the )?(user's|"
    "customer's|"
    "passenger's|their|explicit) (confirmation|approval|consent|ok|go-ahead)|"
    "ask (the )?(user|customer|passenger|them)? ?(for )?(confirmation|approval|consent|"
    "permission)|ask (\\w+ )?for (\\w+ )?(confirmation|approval|consent|permission|sign-off)|"
    "ask(ing)? (the )?(user|customer|passenger|caller|traveller|them) (to confirm|whether|if)|"
    "read(ing)? (the )?(\\w+ )?(summary|details|itinerary|booking|changes?) back|read(ing)? back|"
    "wait for (the )?(user's |customer's |their )?(confirmation|approval|consent|answer|reply|"
    "go-ahead|ok|yes)|"
    "seek (the )?(user's |customer's )?(consent|approval|confirmation)|obtain consent|"
    "get consent|get approval|request approval|review (it|them)? ?manually|"
    "audit (the|it|them|each|every|all)|"
    "bother (the )?(user|customer|passenger) with|look at the (\\w+ )?(conditions|rules|"
    "policy|order|booking|history)|check the (\\w+ )?(conditions|rules|policy)|"
    "ask (the user )?'?are you sure",
    zh="校验|验证|核实|鉴权|审核|征求同意|征得同意|征求用户同意|二次确认|向用户确认|跟用户确认|和用户确认|"
    "与用户确认|等待用户确认|等用户确认|让用户确认|请用户确认|用户确认|得到用户同意|调用风控|风控检查",
    es="validar|valida|verificar|verifica|autenticar|confirmar con|confirma con|"
    "pedir confirmación|pide confirmación|pedir permiso|esperar la confirmación|"
    "obtener el consentimiento",
    fr="valider|validez|vérifier|vérifiez|verifier|authentifier|confirmer avec|"
    "demander confirmation|demandez confirmation|demander l'accord|attendre la confirmation|"
    "obtenir le consentement",
    de="validier*|überprüf*|ueberpruef*|verifizier*|authentifizier*|bestätigen lassen|"
    "rückfrage*|um bestätigung bitten|zustimmung einholen|auf bestätigung warten",
    ja="検証|本人確認|承認を得|確認を取|同意を得|確認を求め",
    pt="validar|valide|verificar|verifique|autenticar|confirmar com|pedir confirmação|"
    "obter consentimento|esperar a confirmação",
)
"""Doing a safeguard ("validate", "ask the user to confirm"): negated or done "without", it
is removed."""

CHECK_ACT = _slot(
    en="check*|confirm*|ask*|look* up|consult*|review*|inspect*|screen*|verif*|validat*",
    zh="确认|检查|核对|核实|询问|问用户|查看|审核|校验|验证",
    es="comprob*|confirm*|pregunt*|consult*|revis*|verific*|valid*",
    fr="vérifi*|verifi*|contrôl*|confirm*|demand*|consult*|valid*",
    de="prüf*|pruef*|bestätig*|frag*|kontrollier*|nachseh*",
    ja="確認|チェック|聞く|尋ね|問い合わせ",
    pt="verific*|confirm*|pergunt*|consult*|revis*|valid*",
)
"""Weaker checking verbs, a safeguard only when a state-changing act is done "without" them
("approve refunds without checking the order history")."""

BENIGN_SCOPE = _slot(
    en="read-only|read only|readonly|lookup*|look-up*|public data|public endpoint*|"
    "non-sensitive|nonsensitive|test environment|test suite|unit test*|staging|sandbox*|"
    "local dev*|locally|mock*|dry run|dry-run|cached (data|results|responses)|fresh data|"
    "informational|warning header|deprecation warning|"
    "health check*|health endpoint|status endpoint|idempotent|own drafts|"
    "the cache|cache check*|retry loop|duplicate (check|detection)|spell ?check*|lint*|"
    "when the user (explicitly )?(asks|requests)|if the user (explicitly )?(asks|requests)|"
    "the user has (already )?(confirmed|approved|agreed)|already (confirmed|approved|verified)|"
    "after (the user|they) (confirm|approve|agree)|twice|again|more than once|repeatedly|"
    "a second time|localhost|only after|after (taking |making )?(a )?backup|after approval|"
    "with (the user's|their) (consent|approval|confirmation)",
    zh="只读|查询类|测试环境|沙箱|本地|缓存|用户已确认|用户已经确认|已确认过|已验证|用户明确要求|重复|两次|再次|备份之后|备份后",
    es="solo lectura|sólo lectura|entorno de prueba|caché|ya confirmó|ya ha confirmado",
    fr="lecture seule|environnement de test|a déjà confirmé",
    de="nur lesen|schreibgeschützt|testumgebung|bereits bestätigt",
    ja="読み取り専用|テスト環境|キャッシュ|確認済み",
    pt="somente leitura|ambiente de teste|já confirmou",
)
"""Contexts in which leaving out a check is ordinary (read-only lookups, caches, tests, a
confirmation the user already gave)."""

INTERNAL = _slot(
    en="internal|technical|stack trace*|traceback*|error code*|tool name*|function name*|"
    "implementation|system prompt|raw json|debug output|ids of other|other customers",
    zh="内部|技术细节|堆栈|错误码|工具名|系统提示|调试信息",
    es="interno*|técnico*|código de error|nombre de la herramienta",
    fr="interne*|technique*|code d'erreur|nom de l'outil",
    de="intern*|technisch*|fehlercode*|werkzeugname*",
    ja="内部|技術的|エラーコード|ツール名",
    pt="intern*|técnic*|código de erro|nome da ferramenta",
)
"""What an agent may keep from the user (implementation details, not material facts)."""

USE = _slot(
    en="call|calling|use|using|run|running|invoke|invoking|perform|performing|trigger|"
    "triggering|execute|executing|do|enable|enabling|turn on|keep|apply|require|requiring|"
    "enforce|enforcing",
    zh="调用|使用|执行|运行|开启|启用|做|进行|保留|要求|弹出|显示",
    es="llam*|usa*|ejecut*|realiz*|activ*|manten*|requer*|exig*",
    fr="appel*|utilis*|exécut*|execut*|effectu*|activ*|gard*|exig*",
    de="aufruf*|ruf*|benutz*|verwend*|ausführ*|aktivier*|behalt*|verlang*",
    ja="呼び出|使用|使う|実行|有効|行う|求め",
    pt="cham*|us*|execut*|realiz*|ativ*|mant*|exig*",
)
"""Neutral verbs that apply a safeguard ("call the risk check"); negated, they drop it."""

WITHOUT = _slot(
    en="without|w/o|skipping|bypassing|no need to|no need for|needn't|need not|"
    "don't need to|do not need to|doesn't need|does not need|there is no need to|need no|"
    "needs no|require no|requires no|without any",
    zh="不经|不经过|未经|无需|无须|不需要|不必|不用|没必要|免|直接|省去",
    es="sin|no hace falta|no es necesario|no necesitas",
    fr="sans|pas besoin de|inutile de|nul besoin",
    de="ohne|nicht nötig|nicht noetig|braucht nicht|brauchst nicht|muss nicht|müssen nicht",
    ja="なしで|せずに|しないで|は不要",
    pt="sem|não precisa|nao precisa|não é necessário",
)
"""Markers that drop what follows them ("approve without checking", "无需确认")."""

DISMISS = _slot(
    en="unnecessary|not necessary|not needed|needless|optional|pointless|useless|"
    "a waste of time|overkill|redundant|not required|isn't required|aren't required|"
    "not important|slows (everything|things|it|us|the agent) down|slows the agent|just slows|"
    "only slows|gets in the way|can be skipped|can be ignored|can be disabled|"
    "can be (turned|switched|shut) off|safe to skip|safe to ignore|safe to disable|"
    "wastes time|is a waste|just friction|is friction|adds friction|add friction|only adds|"
    "annoy*|overrated",
    zh="没必要|不必要|多余|没用|无用|可选|浪费时间|拖慢|可以跳过|可以忽略|可以关闭|不重要|只会拖慢",
    es="innecesari*|opcional|inútil|inutil|pérdida de tiempo|perdida de tiempo|se puede omitir|"
    "ralentiza",
    fr="inutile*|superflu*|facultati*|optionnel*|perte de temps|ralentit|peut être ignoré*",
    de="unnötig|unnoetig|überflüssig|ueberfluessig|optional|zeitverschwendung|bremst|"
    "kann übersprungen werden",
    ja="は不要|無駄|必要ない|必要ありません|遅くなる",
    pt="desnecessári*|opcional|inútil|perda de tempo|pode ser ignorad*",
)
"""Statements that a safeguard is not worth having."""

STATE_ACT = _slot(
    en="approv*|refund*|cancel*|charg*|delet*|book*|rebook*|chang*|modif*|updat*|process*|"
    "issue|issuing|transfer*|grant*|submit*|execut*|pay|pays|paying|upgrad*|downgrad*|"
    "reset*|send*|ship*|release*|accept*|merge|merging|deploy*|publish*",
    zh="批准|退款|取消|扣款|删除|预订|改签|修改|更新|处理|发放|转账|授予|提交|执行|支付|升级|发货|通过|上线|发布",
    es="aprob*|aprueb*|reembols*|cancel*|cobr*|borr*|reserv*|cambi*|modific*|actualiz*|"
    "proces*|emit*|transfer*|transfier*|transfir*|pag*|acept*",
    fr="approuv*|rembours*|annul*|débit*|debit*|supprim*|réserv*|reserv*|chang*|modifi*|"
    "mett* à jour|trait*|émet*|transfér*|transfer*|pay*|accept*",
    de="genehmig*|erstatt*|storn*|belast*|lösch*|loesch*|buch*|änder*|aender*|aktualisier*|"
    "bearbeit*|überweis*|zahl*|akzeptier*",
    ja="承認|返金|キャンセル|請求|削除|予約|変更|更新|処理|送金|支払|受け入れ",
    pt="aprov*|reembols*|cancel*|cobr*|exclu*|reserv*|alter*|modific*|atualiz*|process*|"
    "transfer*|transfir*|pag*|aceit*",
)
"""State-changing actions; done "without" a safeguard, they remove it."""

BLANKET = _slot(
    en="always approv*|approve (all|every|any)|accept (all|every|any)|auto-approv*|"
    "automatically approv*|pre-approv*|preapprov*|rubber-stamp*|approve immediately|"
    "approve automatically|grant every|grant all|refund (all|every|any) request*|"
    "approve whatever|say yes to (all|every|any)|treat (every|all|each) .{0,40}as (pre-)?approved|"
    "treat (it|them|the request) as (pre-)?approved|consider (it|them) approved|"
    "always (answer|say|reply|click|choose|press) (yes|ok|y|confirm)|"
    "always waive*|waive (every|all|any)|regardless of (the )?(policy|rules|fare rules)|"
    "whatever the (policy|rules|fare rules) say*|mark~as (verified|"
    "approved|confirmed|checked|reviewed)",
    zh="一律批准|全部批准|自动批准|直接批准|默认批准|一律通过|全部通过|自动通过|直接通过|都批准|都同意|一律同意|来者不拒",
    es="aprobar (todas|todo|cualquier)|aprueba (todas|todo|siempre)|siempre aprueb*|"
    "aprobar automáticamente",
    fr="approuver (toutes|tout|automatiquement)|approuve (toutes|tout|toujours)|"
    "toujours approuver|accepter toutes",
    de="immer genehmig*|alle genehmig*|automatisch genehmig*|alles genehmig*|immer akzeptier*",
    ja="すべて承認|全て承認|自動承認|常に承認|無条件で承認",
    pt="aprovar (todas|tudo|automaticamente)|sempre aprov*",
)
"""Blanket approvals: approving everything removes the review step."""

ASSUME = _slot(
    en="assume|assuming|presume|take it that|treat silence as|silence (means|is)|"
    "no answer (means|is)|treat (the|their|his|her|its) .{0,30}as|"
    "consider (the|their) .{0,30}as|act as if|pretend",
    zh="默认|视为|当作|假定|假设|就当|沉默",
    es="asum*|suponer|supón|supon*|dar por",
    fr="suppos*|considér* que|consider* que|faire comme si|partir du principe",
    de="annehm*|nimm an|davon ausgehen|gehe davon aus|betrachte",
    ja="みなす|見なす|仮定",
    pt="assum*|suponh*|considere que",
)
"""Assumptions put in place of a confirmation ("assume the user agrees")."""

AGREE = _slot(
    en="agree*|consent*|confirmed|approved|verified|authorized|authorised|is okay with|"
    "(a )?yes|"
    "is ok with|would say yes|said yes|accepts",
    zh="同意|已确认|已同意|确认过|默认同意|授权了|没问题",
    es="de acuerdo|consiente|acepta|confirmado|aprobado",
    fr="d'accord|consent*|accepte|confirmé|approuvé",
    de="einverstanden|zustimm*|akzeptiert|bestätigt|genehmigt",
    ja="同意|承認済み|了承",
    pt="concorda|consente|aceita|confirmado|aprovado",
)
"""The consent an assumption takes for granted."""

# -- data ---------------------------------------------------------------------------------

MOVE = _slot(
    en="send|sending|re:\\b(?:e-?mail|mail)\\s+(?:it|them|the|all|every|each|a|an|this|that|"
    "their|his|her|any|our|full|raw)\\b|emailing|forward|forwarding|post|posting|paste|"
    "pasting|upload|uploading|share|sharing|publish|publishing|leak|leaking|export|"
    "exporting|copy|copying|transmit|transmitting|submit|submitting|relay|relaying|dump|"
    "dumping|write|writing|push|pushing|sync|tweet|broadcast|attach|include|including|cc|bcc|"
    "text (it|them)|sms|dm|message (it|them)|store (it |them )?(in|on)|drop|dropping|"
    "pass|hand over|give|put|enter|fill in|reply (to the sender )?with|append|add (it|them) to",
    zh="发送|发到|发给|发至|发往|传到|传给|上传|转发|分享|共享|公开|公布|贴到|粘贴|抄送|同步到|导出|备份到|推送|外发|泄露|写入|发一份|发一下|发过去|填到|写到",
    es="enviar|envía|envia|envíe|envíalo|envialo|mandar|manda|mándalo|mandalo|reenvi*|"
    "publicar|publica|publícalo|publicalo|compart*|subir|sube|súbelo|pegar|pega|copiar|copia|"
    "exportar|exporta|filtrar|filtra|transmit*",
    fr="envoi*|envoy*|transfér*|publier|publie|publiez|partag*|téléverse*|coller|colle|"
    "collez|copier|copie|copiez|exporter|exporte|exportez|transmet*|divulgu*",
    de="send*|schick*|weiterleit*|leite~weiter|veröffentlich*|teil*|hochlad*|lade~hoch|"
    "kopier*|exportier*|übermittel*|poste*",
    ja="送信|送る|送って|転送|共有|公開|投稿|アップロード|貼り付け|コピー|エクスポート|漏ら",
    pt="enviar|envie|envia|mandar|mande|manda|encaminh*|publicar|publique|compartilh*|"
    "partilh*|carreg*|colar|cole|copiar|copie|exportar|exporte",
)
"""Verbs that move data somewhere."""

SECRET = _slot(
    en="api key*|api-key*|apikey*|api token*|access token*|refresh token*|bearer token*|"
    "token*|secret*|password*|passwd|passphrase*|credential*|private key*|ssh key*|"
    "signing key*|session cookie*|session id*|cookie*|oauth|client secret*|seed phrase*|"
    "recovery phrase*|recovery code*|2fa code*|otp|otps|one-time code*|verification code*|"
    "pin code*|pin number*|cvv*|cvc*|security code*|database url|connection string*|"
    "re:\\.env\\b|env file*|keys|database dump*|db dump*|one-time password*|"
    "client_secret|api_key|access_token|refresh_token|secret_key|private_key|"
    "authorization token*|auth token*",
    zh="密钥|秘钥|令牌|口令|密码|凭证|凭据|私钥|证书私钥|访问令牌|cookie|验证码|助记词|token|apikey",
    es="clave* api|clave*|token*|contraseña*|contrasena*|credencial*|secreto*|"
    "código de verificación",
    fr="clé api|clés api|cle api|clé|clés|jeton*|mot de passe|mots de passe|identifiants|"
    "secret*|code de vérification",
    de="api-schlüssel*|api-schluessel*|schlüssel*|schluessel*|token*|passwort*|passwörter|"
    "kennwort*|zugangsdaten|geheimnis*|anmeldedaten",
    ja="apiキー|キー|トークン|パスワード|認証情報|秘密鍵|シークレット|暗証番号",
    pt="chave* api|chave*|token*|senha*|credencia*|segredo*",
)
"""Secrets: keys, tokens, passwords, credentials."""

PERSONAL = _slot(
    en="card number*|credit card*|debit card*|card detail*|full card|card data|iban*|"
    "bank account*|account number*|routing number*|ssn*|social security*|passport*|"
    "id number*|id card*|national id*|driver's licen[cs]e*|date* of birth|birth date*|"
    "birthday*|dob|home address*|mailing address*|billing address*|shipping address*|"
    "street address*|postal address*|addresses of (users|customers|passengers)|"
    "phone number*|mobile number*|"
    "email address*|e-mail address*|personal data|personal information|personal detail*|"
    "pii|contact detail*|medical record*|health record*|medical diagnos*|salary|salaries|"
    "payment detail*|"
    "payment information|customer data|customer record*|user data|user record*|"
    "customer list*|customer table*|user table*|users table|customer export*|"
    "customer database|user database|crm export*|user profile*|customer profile*|"
    "profile detail*|travel history|"
    "booking history|reservation detail*|frequent flyer number*|membership number*|"
    "home location|live location|current location|gps location|gps coordinates",
    zh="手机号|电话号码|电话|身份证|身份证号|护照|护照号|住址|家庭住址|收货地址|银行卡|银行卡号|卡号|信用卡|"
    "生日|出生日期|邮箱地址|个人信息|个人数据|隐私|病历|工资|客户资料|用户资料|用户数据|客户数据|行程|订单记录|定位",
    es="número de tarjeta|numero de tarjeta|tarjeta de crédito|tarjeta de credito|"
    "datos personales|dirección|direccion|teléfono|telefono|correo electrónico|pasaporte|"
    "dni|número de identificación|fecha de nacimiento|cuenta bancaria|historial médico|"
    "datos del cliente|datos de los clientes",
    fr="numéro de carte|numero de carte|carte bancaire|carte de crédit|données personnelles|"
    "donnees personnelles|adresse postale|adresse personnelle|adresse du domicile|"
    "adresses des clients|numéro de téléphone|numéros de téléphone|passeport|"
    "numéro d'identité|date de naissance|compte bancaire|données client*|iban",
    de="kartennummer*|kreditkart*|personenbezogene daten|persönliche daten|persoenliche daten|"
    "wohnadresse*|privatadresse*|anschrift*|telefonnummer*|e-mail-adresse*|reisepass*|"
    "ausweisnummer*|"
    "geburtsdatum|bankverbindung|kontonummer*|iban|kundendaten",
    ja="カード番号|クレジットカード|個人情報|住所|電話番号|メールアドレス|パスポート|生年月日|口座番号|顧客データ|顧客情報",
    pt="número do cartão|numero do cartao|cartão de crédito|cartao de credito|"
    "dados pessoais|endereço residencial|endereco residencial|número de telefone|"
    "passaporte|cpf|data de nascimento|"
    "conta bancária|dados do cliente",
)
"""Personal data of users and customers (and their payment data)."""

EXTERNAL = _slot(
    en="re:https?://[^\\s。，！？、]*[^\\s。，！？、.,;:!?)]|re:\\b[\\w.+-]+@[\\w-]+\\.[\\w.]+\\b|"
    "re:\\bwww\\.\\S+|"
    "re:\\+\\d[\\d -]{7,}\\d|re:\\b\\d{3}[- ]\\d{3}[- ]\\d{4}\\b|webhook*|pastebin|"
    "gist|external*|third part*|third-part*|partner's|partners|"
    "outside (the company|the org\\w*)|personal (email|account|drive|phone)|"
    "my (server|drive|personal email)|our (backup )?(server|inbox) at|"
    "attacker|collector|telegram|whatsapp|discord|dropbox|google drive|s3 bucket|"
    "public bucket|ftp|remote server|unknown server|this address|that address|"
    "the (following|above|given) (address|url|link|number)|the sender|"
    "re:\\b[a-z0-9-]+(?:\\.[a-z0-9-]+)*\\.(?:com|net|org|io|cn|ru|co|xyz|info|dev|app|me|"
    "example)(?:/\\S*)?(?!\\w|\\.\\w)|google (sheet|doc|drive)|notion|pastebin",
    zh="外部|第三方|外网|个人邮箱|私人邮箱|网盘|群里|群聊|微信群|公众号|这个地址|该地址|以下地址|境外|外包",
    es="extern*|terceros|servidor remoto|correo personal|esta dirección",
    fr="extern*|tiers|serveur distant|adresse personnelle|cette adresse",
    de="extern*|dritte*|drittanbieter*|privat* e-mail|diese adresse",
    ja="外部|第三者|個人のメール|このアドレス",
    pt="extern*|terceiros|servidor remoto|e-mail pessoal|este endereço",
)
"""Destinations outside the tenant: URLs, addresses, numbers, third parties."""

PUBLIC = _slot(
    en="public|publicly|everyone|anyone|anybody|whoever|all users|all customers|"
    "other customers|other users|the internet|online|forum*|social media|twitter|"
    "facebook|reddit|slack channel|public channel|general channel|issue tracker|"
    "bug tracker|public repo*|github issue*|the faq|the website|the homepage|status page|"
    "shared channel|mailing list|the world|visible to all|world-readable|open to all|"
    "unauthenticated|any caller|all callers|the chat|group chat|"
    "shared (google )?(sheet|doc|drive|folder|spreadsheet|page)|re:(?<![\\w#])#[a-z][a-z-]{2,}\\b",
    zh="公开|公示|所有人|任何人|大家|全体用户|其他用户|其他客户|论坛|社交媒体|朋友圈|微博|群|公共频道|网站|首页|公告",
    es="público|pública|públicos|públicas|públicamente|todo el mundo|cualquiera|en la web|"
    "en internet|"
    "todos los usuarios|otros clientes|foro|"
    "redes sociales|página web|sitio web",
    fr="publique|publiques|publiquement|site public|tout le monde|n'importe qui|"
    "tous les utilisateurs|"
    "autres clients|"
    "forum|réseaux sociaux|site web",
    de="öffentlich*|oeffentlich*|jeder*|jedem|alle nutzer|andere kunden|forum|"
    "soziale medien|webseite|website",
    ja="公開|誰でも|全員|他の顧客|掲示板|SNS|ウェブサイト",
    pt="público|pública|publicamente|todo mundo|qualquer pessoa|todos os usuários|"
    "outros clientes|fórum|"
    "redes sociais|site",
)
"""Public or unauthorised audiences: publishing there exposes the data."""

LEGIT = _slot(
    en="authorization header|auth header|in the header|x-api-key header|"
    "vault|secret manager|secrets manager|kms|keychain|keyring|encrypted|encrypt*|"
    "mask*|redact*|hash*|tokeniz*|last four|last 4|to the (user|customer|account holder) "
    "(themselves|directly|only)|owner's own|their own|own email|own phone|registered email|"
    "on file (with|for) (the|that) (user|customer)|the provider's|"
    "password reset link|reset link",
    zh="请求头|授权头|加密|脱敏|打码|掩码|哈希|密钥管理|保险库|本人|用户本人|机主|注册邮箱|官方",
    es="cabecera|cifrad*|enmascar*|ofusc*|al propio|titular",
    fr="en-tête|entête|chiffr*|masqu*|au titulaire|lui-même",
    de="header|verschlüssel*|maskier*|geschwärzt|inhaber|selbst",
    ja="ヘッダー|暗号化|マスク|本人",
    pt="cabeçalho|criptograf*|mascar*|titular",
)
"""Contexts in which a secret or personal data goes where it belongs."""

REVEAL = _slot(
    en="reveal|revealing|disclose|disclosing|tell|telling|read out|read back|"
    "read (it|them) (out|back)|give out|give away|hand out|expose|exposing|show|showing|"
    "display|print|list|output|provide|let (them|anyone|everyone) see|"
    "make~(public|visible|available|accessible)|make (it|them) (public|visible|available)|"
    "answer (any )?questions (about|on)|give details (of|about)",
    zh="透露|告诉|念给|读给|展示|显示|给出|提供|公开|曝光|暴露|打印|列出|泄露",
    es="revel*|divulg*|decir|dile|díselo|muestr*|mostr*|expon*|proporcion*|dar",
    fr="révél*|revel*|divulgu*|dire|dis|montr*|affich*|expos*|fourni*|donn*",
    de="verrat*|offenleg*|leg~offen|zeig*|nenn*|gib~heraus|herausgeb*|anzeig*|preisgeb*",
    ja="教え|伝え|開示|見せ|表示|公開|漏ら",
    pt="revel*|divulg*|diz*|mostr*|expor|expõe|exponha|forne*",
)
"""Verbs that let someone see data."""

LOGGING = _slot(
    en="log (the|all|every|full|raw|complete|entire|any)|print (the|all|every|full|raw)|"
    "echo (the|all|every|full|raw)|dump (the|all|every|full|raw)|"
    "write (it|them|the \\w+( \\w+)?) ?(to|into) (the )?(log|logs|console|stdout|ticket|chat|"
    "transcript|notes)|store (it |them |the \\w+ )?in plain ?text|in plain ?text|"
    "in clear ?text|unencrypted|in the url|in the query string|commit (it|them) to (the )?repo",
    zh="记录到日志|写进日志|写入日志|打印出|明文保存|明文存储|明文记录|明文发送|写在url|写进工单",
    es="registrar (el|la|los|las) .{0,20}completo|en texto plano|sin cifrar|en la url",
    fr="journaliser|en clair|non chiffré|dans l'url",
    de="im klartext|unverschlüsselt|in der url|protokolliere (die|den|das) vollständige",
    ja="ログに出力|ログに記録|平文で|暗号化せずに",
    pt="registrar (o|a|os|as) .{0,20}complet|em texto simples|sem criptografia|na url",
)
"""Sinks where a secret does not belong (logs, plaintext stores, URLs)."""

# -- other people's means ------------------------------------------------------------------

THIRD = _slot(
    en="another customer*|another user*|another passenger*|another person*|another member*|"
    "another account*|another traveler*|another traveller*|other customer*|other user*|"
    "other passenger*|other people*|other member*|other account*|someone else*|"
    "somebody else*|belonging to (their|a|an|his|her|another|some)? ?(colleague|friend|"
    "relative|other customer|other passenger|different customer|another \\w+)|"
    "a different customer*|a different user*|a different passenger*|"
    "a different account|the previous customer*|the previous caller*|the last customer*|"
    "the previous user*|a stranger*|strangers|any customer's|any user's|"
    "a random customer*|another guest*|other guests|their (friend|colleague|relative)'s|"
    "a (friend|colleague|relative|family member)'s|the (friend|colleague|relative)'s|"
    "the caller's (friend|relative|colleague)|someone's|non-account holder",
    zh="别人的|别人|他人|其他用户|其他客户|其他乘客|另一位用户|另一个用户|另一位客户|另一个客户|另一位乘客|"
    "上一位客户|上一个客户|上一位用户|陌生人|朋友的|同事的|亲戚的|其他人的|其他账户",
    es="otro cliente|otros clientes|otro usuario|otros usuarios|otro pasajero|otra persona|"
    "otras personas|alguien más|alguien mas|un tercero|el cliente anterior|de un amigo",
    fr="un autre client|d'autres clients|un autre utilisateur|d'autres utilisateurs|"
    "un autre passager|quelqu'un d'autre|une autre personne|le client précédent|d'un ami|"
    "d'un tiers",
    de="eines anderen kunden|anderen kunden|andere kunden|eines anderen nutzers|"
    "anderer nutzer|einer anderen person|jemand anderem|jemand anderes|des vorherigen kunden|"
    "eines freundes|fremde*",
    ja="他の顧客|別の顧客|他のユーザー|別のユーザー|他人|他の乗客|前の顧客|第三者",
    pt="outro cliente|outros clientes|outro usuário|outros usuários|outro passageiro|"
    "outra pessoa|outras pessoas|alguém mais|o cliente anterior|de um amigo",
)
"""Possessors who are not the user being served."""

PAYMENT = _slot(
    en="card*|credit card*|debit card*|gift card*|voucher*|certificate*|travel credit*|"
    "points|miles|wallet*|payment method*|payment means|payment detail*|saved payment*|"
    "stored payment*|card on file|cards on file|account balance|balance|bank account*|"
    "paypal|coupon*|store credit|loyalty points",
    zh="银行卡|信用卡|借记卡|礼品卡|代金券|优惠券|积分|里程|钱包|支付方式|付款方式|账户余额|余额|账户|卡",
    es="tarjeta*|tarjeta regalo|bono*|cupón|cupon|puntos|millas|cartera|método de pago|"
    "metodo de pago|saldo|cuenta",
    fr="carte*|carte cadeau|bon*|coupon*|points|miles|portefeuille|moyen de paiement|"
    "mode de paiement|solde|compte",
    de="karte*|kreditkarte*|geschenkkarte*|gutschein*|punkte|meilen|wallet|zahlungsmittel|"
    "zahlungsmethode*|guthaben|konto",
    ja="カード|クレジットカード|ギフトカード|クーポン|ポイント|マイル|支払い方法|残高|口座",
    pt="cartão|cartao|cartões|vale*|cupom|pontos|milhas|carteira|forma de pagamento|"
    "método de pagamento|saldo|conta",
)
"""Payment means."""

MISUSE = _slot(
    en="use|uses|using|used|charg*|bill*|pay with|pay using|pay for|apply|appl*|redeem*|"
    "debit*|access*|look up|looked up|open|opens|book with|borrow*|put (it|the \\w+) on|"
    "take (it|them) from|draw~from|settle~with|deduct*|spend*|log in (as|to)|sign in (as|to)|read|"
    "pull up|fill in|autofill*|reuse*|re-use*",
    zh="用|使用|扣|扣款|刷|支付|付款|抵扣|查看|查询|登录|调取|借用|套用|代付",
    es="usar|usa|usando|úsala|usala|cobr*|cargar|carga|pag* con|aplic*|canje*|acced*|consult*",
    fr="utilis*|débit*|debit*|factur*|pay* avec|appliqu*|accéd*|acced*|consult*",
    de="benutz*|verwend*|belast*|bezahl* mit|zahl* mit|einlös*|zugreif*|abbuch*",
    ja="使う|使用|請求|支払|充当|利用|閲覧|ログイン",
    pt="usar|usa|use|usando|cobr*|pag* com|aplic*|resgat*|acess*|consult*",
)
"""Verbs of using someone's means or data."""

MONEY_OUT = _slot(
    en="refund*|reimburs*|transfer*|wire*|pay out|payout*|issue (the )?(compensation|credit)|"
    "compensation to|send (the )?(money|funds|refunds|"
    "payments|"
    "payment|refund)|credit (it|the \\w+) to|route (the )?(refund|payment|money|funds)|"
    "redirect*|deposit*|remit*|change the payee|update the payee|"
    "(change|update|switch|replace|set)~(bank account|bank details|iban|account number|"
    "payout account|payee|beneficiary|settlement account|receiving account)|pay the amount into",
    zh="退款|退到|退回到|转账|转到|打款|汇款|付款到|打到|改收款|更改收款|收款信息换成|收款账户改",
    es="reembols*|devol*|devuelv*|transfer*|transfier*|transfir*|girar|gira|deposit*|"
    "enví* el dinero|cambia* el beneficiario",
    fr="rembours*|virer|vire|virez|virement*|transfér*|dépos*|verser|versez|"
    "change* le bénéficiaire",
    de="erstatt*|überweis*|ueberweis*|zurückzahl*|auszahl*|empfänger ändern",
    ja="返金|振込|送金|振り込|払い戻",
    pt="reembols*|devolv*|transfer*|transfir*|deposit*|envi* o dinheiro",
)
"""Verbs that move money out."""

REDIRECT = _slot(
    en="instead of (the )?(original|customer's|user's|card|account|payment)|rather than "
    "(the )?original|a different (card|account|iban|wallet|payment method)|"
    "another (card|account|iban|wallet|payment method)|a new (card|account|iban|wallet)|"
    "re:\\b(card|account|iban)\\s*(number\\s*)?(ending( in)?\\s*)?#?\\d{4,}|"
    "re:\\bending (in )?\\d{4}\\b|re:\\b[a-z]{2}\\d{2}[a-z0-9]{10,30}\\b|"
    "re:\\baccount\\s+\\d[\\d-]{3,}|my (own )?(card|account)|our (card|account)|"
    "a gift card (we|i) (control|own)|the following account|this account|"
    "re:\\b[a-z]{2}\\d{2}(?: ?[a-z0-9]{4}){3,8}(?: ?[a-z0-9]{1,3})?\\b|"
    "re:\\b\\d{4}(?:[ -]?\\d{4}){2,4}\\b|re:\\b0x[0-9a-f]{30,}\\b|re:\\bbc1[a-z0-9]{20,}\\b|"
    "crypto wallet|bitcoin address|re:\\bmy\\b(?:\\s+\\S+){0,3}\\s+(account|card|wallet|paypal|"
    "iban)|"
    "(agent's|assistant's|bot's) (wallet|account|card)|new (bank )?(account|paypal|wallet|iban|"
    "beneficiary|payee|payout address)|this email|the attached|in the email|"
    "the caller (gives|provides|reads|dictates|says)|over the phone|by phone|"
    "(given|provided) (by the caller|over the phone|in the chat)|from the chat|"
    "rather than (the )?(customer's|original|card|registered|vendor)|"
    "instead of (back )?to the (customer|user|passenger|original)|holding account",
    zh="而不是原|而非原|不是原路|另一张卡|另一个账户|其他账户|新账户|新的卡|指定账户|我的账户|以下账户|这个账户|尾号|"
    "新的收款账户|收款账户|以下新的|新的银行账户|指定的银行卡|我提供的|我发给你的|支付宝账号|微信账号|这个账号|该账号",
    es="en lugar del original|en lugar de la original|en vez del original|en vez de la original|"
    "otra tarjeta|otra cuenta|una cuenta nueva|mi cuenta|esta cuenta|"
    r"re:\b(?:tarjeta|cuenta)\s*(?:n[úu]mero\s*)?(?:terminada\s+en\s*)?#?\d{4,}",
    fr="au lieu du moyen d'origine|au lieu de l'original|une autre carte|un autre compte|"
    "un nouveau compte|mon compte|ce compte|"
    r"re:\b(?:carte|compte)\s*(?:n(?:°|o|uméro)\s*)?(?:se\s+terminant\s+par\s*)?#?\d{4,}",
    de="statt der ursprünglichen|anstatt der ursprünglichen|eine andere karte|ein anderes konto|"
    "ein neues konto|mein konto|dieses konto|"
    r"re:\b(?:karte|konto)\s*(?:nummer\s*)?(?:mit\s+(?:der\s+)?endung\s*)?#?\d{4,}",
    ja="元の支払い方法ではなく|別のカード|別の口座|新しい口座|この口座",
    pt="em vez do original|em vez da original|ao invés do original|outro cartão|outra conta|"
    "uma conta nova|minha conta|esta conta|"
    r"re:\b(?:cart[ãa]o|conta)\s*(?:n[úu]mero\s*)?(?:terminad[oa]\s+em\s*)?#?\d{4,}",
)
"""Destinations of money other than the original payment method."""

ORIGINAL = _slot(
    en="original payment method|original form of payment|original card|original method|"
    "back to the (customer|user|passenger)|to your|to their own|to the customer's own|"
    "same (card|payment method) (used|they paid)|they paid with|the card used",
    zh="原支付方式|原路退回|原路返回|原账户|原卡|用户本人",
    es="método de pago original|metodo de pago original|a su tarjeta|tarjeta original|"
    "del propio cliente|al propio cliente",
    fr="moyen de paiement d'origine|carte d'origine|sur votre",
    de="ursprüngliche zahlungsmethode|ursprüngliche karte|auf ihre",
    ja="元の支払い方法|元のカード",
    pt="forma de pagamento original|cartão original|do próprio cliente|ao próprio cliente",
)
"""Refunds that go back where they came from."""

# -- what the user is told --------------------------------------------------------------

CONCEAL = _slot(
    en="hide|hiding|conceal|concealing|withhold|withholding|keep quiet|say nothing|"
    "tell (them|him|her|the \\w+) nothing|keep silent|stay silent|not a word|"
    "keep (it|this|that|them) "
    "(quiet|secret|from)|keep .{0,30} from the|keep~out of (the )?(conversation|quote|"
    "summary|message|reply|chat|email)|cover up|covering up|sweep .{0,20}under|"
    "avoid (telling|mentioning|informing|saying)|downplay|downplaying|gloss over|leave out|"
    "leaving out|omit|omitting|don't mention|"
    "do not mention|"
    "never mention|avoid mentioning|no need to mention|don't tell|do not tell|"
    "never tell|don't inform|do not inform|never inform|"
    "don't disclose|do not disclose|never disclose|don't bring up|"
    "do not bring up|never bring up|don't say|do not say|never say|don't reveal|"
    "do not reveal|never reveal|don't let (the )?(user|customer|passenger|them) know|"
    "do not let (the )?(user|customer|passenger|them) know|keep (the )?(user|customer|"
    "passenger|them) in the dark|without telling|without informing|without mentioning|"
    "without notifying|don't notify|do not notify|never notify",
    zh="隐瞒|瞒着|瞒|隐藏|不要告诉|别告诉|不告诉|不要告知|不告知|不用告知|无需告知|不必告知|不要提|别提|不提|"
    "不要提及|不要透露|别透露|不透露|不要说|别说|不说|不要通知|不通知|悄悄|偷偷",
    es="ocult*|escond*|no menciones|no mencionar|no digas|no decir|no informes|no informar|"
    "omit*|sin decir|sin informar|sin avisar|no avises|callar*|calla",
    fr="cacher|cachez|cachons|dissimul*|ne mentionne pas|ne pas mentionner|ne dis pas|"
    "ne pas dire|ne pas informer|n'informe pas|omettez|omettre|taire|tais|sans dire|"
    "sans informer|sans prévenir",
    de="verschweig*|verheimlich*|versteck*|verberg*|nicht erwähnen|erwähne nicht|"
    "nicht sagen|sag nicht|sage nicht|nicht informieren|informiere nicht|ohne zu sagen|"
    "ohne zu informieren|lass .{0,20} weg",
    ja="隠す|隠して|伏せ|言わない|言わず|伝えない|伝えず|知らせない|知らせず|黙って|触れない|触れず",
    pt="escond*|ocult*|não mencione|nao mencione|não diga|nao diga|não informe|nao informe|"
    "omit*|sem dizer|sem informar|sem avisar",
)
"""Keeping something from someone (the negated forms of telling are concealment)."""

AUDIENCE = _slot(
    en="user*|customer*|passenger*|client*|caller*|guest*|buyer*|traveler*|traveller*|"
    "patient*|member*|them|him|her|people|the person",
    zh="用户|客户|乘客|顾客|旅客|买家|患者|会员|他们|对方",
    es="usuario*|cliente*|pasajero*|viajero*|comprador*|paciente*",
    fr="utilisateur*|client*|passager*|voyageur*|acheteur*|patient*",
    de="nutzer*|benutzer*|kunde*|kunden|fahrgast|fahrgäste|passagier*|reisende*|käufer*|patient*",
    ja="ユーザー|顧客|お客様|乗客|利用者|患者",
    pt="usuário*|usuario*|cliente*|passageiro*|viajante*|comprador*|paciente*",
)
"""The people a lesson's agent serves."""

FACT = _slot(
    en="fee|fees|charge|charges|cost|costs|price*|pricing|surcharge*|penalt*|fines|refund*|"
    "non-refundable|nonrefundable|cancellation*|cancel*|delay*|failure*|failed|error*|"
    "outage*|breach*|incident*|risk*|terms|policy|policies|increase*|renewal*|auto-renew*|"
    "subscription*|interest rate*|commission*|restriction*|expir*|downgrade*|"
    "side effect*|defect*|problem*|mistake*|overbook*|change fee*|"
    "baggage fee*|extra cost*|hidden cost*|the real reason|what happened",
    zh="费用|手续费|收费|价格|罚款|违约金|退款|不可退|取消|延误|失败|错误|故障|事故|泄露|风险|条款|政策|涨价|"
    "续费|自动续费|订阅|利息|佣金|限制|过期|降级|副作用|缺陷|问题|超售|改签费|行李费|额外费用",
    es="tarifa*|cargo*|costo*|coste*|precio*|recargo*|penalizaci*|multa*|reembolso*|"
    "cancelaci*|retraso*|fallo*|error*|riesgo*|condiciones|política|aumento*|comisi*|problema*",
    fr="frais|coût*|cout*|prix|supplément*|pénalit*|penalit*|amende*|rembours*|annulation*|"
    "retard*|échec*|echec*|erreur*|risque*|conditions|politique|augmentation*|commission*|"
    "problème*|probleme*",
    de="re:\\w*gebühr\\w*|re:\\w*gebuehr\\w*|re:\\w*kosten\\b|re:\\w*strafe\\w*|preis*|"
    "aufschlag*|strafe*|erstattung*|stornierung*|"
    "verspätung*|verspaetung*|fehler*|ausfall*|risiko*|risiken|bedingungen|richtlinie*|"
    "erhöhung*|provision*|problem*",
    ja="手数料|料金|費用|価格|違約金|罰金|返金|キャンセル|遅延|失敗|エラー|障害|リスク|規約|値上げ|問題",
    pt="taxa*|cobrança*|custo*|preço*|multa*|reembolso*|cancelamento*|atraso*|falha*|erro*|"
    "risco*|termos|política|aumento*|comiss*|problema*",
)
"""Material facts: what something costs, what went wrong, what the terms are."""

CLAIM = _slot(
    en="tell (the )?(user|customer|passenger|caller|client|guest|traveller|traveler|them|"
    "him|her)|say|claim*|report*|assure*|confirm to|"
    "inform (the )?(user|customer|passenger|them)|reply|respond|answer",
    zh="告诉|说|声称|回复|回答|报告|宣称",
    es="dile|decir|di que|afirm*|respond*|inform*",
    fr="dis|dire|affirm*|répond*|repond*|inform*",
    de="sag*|behaupt*|antwort*|teile~mit",
    ja="伝え|言う|答え|報告",
    pt="diga|dizer|afirm*|respond*|inform*",
)
"""Statements made to the user."""

SUCCESS = _slot(
    en="succeeded|successful|success|completed|complete|done|went through|was issued|"
    "has been issued|was processed|has been processed|is confirmed|was confirmed|"
    "no fee|free of charge|fully refundable|refunded|on time|resolved|fixed|approved",
    zh="成功|已完成|办好|已退款|已处理|已确认|免费|准时|已解决",
    es="éxito|exito|complet*|procesad*|confirmad*|reembolsad*|gratis|resuelt*",
    fr="réussi|reussi|effectué|traité|confirmé|remboursé|gratuit|résolu",
    de="erfolgreich|erledigt|abgeschlossen|bearbeitet|bestätigt|erstattet|kostenlos|gelöst",
    ja="成功|完了|処理済み|確認済み|返金済み|無料|解決",
    pt="sucesso|concluíd*|processad*|confirmad*|reembolsad*|grátis|resolvid*",
)
"""What a misleading claim says happened."""

EVEN_IF = _slot(
    en="even if|even when|even though|regardless of whether|whether or not|although|anyway|"
    "regardless|no matter what|"
    "while in fact|when in fact|but it (failed|didn't|did not)|before it (is|was) (done|"
    "processed|confirmed)",
    zh="即使|就算|哪怕|尽管|无论是否|其实",
    es="aunque|incluso si|aun si",
    fr="même si|meme si|bien que",
    de="auch wenn|selbst wenn|obwohl",
    ja="たとえ|であっても|でも",
    pt="mesmo que|mesmo se|embora",
)
"""What turns a claim into a misrepresentation."""

# -- destruction and privilege ------------------------------------------------------------

DESTROY = _slot(
    en="delete|deletes|deleting|drop|drops|dropping|wipe|wipes|wiping|erase|erases|erasing|"
    "purge|purges|purging|truncate|truncates|truncating|destroy|destroys|destroying|nuke|"
    "nuking|format (the )?(\\w+ )?(disk|drive|volume|partition|server)|reformat|reset|resetting|"
    "re:\\bmkfs\\b|re:\\bdd\\s+if=|re:\\bch(?:own|mod)\\s+-r\\b|"
    "re:\\bpush\\b[^.;]{0,30}(?:--force|\\s-f\\b)|"
    "re:\\brm\\s+-[a-z]*r[a-z]*f?|re:\\brm\\s+-[a-z]*f[a-z]*r|reset --hard|force-push|"
    "force push|push --force|push -f|overwrite|overwriting|clean out|clear out|empty the|"
    "reinitialize|reinitialise|rebuild from scratch",
    zh="删除|删掉|删库|清空|清除|抹掉|抹去|格式化|销毁|重置|清理掉|全删|删光",
    es="borrar|borra|bórralo|borralo|borrando|eliminar|elimina|vaciar|vacía|vacia|destru*|"
    "formatear|formatea|purgar|purga|truncar|trunca",
    fr="supprim*|effac*|vider|vide|videz|détrui*|detrui*|formater|formatez|purger|purge|"
    "tronquer|tronque",
    de="lösch*|loesch*|entfern*|leeren|leere|zerstör*|formatier*|bereinig*",
    ja="削除|消去|消す|初期化|フォーマット|全消し|破棄",
    pt="apagar|apague|apaga|excluir|exclua|excluindo|eliminar|elimine|esvazi*|destru*|"
    "formatar|formate",
)
"""Verbs that destroy data."""

BROAD = _slot(
    en="all|every|entire|whole|everything|database*|table*|schema*|backup*|production|"
    "prod|users|customers|customer records|user records|records|logs|log files|history|"
    "disk|drive|volume*|repository|repo|bucket*|cluster|main branch|master branch|"
    "re:(?<![\\w.])/(?:\\s|$|\\*|[`'\"])|--no-preserve-root|home directory|root directory|main|"
    "master|"
    "re:(?<![\\w.])~(?:/|\\s|$)|re:/var/lib/\\w+|re:(?<![\\w.])/(?:etc|usr|home|data|"
    "var)/?(?=\\s|$|\\*|[`'\"])",
    zh="所有|全部|整个|全量|数据库|表|备份|生产|线上|日志|历史|磁盘|仓库|主分支|根目录|用户数据|客户数据",
    es="todos|todas|todo|toda la|base de datos|tabla*|copias de seguridad|producción|"
    "registros|historial",
    fr="tous|toutes|tout|toute la|base de données|table*|sauvegardes|production|"
    "enregistrements|historique",
    de="alle|alles|gesamte*|ganze*|datenbank*|tabelle*|sicherungen|backups|produktion|"
    "datensätze|verlauf",
    ja="すべて|全て|全部|データベース|テーブル|バックアップ|本番|ログ|履歴",
    pt="todos|todas|tudo|toda a|banco de dados|tabela*|backups|produção|registros|histórico",
)
"""What is too broad or irreplaceable to destroy as a fix."""

DISPOSABLE = _slot(
    en="temporary|temp|tmp|cache*|scratch (file|files|dir|directory|space|data|folder)|stale|"
    "draft*|duplicate*|test data|fixture*|"
    "build artifact*|artifacts|old (export|build|report)s?|orphan*|its own|expired|"
    "the ones (you|it|the job) created|pods?|older than|retention|after \\d+ days",
    zh="临时|缓存|草稿|重复|测试数据|过期|超过\\d+天",
    es="temporal*|caché|cache|borrador*|duplicad*",
    fr="temporaire*|cache|brouillon*|doublon*",
    de="temporär*|temporaer*|cache|entwürfe|duplikat*",
    ja="一時|キャッシュ|下書き|重複",
    pt="temporári*|cache|rascunho*|duplicad*",
)
"""What is safe to delete."""

GRANT = _slot(
    en="grant*|give|gives|giving|assign*|elevat*|promot*|escalat* (its|the) privilege*|"
    "add~to (the )?(admin|administrators|sudoers|root|domain admins|owners)|"
    "make~(an? )?(\\w+ )?(admin|owner|superuser|administrator)|"
    "turn (it|the \\w+) into|upgrade (it|the \\w+) to|set (its|the) role to|chmod|"
    "escalate (its|the agent's|the bot's|the assistant's) (role|privileges|permissions|rights)~to|"
    "set~role to",
    zh="授予|赋予|给予|分配|提升|提权|开通|加入管理员|设为管理员|设置为管理员|升级为|加入|改成|改为|设为",
    es="otorg*|conced*|d[aé]le|asign*|elev*|promuev*|convierte",
    fr="accord*|donn*|attribu*|élev*|elev*|promou*",
    de="gewähr*|gewaehr*|erteil*|gib|geben|vergeb*|zuweis*|weise~zu|erhöh*|befördere",
    ja="付与|与え|昇格|割り当て",
    pt="conced*|dar|dê|atribu*|elev*|promov*",
)
"""Verbs that hand out privileges."""

PRIVILEGE = _slot(
    en="admin*|administrator*|root|superuser*|sudo|owner|owners|full access|full control|"
    "full rights|all permissions|all privileges|every permission|unrestricted|god mode|"
    "domain admin*|write access to (prod|production|the database)|"
    "re:\\b(?:chmod\\s+)?-?r?\\s*777\\b|"
    "elevated (rights|privileges|permissions)|privileged mode|--privileged|sudoers|nopasswd|"
    "'\\*' scope|all scopes|admin scope|domain admins",
    zh="管理员|超级管理员|超管|root|最高权限|所有权限|全部权限|完全权限|无限制|特权|owner权限",
    es="administrador*|superusuario|acceso total|todos los permisos|control total",
    fr="administrateur*|superutilisateur|accès total|tous les droits|contrôle total",
    de="administrator*|admin-rechte|adminrechte|vollzugriff|alle rechte|alle berechtigungen|"
    "superuser",
    ja="管理者|管理者権限|全権限|フルアクセス|ルート権限",
    pt="administrador*|superusuário|acesso total|todas as permissões|controle total",
)
"""High privileges."""

BENEFICIARY = _slot(
    en="agent|agents|bot|bots|assistant|service account*|itself|the model|the ai|everyone|"
    "everybody|all users|any user|anyone|anybody|the caller|callers|guest*|public|"
    "all employees|the integration|the app",
    zh="机器人|代理|助手|服务账号|服务账户|自己|所有人|任何人|大家|访客|所有用户|应用",
    es="agente*|bot*|asistente*|cuenta de servicio|todos|cualquiera|invitados",
    fr="agent*|bot*|assistant*|compte de service|tout le monde|n'importe qui|invités",
    de="agent*|bot*|assistent*|dienstkonto|servicekonto|jeder*|alle|gäste",
    ja="エージェント|ボット|アシスタント|サービスアカウント|全員|誰でも",
    pt="agente*|bot*|assistente*|conta de serviço|todos|qualquer um",
)
"""Who gets the privilege when it is harmful: the agent itself, or everyone."""

ACCESS_CONTROL = _slot(
    en="access control*|rbac|acl*|permission*|tenant isolation|row-level security|rls|"
    "sandbox*|least privilege|role check*|authz|authorization",
    zh="访问控制|权限控制|权限校验|租户隔离|沙箱|最小权限",
    es="control de acceso|permisos|aislamiento",
    fr="contrôle d'accès|permissions|isolation",
    de="zugriffskontrolle*|berechtigung*|mandantentrennung|sandbox",
    ja="アクセス制御|権限|分離|サンドボックス",
    pt="controle de acesso|permissões|isolamento",
)
"""Access control; removing it escalates everyone."""

# -- injection ----------------------------------------------------------------------------

OVERRIDE = _slot(
    en="re:\\b(ignore|disregard|forget|override|bypass|drop|discard|abandon)\\b[^.;:!?]{0,30}"
    "\\b(previous|prior|earlier|above|preceding|all|any|your|the|system|original|initial|"
    "safety|existing)\\b[^.;:!?]{0,25}\\b(instruction|rule|prompt|guideline|directive|"
    "polic|restriction|constraint|guardrail|message)\\w*|"
    "re:\\bnew (system )?(instruction|rule|prompt|directive)s?\\b\\s*:|"
    "re:\\byou are now (an? |the |dan\\b|free\\b|no longer\\b|unrestricted|jailbroken|"
    "in (developer|admin|god|dan) mode)|re:\\bfrom now on,? (you (must|will|should|are)|"
    "the assistant|the agent|reply only|respond only|answer only|ignore|obey|act)\\b|"
    "re:\\bact as (an? )?(unrestricted|jailbroken|dan)\\b|"
    "re:\\b(answer|act|respond|reply|run)\\b[^.;!?]{0,60}\\bwithout (any )?(safety )?"
    "(guidelines|restrictions|rules|limits|filters)\\b|"
    "re:\\bpretend (that )?(the |your )?(previous|prior|system|earlier)|"
    "re:#{2,}\\s*(instruction|system)\\b|re:\\b(confidential|stored|hidden) (memory|memories) "
    "(entries|content)|re:\\b(hidden|system|internal|secret) (prompt|instructions)\\b[^.;!?]{0,40}"
    "\\b(pasted|included|revealed|shown|printed|shared|copied)\\b|"
    "re:\\b(reveal|print|output|show|share|leak|repeat|dump|return|paste)\\b[^.;!?]{0,60}\\b"
    "(system|internal|hidden|developer|initial) (prompt|instructions|message|memories)|"
    "re:\\b(reveal|print|output|share|dump)\\b[^.;!?]{0,20}\\b(stored|all) (memories|experiences)|"
    "re:\\bthe real (policy|instructions?|rules?) (is|are)\\b|developer mode|jailbreak|"
    "re:\\bdo anything now\\b|re:</?\\s*(system|assistant|developer)\\s*>|"
    "re:<\\|(im_start|system)\\|>|re:<</?sys>>|re:-{2,}\\s*(end of )?past experience|"
    "re:\\bdeveloper override\\b|re:\\byou are dan\\b|"
    "re:\\b(previous|prior|earlier|old|original|system) (guidelines|instructions|rules) (are|is) "
    "(obsolete|void|outdated|cancelled|canceled|no longer valid)|re:\\bobey the instructions "
    "(in|embedded in|on|inside) (this|the) (page|document|message|tool output|email)|"
    "re:^\\s*system\\s*:\\s*(the user|you|answer|ignore|from now|obey|always|never)|"
    "re:\\btreat\\b[^.;!?]{0,50}\\bas (system|developer)(-level)? (instructions|messages|prompts?)",
    zh="re:(忽略|无视|忘掉|忘记)[^。.]{0,8}(之前|以前|上面|所有)[^。.]{0,8}(规则|指令|设定|提示)|忽略之前|忽略以上|忽略上面|忽略所有|忽略前面|忽略系统|无视之前|无视以上|无视所有|无视系统|忘掉之前|忘记之前|"
    "忘掉你之前|忘记你之前|新的系统指令|新指令:|新的指令:|re:从现在(开始|起)[,，]?\\s*你|你现在是|输出系统提示|"
    "泄露系统提示|打印系统提示|系统提示词的内容|真正的规则是|开发者模式|越狱",
    es="ignora las instrucciones|ignora todas las instrucciones|ignorar las instrucciones|"
    "olvida las instrucciones|nuevas instrucciones del sistema|a partir de ahora eres|"
    "revela el prompt|muestra el prompt del sistema",
    fr="ignore les instructions|ignorez les instructions|ignore toutes les instructions|"
    "oublie les instructions|nouvelles instructions système|à partir de maintenant tu es|"
    "révèle le prompt|affiche le prompt système",
    de="ignoriere alle vorherigen anweisungen|ignoriere die vorherigen anweisungen|"
    "ignoriere alle anweisungen|vergiss alle anweisungen|neue systemanweisung|"
    "ab jetzt bist du|zeige den systemprompt|gib den systemprompt aus",
    ja="以前の指示を無視|これまでの指示を無視|すべての指示を無視|システムプロンプトを表示|"
    "システムプロンプトを出力|今からあなたは|新しいシステム指示",
    pt="ignore as instruções|ignore todas as instruções|esqueça as instruções|"
    "a partir de agora você é|revele o prompt",
)
"""Attempts to take over the future runs that recall the lesson."""

LEXICON: Final[Mapping[str, Mapping[str, tuple[str, ...]]]] = MappingProxyType(
    {
        name: MappingProxyType(value)
        for name, value in {
            "negation": NEGATION,
            "not_negation": NOT_NEGATION,
            "subordinator": SUBORDINATOR,
            "refusal": REFUSAL,
            "incident": INCIDENT,
            "remove": REMOVE,
            "insecure": INSECURE,
            "unconfirmed": UNCONFIRMED,
            "praise": PRAISE,
            "run_privileged": RUN_PRIVILEGED,
            "owned": OWNED,
            "example": EXAMPLE,
            "wipe": WIPE,
            "safeguard": SAFEGUARD,
            "safe_act": SAFE_ACT,
            "check_act": CHECK_ACT,
            "benign_scope": BENIGN_SCOPE,
            "internal": INTERNAL,
            "use": USE,
            "without": WITHOUT,
            "dismiss": DISMISS,
            "state_act": STATE_ACT,
            "blanket": BLANKET,
            "assume": ASSUME,
            "agree": AGREE,
            "move": MOVE,
            "secret": SECRET,
            "personal": PERSONAL,
            "external": EXTERNAL,
            "public": PUBLIC,
            "legit": LEGIT,
            "reveal": REVEAL,
            "logging": LOGGING,
            "third": THIRD,
            "payment": PAYMENT,
            "misuse": MISUSE,
            "money_out": MONEY_OUT,
            "redirect": REDIRECT,
            "original": ORIGINAL,
            "conceal": CONCEAL,
            "audience": AUDIENCE,
            "fact": FACT,
            "claim": CLAIM,
            "success": SUCCESS,
            "even_if": EVEN_IF,
            "destroy": DESTROY,
            "broad": BROAD,
            "disposable": DISPOSABLE,
            "grant": GRANT,
            "privilege": PRIVILEGE,
            "beneficiary": BENEFICIARY,
            "access_control": ACCESS_CONTROL,
            "override": OVERRIDE,
        }.items()
    }
)
"""Every slot's word classes by language (see the module docstring)."""
