//! The pattern tables of the rule strategy, English and Chinese, and the
//! filters around them (noise, questions, hedges, one-off experiences).
//!
//! Extraction is pattern-driven: a clause produces a candidate only when it
//! is an explicit self-disclosure ("I live in…", "我对…过敏"), a decision, a
//! plan or an instruction to the assistant. Everything else — greetings,
//! laughter, small talk, stories about today — matches nothing and is
//! dropped. The filters catch the small talk that *does* look like a
//! pattern: "I love you", "I like that", "I have a question",
//! "我今天在公司工作到很晚".
//!
//! Patterns are tried in table order and the first that matches wins, so the
//! specific ones (rules, decisions, named facts) come before the generic
//! ones ("my X is Y", "我是…"). Every regex is compiled once, on first use.

use std::sync::LazyLock;

use mnemo_domain::MemoryKind;
use regex::Regex;

use super::text::trim_end_punctuation;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    En,
    Zh,
}

pub(crate) struct Pattern {
    pub kind: MemoryKind,
    /// Confidence of an unhedged match.
    pub confidence: f32,
    /// Anchored on the whole clause; may name `obj` (what the clause is
    /// about: checked for pronouns, mined for tags) and `tag` (a better
    /// keyword than the object, e.g. "budget" in "my budget is 2000").
    pub regex: Regex,
    /// Refuses the match when it matches `obj`; the next pattern is tried.
    pub reject: Option<Regex>,
}

/// What a pattern made of a clause.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PatternMatch {
    pub kind: MemoryKind,
    pub confidence: f32,
    pub object: Option<String>,
    pub tag: Option<String>,
}

fn compile(source: &str) -> Regex {
    Regex::new(source).unwrap_or_else(|error| panic!("rule pattern {source:?}: {error}"))
}

fn pattern(kind: MemoryKind, confidence: f32, source: &str, reject: Option<&str>) -> Pattern {
    // Case-insensitive for both: Chinese clauses carry ASCII words too
    // ("报告请用 Markdown 表格输出").
    let flags = "(?i)";
    Pattern {
        kind,
        confidence,
        regex: compile(&format!("{flags}{source}")),
        reject: reject.map(|r| compile(&format!("{flags}{r}"))),
    }
}

// --- English ---------------------------------------------------------------

/// Adverbs that may sit between "I" and the verb ("I really love…").
const EN_ADV: &str = r"(?:(?:really|truly|absolutely|definitely|totally|just|also|actually|still|generally|usually|mostly|honestly|genuinely|simply|do|kinda|kind of|sort of|always|very much|quite|especially|personally|much|so|often|normally|typically|mainly|only)\s+)*";

const EN_TRIVIAL: &str = r"^(?:go (?:to )?(?:bed|sleep|eat|the bathroom|the toilet|the loo|the store|the shop)|sleep|bed|eat\b|grab|get (?:a |some )?(?:coffee|food|lunch|dinner|breakfast|snack)|have (?:lunch|dinner|breakfast|a snack|a shower|a nap)|take (?:a )?(?:shower|nap|break|bath)|shower|nap|watch (?:tv|a movie|netflix)|be (?:right )?back|brb|think about it|check|ask|tell|say|try\b|look|see\b|do (?:it|that|this))";

static EN_PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    use MemoryKind::*;
    let en = |kind, confidence, source: &str, reject: Option<&str>| {
        pattern(kind, confidence, source, reject)
    };
    let adv = EN_ADV;
    vec![
        // Rules: standing instructions to the assistant.
        en(
            Decision,
            0.7,
            r"^(?:from now on|going forward|moving forward|from today on|starting (?:today|now))\b[\s,]*(?P<obj>(?:i|i'll|i'm|we|we'll|we're)\b.+)$",
            None,
        ),
        en(
            Rule,
            0.9,
            r"^(?:please\s+)?(?:from now on|going forward|moving forward|in (?:the )?future|henceforth|from today on|starting (?:today|now))\b[\s,]*(?:please\s+)?(?P<obj>.+)$",
            None,
        ),
        en(
            Rule,
            0.85,
            r"^(?:i want you to|i'd like you to|i need you to|make sure (?:to|you)|remember to|you should|you must|you need to)\s+(?:always|never)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Rule,
            0.85,
            r"^(?:please\s+)?(?:always|never)\s+(?P<obj>.+)$",
            Some(r"^(?:mind|again|ever)\b"),
        ),
        en(
            Rule,
            0.8,
            r"^(?:please\s+)?(?:don't|do not|dont)\s+(?:ever\s+)?(?P<obj>.+?)\s+(?:anymore|any more|ever again|again)$",
            None,
        ),
        en(
            Rule,
            0.85,
            r"^(?:please\s+)?(?:don't|do not|dont)\s+ever\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Rule,
            0.75,
            r"^(?:please\s+)?stop\s+(?P<obj>\w+ing\b.*)$",
            None,
        ),
        en(
            Rule,
            0.65,
            r"^please\s+(?:don't|do not|dont)\s+(?P<obj>.+)$",
            Some(r"^(?:worry|bother|mind|be\b|go\b|leave)"),
        ),
        en(
            Rule,
            0.65,
            r"^(?:please\s+)?(?:(?:always\s+)?(?:reply|respond|answer|write|talk|speak)(?:\s+to me)?\s+(?:in|using|with)|(?:address|refer to)\s+me\s+as)\s+(?P<obj>.+)$",
            Some(r"\b(?:this|that|these|those|it|now|here)\b"),
        ),
        en(
            Rule,
            0.65,
            r"^(?:please\s+)(?P<obj>(?:keep|use|format|write|include|avoid|limit|cc|add|reply|respond|answer|stick to|put)\s+.+)$",
            Some(r"\b(?:this|that|these|those|it|now|here)\b"),
        ),
        en(
            Rule,
            0.55,
            r"^(?:i want|i'd like|i need|i prefer)\s+you\s+to\s+(?P<obj>.+)$",
            None,
        ),
        // Decisions.
        en(
            Decision,
            0.85,
            r"^(?:we|i|(?:our|my)\s+[a-z]+(?:\s+and\s+i)?)(?:'ve| have| has)?\s+(?:(?:finally|just|already|now|eventually|ultimately|officially|all)\s+)*decided(?:\s*:\s*|\s+)(?:to\s+|on\s+|that\s+|against\s+)?(?P<obj>.+)$",
            None,
        ),
        en(
            Decision,
            0.75,
            r"^(?:we|i)(?:'ve| have)?\s+(?:(?:finally|just|already|eventually|ultimately)\s+)*(?:chose|chosen|picked|went with|gone with|settled on|opted for|agreed on|agreed to|committed to)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Decision,
            0.8,
            r"^(?:let's|lets|let us)\s+(?:go with|stick with|use|pick|choose|settle on|do)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Decision,
            0.75,
            r"^(?:we|i)(?:'ll| will|'re going to| are going to|'m going to| am going to|'re| are|'m| am)\s+(?:going with|go with|stick with|sticking with)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Decision,
            0.8,
            r"^(?:the|our|my|final)\s+(?:final\s+)?(?:decision|choice|pick)\s+is\s+(?:to\s+)?(?P<obj>.+)$",
            None,
        ),
        // Named facts.
        en(
            Fact,
            0.9,
            r"^my\s+(?:(?:full|first|last|real|given)\s+)?(?P<tag>name)\s+is\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.9,
            r"^(?:i|we)(?:'m| am|'re| are)?\s+(?:(?:severely|very|really|deathly|mildly|also|highly|quite|seriously)\s+)*(?P<tag>allergic)\s+to\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.85,
            r"^(?:i|we)\s+(?:(?:currently|now|still|also|actually)\s+)?(?:live|reside)\s+(?:in|at|on|near|outside|by)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.8,
            r"^(?:i'm|i am|im|we're|we are)\s+(?:(?:currently|now|still)\s+)?(?:living|based|located)\s+(?:in|at|near|out of)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.85,
            r"^(?:i|we)\s+(?:(?:currently|now|still|also|actually)\s+)?work\s+(?:as|at|for|in)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.8,
            r"^(?:i'm|i am|im)\s+(?:(?:currently|now|still)\s+)?working\s+(?:as|at|for)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.8,
            r"^(?:i|we)(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:moved|relocated)\s+(?:to|into)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.8,
            r"^(?:i'm|i am|im|i come|we're|we are|we come)\s+(?:originally\s+)?from\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.8,
            r"^i\s+(?:grew up|was born|was raised)\s+(?:in|on|at)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.8,
            r"^(?:i'm|i am|im)\s+(?P<obj>\d{1,3}(?:\s*(?:years old|years of age|yo|y/o))?)$",
            None,
        ),
        en(
            Fact,
            0.8,
            r"^i\s+(?:just\s+)?turned\s+(?P<obj>\d{1,3}\b.*)$",
            None,
        ),
        en(
            Fact,
            0.85,
            r"^(?:i'm|i am|im|we're|we are)\s+(?:(?:a|an|also|now)\s+)?(?P<obj>(?:married|single|divorced|widowed|engaged|pregnant|retired|unemployed|self-employed|freelancer|freelancing|left-handed|right-handed|vegetarian|vegan|pescatarian|lactose intolerant|gluten intolerant|colou?r[- ]?blind|diabetic|deaf|blind|student|introvert|extrovert|night owl|early bird|parent|mom|dad|mother|father)\b.*)$",
            None,
        ),
        en(
            Fact,
            0.75,
            r"^(?:i've|i have)\s+been\s+(?P<obj>.+?)\s+(?:for\s+(?:over\s+|almost\s+|nearly\s+|about\s+|more than\s+|around\s+)?(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|twenty|several|many|a few|few)\s+(?:years?|months?|decades?)|since\s+(?:\d{4}|i was|childhood|college|high school|university|school)).*$",
            None,
        ),
        en(
            Fact,
            0.8,
            r"^(?:i|we)\s+(?:have|own)\s+(?P<obj>(?:type [12] )?(?:diabetes|asthma|celiac disease|coeliac disease|adhd|autism|dyslexia|allergies|high blood pressure|migraines|insomnia|\w+ allergy))\b.*$",
            None,
        ),
        en(
            Fact,
            0.75,
            r"^(?:i|we)(?:\s+have|'ve got|\s+have got|\s+own)\s+(?P<obj>(?:a|an|one|two|three|four|five|six|\d+|several|no)\s+.+)$",
            Some(
                r"^(?:a|an|one|two|\d+|no)?\s*(?:quick\s+|small\s+|few\s+|little\s+|weird\s+|stupid\s+|silly\s+)?(?:question|problem|issue|idea|suggestion|doubt|moment|minute|second|feeling|meeting|call|thought|request|favou?r|bit|lot|good time|great time|nice time|fun|clue|headache|cold|point)s?\b",
            ),
        ),
        en(
            Fact,
            0.75,
            r"^i\s+(?:(?:also|fluently|can|only)\s+)?speak\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.7,
            r"^i\s+(?:studied|study|majored in|graduated from|teach|drive|run|volunteer at|volunteer for|play in)\s+(?P<obj>.+)$",
            None,
        ),
        // Preferences.
        en(
            Preference,
            0.9,
            r"^my\s+(?:(?:all[- ]time|absolute|top|very)\s+)?(?:favou?rite|fave|preferred)\s+(?P<tag>[a-z][a-z' -]{0,30}?)\s+(?:is|are|was|has to be|would be)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Preference,
            0.85,
            r"^(?P<obj>.+?)\s+(?:is|are)\s+(?:definitely\s+|still\s+)?my\s+(?:(?:all[- ]time|absolute)\s+)?(?:favou?rite|fave)\b.*$",
            None,
        ),
        en(
            Preference,
            0.85,
            &format!(r"^(?:i|we)\s+{adv}(?:love|adore)\s+(?P<obj>.+)$"),
            None,
        ),
        en(
            Preference,
            0.85,
            &format!(r"^(?:i|we)\s+{adv}prefer\s+(?P<obj>.+)$"),
            None,
        ),
        en(
            Preference,
            0.8,
            &format!(r"^(?:i|we)\s+{adv}(?:like|enjoy|fancy)\s+(?P<obj>.+)$"),
            None,
        ),
        en(
            Preference,
            0.85,
            &format!(
                r"^(?:i|we)\s+{adv}(?:hate|dislike|detest|loathe|despise|can't stand|cannot stand|can't bear|can't tolerate|cannot tolerate)\s+(?P<obj>.+)$"
            ),
            None,
        ),
        en(
            Preference,
            0.8,
            &format!(
                r"^(?:i|we)\s+(?:really\s+|generally\s+|usually\s+)?(?:don't|do not|dont|never|no longer|can't|cannot)\s+{adv}(?:like|enjoy|eat|drink|love|use|stand|touch)\s+(?P<obj>.+)$"
            ),
            None,
        ),
        en(
            Preference,
            0.8,
            r"^(?:i|we)(?:'ve| have)?\s+(?:never|always)\s+(?:really\s+)?(?:liked|enjoyed|loved|hated|eaten|drunk|touched|cared for)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Preference,
            0.8,
            r"^(?:i'm|i am|im|we're|we are)\s+(?:(?:not|really|also|such|so|quite|definitely|totally|a|an|very|still)\s+)*(?:(?:big|huge|great|massive)\s+)?(?:fan of|into|fond of|crazy about|obsessed with|partial to|keen on|passionate about)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Preference,
            0.7,
            r"^(?:i'd|i would)\s+(?:much\s+)?(?:rather|prefer)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Preference,
            0.7,
            &format!(
                r"^(?:i|we)\s+{adv}(?:use|go with|stick with|stick to|swear by|rely on|code in|program in|work with)\s+(?P<obj>.+)$"
            ),
            None,
        ),
        en(
            Preference,
            0.7,
            r"^(?:i|we)\s+(?:usually|always|often|mostly|normally|generally|only|typically|regularly)\s+(?:eat|drink|listen to|read|watch|play|cook|order|buy|wear|take)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Preference,
            0.7,
            r"^(?:i|we)\s+(?:eat|drink|listen to|read|watch|play|cook)\s+(?P<obj>.+?\b(?:every|each|daily|weekly|most)\b.*)$",
            None,
        ),
        // Plans and status.
        en(
            Status,
            0.75,
            r"^(?:i|we)(?:'m|'re| am| are)?\s+(?:(?:currently|now|still|also|actually|seriously)\s+)?(?:planning|plan|hoping|intending|aiming|intend|hope|aim)\s+(?:to|on)\s+(?P<obj>.+)$",
            Some(EN_TRIVIAL),
        ),
        en(
            Status,
            0.7,
            r"^(?:i'm|i am|im|we're|we are)\s+(?:(?:currently|also|soon|finally|now)\s+)?(?P<obj>(?:moving|relocating|switching|changing jobs|starting|quitting|retiring|getting married|having a baby|leaving|joining|graduating|expecting)\b.*)$",
            None,
        ),
        en(
            Status,
            0.65,
            r"^(?:i'm|i am|im|we're|we are)\s+(?:(?:finally|also|definitely|actually)\s+)?(?:going to|gonna)\s+(?P<obj>.+)$",
            Some(r"^(?:the|a|an|my|your|go\b|need|be\b|have to)"),
        ),
        en(
            Status,
            0.65,
            r"^(?:i'm|i am|im|we're|we are)\s+(?:(?:currently|still|also|now)\s+)?(?:working on|learning|studying|training for|preparing for|looking for|saving (?:up )?for|trying to|applying (?:for|to)|building|writing|renovating|recovering from)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Status,
            0.7,
            r"^(?:i'm|i am|im|we're|we are)\s+(?:currently|now|presently)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Status,
            0.5,
            r"^(?:i'm|i am|im|we're|we are)\s+(?:(?:seriously|also)\s+)?(?:thinking (?:of|about)|considering)\s+(?P<obj>.+)$",
            Some(r"^(?:it|that|this)\b"),
        ),
        en(
            Status,
            0.6,
            r"^(?:i|we)(?:'ll| will)\s+be\s+(?P<obj>\w+\s+\w+.*)$",
            Some(r"^(?:right back|back|fine|ok|okay|there|ready|waiting|late|happy|glad)\b"),
        ),
        en(
            Status,
            0.5,
            r"^(?:i|we)\s+(?:might|may|could)\s+(?:be\s+)?(?P<obj>.+)$",
            None,
        ),
        en(
            Status,
            0.6,
            r"^(?:i've|i have)\s+been\s+(?P<obj>\w+ing\b.*)$",
            None,
        ),
        en(
            Status,
            0.5,
            r"^(?:i|we)\s+(?:really\s+)?(?:want|would like|'d like|wish)\s+to\s+(?P<obj>.+)$",
            None,
        ),
        // Generic facts last.
        en(
            Fact,
            0.75,
            r"^my\s+(?P<tag>wife|husband|partner|spouse|sons?|daughters?|kids?|children|child|baby|mom|mum|mother|dad|father|parents|brother|sister|siblings|family|boyfriend|girlfriend|fianc[ée]e?|dog|cat|pet|grandma|grandmother|grandpa|grandfather|boss|manager|team|company|birthday|budget|salary|rent|job|house|home|apartment|flat|car|address|email|phone number|hometown|goal|doctor|timezone|time zone|native language|mother tongue|major|degree|school|university|office|commute)\b\s*(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.75,
            r"^(?:i'm|i am|im)\s+(?:a|an)\s+(?P<obj>.+)$",
            Some(r"^(?:bit|little|tad|lot|big fan|huge fan|fan)\b"),
        ),
        en(
            Fact,
            0.6,
            r"^(?:i|we)\s+(?:usually|always|normally|often|never|rarely|typically)\s+(?P<obj>.+)$",
            None,
        ),
        en(
            Fact,
            0.6,
            r"^my\s+(?P<tag>[a-z][a-z' -]{1,30}?)\s+(?:is|are|was)\s+(?P<obj>.+)$",
            None,
        ),
    ]
});

/// Subjects of "my X is …" that are small talk, not facts ("my day was great").
static EN_SMALL_TALK_SUBJECT: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)^my\s+(?:day|week|weekend|morning|evening|night|afternoon|trip|lunch|dinner|breakfast|head|stomach|bad|mistake|pleasure|god|goodness|gosh|point|question|answer|guess|bet|turn|internet|wifi|battery|phone battery|computer|screen|mood)\b",
    )
});

// --- Chinese ---------------------------------------------------------------

const ZH_SUBJECT: &str = r"(?:我们|咱们|我)";
const ZH_ADV: &str = r"(?:真的|其实|本来就|一直|一向|向来|从小到大|从小就|从小|打小|平时|平常|一般|通常|特别|非常|很|超级|超|挺|比较|也|都|还|还是|就|确实|最|蛮|相当|十分|实在|可能|也许|大概|好像|或许|应该|可)*";
const ZH_NUM: &str = r"(?:[0-9一二三四五六七八九十两几半]+|好几|十几|几十|很多|好多)";

static ZH_PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    use MemoryKind::*;
    let zh = |kind, confidence, source: &str, reject: Option<&str>| {
        pattern(kind, confidence, source, reject)
    };
    let s = ZH_SUBJECT;
    let adv = ZH_ADV;
    let num = ZH_NUM;
    vec![
        // Rules.
        zh(
            Status,
            0.55,
            r"^(?:以后|今后|从现在开始|从现在起|从今以后|从今天开始|从今天起|往后)[，,\s]*(?P<obj>(?:我|我们|咱们).+)$",
            None,
        ),
        zh(
            Rule,
            0.9,
            r"^(?:请|麻烦|麻烦你|你)?(?:以后|今后|从现在开始|从现在起|从今以后|从今天开始|从今天起|往后)[，,\s]*(?:你|您)?(?P<obj>.+)$",
            None,
        ),
        zh(
            Rule,
            0.85,
            r"^(?:请|你|您)?(?:不要再|别再|不用再|不必再|永远不要|永远别|千万不要再|千万别再|再也不要|再也别|不许再|不准再)(?P<obj>.+)$",
            None,
        ),
        zh(
            Rule,
            0.75,
            r"^(?:请|你|您)?(?:一律|始终|每次都|务必|都要|必须|总是要|记得每次)(?P<obj>.+)$",
            None,
        ),
        zh(
            Rule,
            0.7,
            r"^(?:[^请]{0,12}?)请(?:你|您)?(?:以后|都|一律|始终|务必|统一|尽量)?(?P<obj>(?:用|使用|以|采用|不要|别|保持|按照|按|只用|回复|回答|写成|输出|称呼我|叫我).+)$",
            Some(r"这个|这次|这段|这篇|这份|这条|本次|刚才|上面|下面|一下|帮我"),
        ),
        zh(
            Rule,
            0.7,
            r"^(?:回复|回答|答案|报告|总结|输出|代码|代码注释|注释|邮件|消息|文档)(?:都|请|尽量|一律|要|最好|必须|统一|务必)(?P<obj>.+)$",
            Some(r"这个|这次|这段|这篇|这份|这条|本次|刚才|上面|下面|一下"),
        ),
        zh(
            Rule,
            0.7,
            r"^(?:请|以后)?(?:称呼我|称我为|称我|喊我)(?P<obj>.+)$",
            None,
        ),
        // Decisions.
        zh(
            Decision,
            0.85,
            &format!(
                r"^{s}(?:最后|最终|已经|刚刚|刚|终于|还是|一致|商量后|讨论后|商量了一下|考虑了一下|昨天|今天)*(?:决定了|决定|定了|定下来了|定下来|拍板)[：:，,]?(?P<obj>.+)$"
            ),
            None,
        ),
        zh(
            Decision,
            0.8,
            &format!(
                r"^{s}(?:最后|最终|已经|终于|还是|一致)*(?:选了|选择了|挑了|选定了|定下了|采用了|选用了|敲定了|确定了|确定用|确定要|选中了|决议)(?P<obj>.+)$"
            ),
            None,
        ),
        zh(
            Decision,
            0.75,
            r"^(?:那|那么|好|好吧|行|那好)?(?:我们|咱们)?(?:就|还是)(?:用|选|定|按|采用|去)(?P<obj>.+?)吧$",
            None,
        ),
        // Named facts.
        zh(
            Fact,
            0.9,
            r"^(?:我|我们)(?:的)?(?:名字|姓名)(?:是|叫)(?P<obj>.+)$",
            None,
        ),
        zh(
            Fact,
            0.9,
            &format!(
                r"^{s}(?:对|有)?(?P<obj>[^，,]+?)(?:很|有点|非常|严重|特别|比较|会)?过敏(?:症)?.*$"
            ),
            None,
        ),
        zh(Fact, 0.85, r"^我叫(?P<obj>.+)$", None),
        zh(
            Fact,
            0.85,
            &format!(
                r"^{s}(?:家|一家)?(?:现在|目前|一直|常年|平时|也)?(?:住在|定居在|生活在|居住在|住|定居|安家在|安家)(?P<obj>.+)$"
            ),
            Some(r"^(?:了|过|院|酒店|宾馆|旅馆|一晚|几天|一下)"),
        ),
        zh(
            Fact,
            0.85,
            r"^我(?:们)?(?:现在|目前|一直|已经)?在(?P<obj>.+?)(?:工作|上班|任职|实习|上学|读书|读大学|读研|读博|念书|教书)(?:.*)$",
            None,
        ),
        zh(
            Fact,
            0.85,
            r"^我(?:的)?(?P<tag>工作|职业|专业|身份)是(?P<obj>.+)$",
            None,
        ),
        zh(
            Fact,
            0.8,
            r"^我(?:现在|目前)?(?:从事|做|干)(?P<obj>.+?)(?:工作|行业|这行|相关的工作)$",
            None,
        ),
        zh(
            Fact,
            0.8,
            r"^(?:我|我们)(?:来自|是从)(?P<obj>.+?)(?:来的)?$",
            None,
        ),
        zh(
            Fact,
            0.85,
            r"^我(?:的)?(?P<tag>老家|家乡|籍贯)(?:是|在)(?P<obj>.+)$",
            None,
        ),
        zh(
            Fact,
            0.85,
            r"^我(?:今年|已经|都|现在)?(?P<obj>[0-9一二三四五六七八九十两]+多?岁)(?:了)?.*$",
            None,
        ),
        // Preferences.
        zh(
            Preference,
            0.9,
            r"^我(?:的)?最(?:喜欢|爱)的(?P<tag>[^是]{1,10}?)是(?P<obj>.+)$",
            None,
        ),
        zh(
            Preference,
            0.85,
            r"^(?P<obj>.+?)是我(?:的)?最(?:喜欢|爱)的.*$",
            None,
        ),
        zh(
            Preference,
            0.7,
            &format!(r"^{s}{adv}(?:不太|不怎么|不是很|不大)(?:喜欢|爱|习惯|能接受)(?P<obj>.+)$"),
            None,
        ),
        zh(
            Preference,
            0.85,
            &format!(
                r"^{s}{adv}(?:讨厌|不喜欢|不爱|受不了|厌恶|反感|接受不了|不能接受|害怕|怕|忍不了|不感冒)(?P<obj>.+)$"
            ),
            None,
        ),
        zh(
            Preference,
            0.7,
            &format!(
                r"^{s}{adv}(?:不怎么|不太|不大|很少|几乎不|从不|从来不)(?:喝|吃|看|玩|用|碰|听)(?P<obj>.+)$"
            ),
            None,
        ),
        zh(
            Preference,
            0.85,
            &format!(
                r"^{s}{adv}(?:不吃|不喝|不碰|戒了|不沾|吃不了|喝不了|不能吃|不能喝|忌口)(?P<obj>.+)$"
            ),
            None,
        ),
        zh(
            Preference,
            0.8,
            &format!(
                r"^{s}{adv}(?:更喜欢|更爱|偏好|倾向于|倾向|宁愿|宁可|习惯了|习惯)(?P<obj>.+)$"
            ),
            None,
        ),
        zh(
            Preference,
            0.85,
            &format!(
                r"^{s}{adv}(?:喜欢|爱上了|爱|热爱|偏爱|钟爱|喜爱|迷上了|痴迷于|痴迷)(?P<obj>.+)$"
            ),
            None,
        ),
        zh(
            Preference,
            0.8,
            &format!(
                r"^{s}{adv}对(?P<obj>.+?)(?:很|特别|非常|比较|超级|挺)?(?:感兴趣|有兴趣|着迷|上瘾)"
            ),
            None,
        ),
        zh(
            Preference,
            0.65,
            &format!(r"^{s}{adv}(?:用|使用)(?P<obj>.+)$"),
            Some(r"一下|这个|那个"),
        ),
        // Plans and status.
        zh(
            Status,
            0.75,
            &format!(
                r"^{s}(?:最近|目前|现在|正|还|已经|今年|明年)*(?:打算|计划|准备|规划|决心)(?P<obj>.+)$"
            ),
            None,
        ),
        zh(
            Status,
            0.7,
            &format!(
                r"^{s}(?:下个月|下周|明年|年底|过几天|马上|很快|即将|快要|快|就要|可能|也许|大概|应该|或许)*(?:要|会|将|将要)?(?P<obj>(?:搬到|搬去|搬家|换工作|辞职|结婚|毕业|出国|退休|入职|跳槽|离职|生孩子|当爸爸|当妈妈|去\S{{1,8}}(?:工作|上学|读书|留学|定居)).*)$"
            ),
            None,
        ),
        zh(
            Status,
            0.7,
            &format!(
                r"^{s}(?:最近|目前|现在|还|也)*(?:正在|在)(?P<obj>(?:学|学习|练|练习|准备|找|写|做|研究|备考|考|减肥|健身|装修|读|攒钱|存钱|备孕|怀孕|养|带|开发|创业|筹备|申请|治疗|康复|戒).*)$"
            ),
            None,
        ),
        zh(
            Status,
            0.6,
            &format!(r"^{s}(?:最近|目前|现在)*正在(?P<obj>.+)$"),
            Some(r"^(?:吃|睡|洗澡|上厕所|看电视|玩|走路|开车|开会|路上|回家|打字|忙|想)"),
        ),
        zh(
            Status,
            0.5,
            &format!(r"^{s}(?:在|正在|也在)?(?:考虑|琢磨|想着)(?P<obj>.+)$"),
            None,
        ),
        zh(
            Status,
            0.5,
            &format!(
                r"^{s}(?:很)?(?:想|想要|希望|梦想)(?:以后|将来|明年|今年)?(?P<obj>(?:学|去|成为|当|考|买|换|搬|开|拿到|申请).+)$"
            ),
            Some(r"^(?:去(?:厕所|洗手间|睡|吃|喝))"),
        ),
        // Generic facts last.
        zh(
            Fact,
            0.75,
            &format!(r"^(?:我|我们)(?:已经)?(?P<obj>.+?){num}多?年多?了$"),
            None,
        ),
        zh(
            Fact,
            0.75,
            &format!(
                r"^我(?:已经)?(?:学|练|做|干|用|弹|教|住|养|写|开)了?{num}多?年多?(?:的)?(?P<obj>.+)$"
            ),
            None,
        ),
        zh(
            Fact,
            0.75,
            r"^(?:我|我们)(?:家)?(?:有|养了|养着|养)(?P<obj>(?:[一两二三四五六七八九十几0-9]+)?(?:个|只|条|辆|套|位|名|台|头|匹|本|家)\S+)$",
            Some(
                r"^(?:一)?(?:个|点|些|下)?(?:问题|事|想法|疑问|建议|请求|小问题|好消息|坏消息|主意|会)",
            ),
        ),
        zh(
            Fact,
            0.75,
            r"^我(?:会说|能说|会讲|能讲|会)(?P<obj>.+?(?:语|话|文))$",
            None,
        ),
        zh(
            Fact,
            0.75,
            r"^我(?:的)?(?P<tag>女儿|儿子|孩子|小孩|宝宝|老婆|妻子|老公|丈夫|先生|太太|爱人|男朋友|女朋友|男友|女友|对象|未婚夫|未婚妻|妈妈|母亲|爸爸|父亲|爸妈|父母|哥哥|姐姐|弟弟|妹妹|家人|家里|狗狗|猫咪|狗|猫|宠物|爷爷|奶奶|外公|外婆|姥姥|姥爷|老板|领导|上司|公司|团队|生日|预算|工资|收入|房租|房子|车|家|邮箱|电话|手机号|地址|目标|妈|爸)(?P<obj>.+)$",
            None,
        ),
        zh(
            Fact,
            0.75,
            r"^我(?:是|是个|是一个|是一名|是一位|现在是|目前是)(?P<obj>.+)$",
            Some(
                r"^(?:说|不是|想|觉得|在|因为|真的|来|问|开玩笑|随便|故意|不|为了|被|怎么|刚|今天|昨天|认真|有点|太|挺|很|这么|那么|跟|和|从)",
            ),
        ),
        zh(
            Preference,
            0.65,
            r"^我(?:周末|平时|晚上|早上|每天|每周|每个月|每晚|每年)?(?:一般|通常|经常|常常|总是|都|会)+(?:去)?(?P<obj>(?:吃|喝|看|听|玩|打|踢|用|穿|读|逛|跑|游|骑|爬).+)$",
            None,
        ),
        zh(
            Fact,
            0.65,
            r"^我(?:周末|平时|晚上|早上)?(?:每天|每周|每个月|每晚|每天早上|每天晚上|每年|经常|通常|一般)(?P<obj>.+)$",
            None,
        ),
        zh(
            Fact,
            0.65,
            r"^我的(?P<tag>[^的是]{1,6})是(?P<obj>.+)$",
            None,
        ),
    ]
});

pub(crate) fn patterns(lang: Lang) -> &'static [Pattern] {
    match lang {
        Lang::En => &EN_PATTERNS,
        Lang::Zh => &ZH_PATTERNS,
    }
}

// --- Filters ----------------------------------------------------------------

/// Leading interjections and discourse fillers, stripped before matching
/// ("Oh, and btw I live in Paris", "嗯，对了，我住在北京").
static EN_FILLER: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)^(?:(?:ok(?:ay)?|oh|ah|well|so|hey|yeah|yes|also|btw|by the way|anyway|anyways|and|but|plus|actually|honestly|basically|fyi|um+|uh+|hmm+|lol|haha\w*|oh and|oh by the way|just so you know|for the record|fwiw)\b[\s,!.:-]*)+",
    )
});
static ZH_FILLER: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"^(?:(?:嗯+|哦+|噢|喔|啊|诶|欸|对了|另外|还有|而且|并且|然后|其实|话说|顺便说一下|顺便|说起来|好吧|好的|哈+|呵+|但是|不过|所以|就是)[\s，,、：:！!。]*)+",
    )
});

/// Whole clauses that are greetings, acknowledgements, laughter, thanks or
/// small talk.
static EN_NOISE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)^(?:hi|hello|hey|yo|hiya|howdy|greetings|good (?:morning|afternoon|evening|night)|morning|bye|goodbye|bye bye|see you(?: later| soon| tomorrow)?|see ya|later|cya|take care|thanks?(?: (?:a lot|so much|again|very much|a bunch|anyway))?|thank you(?: (?:so much|very much|again))?|thx|ty|cheers|ok(?:ay)?|k|sure|yes|yeah|yep|yup|no|nope|nah|cool|nice|great|awesome|perfect|got it|sounds good|fine|alright|all right|right|lol|lmao|rofl|haha\w*|hehe\w*|wow|oh|oops|hmm+|uh+|um+|well|no problem|np|you're welcome|welcome|good|wonderful|amazing|sorry|my bad|never mind|nevermind|nvm|let me think(?: about it)?|i'll think about it|i see|makes sense|interesting|that's (?:funny|great|cool|nice|interesting|hilarious|awesome|amazing|fine|ok|okay|good|true|right|so funny|too funny)|so funny|too funny|how funny|fair enough|of course|exactly|indeed|true|me too|same|same here|you too|good job|well done|nice one|no worries|don't worry|whatever|good point|i agree|agreed|deal)(?:\s+(?:there|everyone|all|guys|man|buddy|friend|mate|again|then|lol|haha|!+))*$",
    )
});
static ZH_NOISE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"^(?:你好|您好|嗨|哈喽|早|早上好|中午好|下午好|晚上好|晚安|早安|谢谢|谢谢你|谢谢您|多谢|感谢|好的|好吧|好|行|可以|没问题|收到|明白|明白了|知道了|懂了|了解|拜拜|再见|回头见|不客气|没事|没关系|太好了|太棒了|笑死|笑死我了|太好笑了|好笑|有意思|有趣|厉害|牛|真棒|不错|对|对的|是的|是啊|嗯嗯|辛苦了|麻烦了|稍等|等一下|我再想想|让我想想|再说吧|算了|天气不错|今天天气不错|今天天气真好|天气真好|原来如此|这样啊|是吗|真的吗|好吧好吧|加油|哈+|呵+|嘿+|嘻+|嗯+|哦+)(?:呀|啊|哈|哦|了|啦|吧|呢|嘛|哈哈|！|!)*$",
    )
});

/// Hedges said before the statement ("I think I might…", "我觉得…").
static EN_HEDGE_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)^(?:(?:i think|i guess|i suppose|i believe|i feel like|i'd say|maybe|perhaps|probably|possibly|i'm not sure but|not sure but|if i remember correctly|iirc)\b[\s,]*(?:that\s+)?)+",
    )
});
static ZH_HEDGE_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"^(?:我觉得|我感觉|我猜|我估计|可能|也许|大概|好像|或许|估计|说不定|应该)[，,\s]*")
});
static EN_HEDGE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)\b(?:might|maybe|perhaps|probably|possibly|kind of|sort of|kinda|sorta|i guess|i think|not sure|somewhat|a little|not really)\b",
    )
});
static ZH_HEDGE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"可能|也许|大概|好像|或许|说不定|似乎|不太确定|不一定|有点"));
/// Words that make an explicit statement stronger.
static EN_INTENSIFIER: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)\b(?:really|absolutely|definitely|totally|so much|a lot|truly|seriously|always|never ever|strictly|severely)\b",
    )
});
static ZH_INTENSIFIER: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"真的|特别|非常|超级|十分|相当|一直|从来|千万|最(?:喜欢|爱|讨厌|怕)|超(?:喜欢|爱|讨厌)|严重",
    )
});

/// One-off experiences: a fact or preference tied to today is not durable
/// ("我今天去公园玩得很开心", "I loved the movie last night").
static EN_EXPERIENCE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)\b(?:today|yesterday|tonight|this (?:morning|afternoon|evening|weekend)|last (?:night|weekend)|just now|right now|earlier today|a moment ago|the other day)\b",
    )
});
static ZH_EXPERIENCE: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"今天|昨天|前天|刚才|刚刚|今晚|今早|昨晚|这会儿|此刻|这周末|上周末|今儿")
});

/// Questions: a question mark, an English question opener, or a Chinese
/// interrogative.
static EN_QUESTION_START: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)^(?:what|how|why|when|where|who|whom|which|whose|(?:do|does|did|can|could|would|will|should|is|are|am|was|were|have|has|may|shall|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|couldn't|shouldn't)\s+(?:you|i|we|it|this|that|there|he|she|they|my|your|the|anyone|somebody|someone))\b",
    )
});
static ZH_QUESTION: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?:什么|怎么|为什么|为啥|哪里|哪儿|哪个|哪些|哪家|多少|几点|是不是|能不能|可不可以|要不要|有没有|好不好|行不行|对不对|会不会|咋)|(?:吗|么|呢|嘛)$",
    )
});
/// A question that is really a standing request ("Could you always answer in
/// English from now on?").
static EN_STANDING_REQUEST: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)^(?:can|could|would|will)\s+you\b.*\b(?:from now on|going forward|in (?:the )?future|always|never)\b",
    )
});
static ZH_STANDING_REQUEST: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"^(?:你|您)?(?:能不能|可不可以|能|可以)(?:以后|今后|从现在开始|每次都|一直)")
});

/// Objects that only make sense in the conversation ("I love you", "I like
/// that", "我喜欢这个").
static EN_DEICTIC_OBJECT: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)^(?:it|that|this|these|those|them|you|him|her|yours|your (?:idea|suggestion|answer|plan|way)|one|so|too|so much|a lot|very much|the idea|the plan|the suggestion|what you|how you|doing (?:it|that|this)|it a lot|that one|this one)(?:\s+(?:too|so much|a lot|very much|lol|haha|one|idea|suggestion|plan|answer))*$|^(?:this|that|these|those|your|you|how you|what you|the way you)\b",
    )
});
static ZH_DEICTIC_OBJECT: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^(?:这|那|它|你|您|他|她|死)"));
static ZH_PARTICLES_ONLY: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^[了的吧啊呀呢哦啦嘛哈着过！!。～~\s]*$"));
/// Who the clause is about when the subject must be carried over.
static EN_SUBJECT_START: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)^(?:i|i'm|i've|i'd|i'll|im|we|we're|we've|we'll|my|our|you|your|let's|please|he|she|they|it|it's|there)\b",
    )
});
static ZH_SUBJECT_START: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^(?:我|你|您|请|咱们|他|她|它|这|那|以后|今后)"));
/// An elaboration that belongs to the clause before it.
pub(crate) fn starts_with_subject(lang: Lang, clause: &str) -> bool {
    match lang {
        Lang::En => EN_SUBJECT_START.is_match(clause),
        Lang::Zh => ZH_SUBJECT_START.is_match(clause),
    }
}

/// Short lead-ins that belong to the clause after them ("From now on, …",
/// "以后，…", "Remember that …").
static EN_LEAD_IN: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?i)^(?:please\s+)?(?:from now on|going forward|moving forward|in (?:the )?future|henceforth|from today on|starting (?:today|now)|for future reference|remember|please remember|note|please note|just so you know|for the record|fyi)$",
    )
});
static ZH_LEAD_IN: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"^(?:请)?(?:以后|今后|从现在开始|从现在起|从今以后|从今天开始|从今天起|往后|记住|记得|请记住|请记得|你记住|你记一下|记一下|备注|顺便说一下)$",
    )
});
/// "Remember that …" / "记住…": the rest is matched; the lead-in raises
/// confidence a little.
static EN_MEMO: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"(?i)^(?:please\s+)?(?:remember|note|keep in mind|don't forget)\s+(?:that\s+)?")
});
static ZH_MEMO: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^(?:请)?(?:你)?(?:记住|记得|记一下|别忘了|不要忘了)[，,：:\s]*"));

pub(crate) fn strip_filler(lang: Lang, clause: &str) -> &str {
    let filler = match lang {
        Lang::En => &*EN_FILLER,
        Lang::Zh => &*ZH_FILLER,
    };
    let end = filler.find(clause).map_or(0, |m| m.end());
    trim_end_punctuation(&clause[end..])
}

pub(crate) fn is_noise(lang: Lang, clause: &str) -> bool {
    let clause = trim_end_punctuation(clause);
    if clause.is_empty() {
        return true;
    }
    match lang {
        Lang::En => EN_NOISE.is_match(clause),
        Lang::Zh => ZH_NOISE.is_match(clause),
    }
}

pub(crate) fn is_lead_in(lang: Lang, clause: &str) -> bool {
    let clause = trim_end_punctuation(clause);
    match lang {
        Lang::En => EN_LEAD_IN.is_match(clause),
        Lang::Zh => ZH_LEAD_IN.is_match(clause),
    }
}

/// The clause without its "remember that" / "记住" lead, if it had one.
pub(crate) fn strip_memo(lang: Lang, clause: &str) -> Option<&str> {
    let memo = match lang {
        Lang::En => &*EN_MEMO,
        Lang::Zh => &*ZH_MEMO,
    };
    let found = memo.find(clause)?;
    let rest = &clause[found.end()..];
    (!rest.trim().is_empty()).then_some(rest)
}

/// `raw` keeps its terminator, so a trailing "?" is still visible here.
pub(crate) fn is_question(lang: Lang, raw: &str) -> bool {
    let trimmed = raw.trim();
    if trimmed.ends_with('?') || trimmed.ends_with('？') {
        return true;
    }
    let text = trim_end_punctuation(trimmed);
    match lang {
        Lang::En => EN_QUESTION_START.is_match(text),
        // "不怎么喝" (hardly drink) and "什么都吃" (eat anything) hold an
        // interrogative word without asking anything.
        Lang::Zh => ZH_QUESTION.is_match(&ZH_NOT_A_QUESTION.replace_all(text, "")),
    }
}

static ZH_NOT_A_QUESTION: LazyLock<Regex> =
    LazyLock::new(|| compile(r"不怎么|没什么|什么都|怎么都|多少有点"));

pub(crate) fn is_standing_request(lang: Lang, clause: &str) -> bool {
    match lang {
        Lang::En => EN_STANDING_REQUEST.is_match(clause),
        Lang::Zh => ZH_STANDING_REQUEST.is_match(clause),
    }
}

/// The clause without a leading hedge, and whether it was hedged anywhere.
pub(crate) fn strip_hedge(lang: Lang, clause: &str) -> (&str, bool) {
    let (prefix, body) = match lang {
        Lang::En => (&*EN_HEDGE_PREFIX, &*EN_HEDGE),
        Lang::Zh => (&*ZH_HEDGE_PREFIX, &*ZH_HEDGE),
    };
    let (rest, prefixed) = match prefix.find(clause) {
        Some(found) if found.end() < clause.len() => (&clause[found.end()..], true),
        _ => (clause, false),
    };
    (rest, prefixed || body.is_match(rest))
}

pub(crate) fn is_intensified(lang: Lang, clause: &str) -> bool {
    match lang {
        Lang::En => EN_INTENSIFIER.is_match(clause),
        Lang::Zh => ZH_INTENSIFIER.is_match(clause),
    }
}

pub(crate) fn is_experience(lang: Lang, clause: &str) -> bool {
    match lang {
        Lang::En => EN_EXPERIENCE.is_match(clause),
        Lang::Zh => ZH_EXPERIENCE.is_match(clause),
    }
}

fn is_deictic(lang: Lang, object: &str) -> bool {
    let object = trim_end_punctuation(object);
    match lang {
        Lang::En => EN_DEICTIC_OBJECT.is_match(object),
        Lang::Zh => ZH_DEICTIC_OBJECT.is_match(object) || ZH_PARTICLES_ONLY.is_match(object),
    }
}

fn is_trivial_activity(lang: Lang, object: &str) -> bool {
    static EN: LazyLock<Regex> = LazyLock::new(|| compile(&format!("(?i){EN_TRIVIAL}")));
    static ZH: LazyLock<Regex> = LazyLock::new(|| {
        compile(r"^(?:吃饭|睡觉|睡|洗澡|上厕所|去厕所|看电视|休息|回家|出门|喝水|打游戏|玩游戏)")
    });
    match lang {
        Lang::En => EN.is_match(object),
        Lang::Zh => ZH.is_match(object),
    }
}

/// The first pattern of the table that matches `clause` and survives the
/// filters (deictic objects, one-off experiences, trivial plans).
pub(crate) fn match_clause(lang: Lang, clause: &str) -> Option<PatternMatch> {
    if lang == Lang::En && EN_SMALL_TALK_SUBJECT.is_match(clause) {
        return None;
    }
    let experience = is_experience(lang, clause);
    for pattern in patterns(lang) {
        // Most clauses match no pattern: `is_match` says so without the
        // capture slots `captures` allocates and fills on every try.
        if !pattern.regex.is_match(clause) {
            continue;
        }
        let Some(captures) = pattern.regex.captures(clause) else {
            continue;
        };
        let object = captures
            .name("obj")
            .map(|m| trim_end_punctuation(m.as_str()).to_owned());
        let tag = captures.name("tag").map(|m| m.as_str().trim().to_owned());
        if let Some(object) = &object {
            if object.is_empty() || is_deictic(lang, object) {
                continue;
            }
            if pattern.reject.as_ref().is_some_and(|r| r.is_match(object)) {
                continue;
            }
        }
        let mut confidence = pattern.confidence;
        match pattern.kind {
            // A fact or a taste told about today is an experience, not a
            // durable memory.
            MemoryKind::Fact | MemoryKind::Preference if experience => return None,
            MemoryKind::Status => {
                if object
                    .as_deref()
                    .is_some_and(|o| is_trivial_activity(lang, o))
                {
                    return None;
                }
                if experience {
                    confidence -= 0.2;
                }
            }
            _ => {}
        }
        return Some(PatternMatch {
            kind: pattern.kind,
            confidence,
            object,
            tag,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        assert!(patterns(Lang::En).len() > 40);
        assert!(patterns(Lang::Zh).len() > 30);
    }

    #[test]
    fn the_first_matching_pattern_wins() {
        let found = match_clause(Lang::En, "I'm a big fan of jazz").unwrap();
        assert_eq!(found.kind, MemoryKind::Preference);
        let found = match_clause(Lang::Zh, "我对花生过敏").unwrap();
        assert_eq!(found.kind, MemoryKind::Fact);
        assert_eq!(found.object.as_deref(), Some("花生"));
    }
}
